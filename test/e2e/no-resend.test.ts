/**
 * A --no-stream request the provider accepted (HTTP 200 headers arrived) is never sent again by cachet, whatever
 * happens to its body: the whole answer was generated, and may be billed, before it left, so a retry could pay twice
 * for one turn. A stream that fails before its first content is retried cleanly, each attempt metered (CASES.md
 * case 30), and so are 429/5xx and a connection reset, as the README's `--retries` says. Each case runs on every wire
 * (and the OpenAI-compatible family, DeepSeek) against an emulator in its own process, whose request log says how
 * many requests reached it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";
import { against, exportSession, startEmulatorProcess, type EmulatorProcess } from "./session-kit.ts";

/** One model per adapter: Anthropic, OpenAI chat, OpenAI responses, Gemini, and the OpenAI-compatible family. */
const MODELS = ["anthropic/claude-sonnet-4-6", "openai/gpt-5", "openai-responses/gpt-5", "google/gemini-2.5-flash", "deepseek/deepseek-chat"];

/** Emulators by fault (CACHET_EMULATOR_FAULT of the emulator process: every request gets it). */
const emulators = new Map<string, EmulatorProcess>();
const home = freshHome();

beforeAll(async () => {
  for (const fault of ["cut", "error-before", "500", "429", "reset"]) emulators.set(fault, await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: fault }));
});

afterAll(() => {
  for (const emulator of emulators.values()) emulator.stop();
  cleanHomes();
});

/** Runs one turn of `model` against the emulator serving `fault`; returns the run and how many requests reached it. */
async function turn(fault: string, model: string, flags: string[]): Promise<{ code: number; stdout: string; lines: string[]; reached: number }> {
  const emulator = emulators.get(fault)!;
  const before = (await emulator.received()).length;
  const target = against(emulator, model);
  const r = await cachet([...target.args, "-m", model, ...flags, "hi"], { home, env: target.env });
  const reached = (await emulator.received()).length - before;
  return { code: r.code, stdout: r.stdout, lines: r.stderr.split("\n").filter((l) => l.trim() !== ""), reached };
}

const ACCEPTED = [{ fault: "cut", flags: ["--no-stream"], what: "the response body was cut or unreadable after HTTP 200" }];

describe("a request answered with HTTP 200 is sent once: exit 4, one line saying why it was not resent, one ledger row", () => {
  for (const c of ACCEPTED) {
    for (const model of MODELS) {
      test(`${c.fault} ${c.flags.join(" ")} ${model}`, async () => {
        const provider = model.split("/")[0]!;
        const name = `ns-${c.fault}-${provider}`;
        const r = await turn(c.fault, model, ["--session", name, ...c.flags]);
        expect(r.reached).toBe(1);
        expect(r.code).toBe(4);
        expect(r.stdout).toBe("");
        const { session, requests, messages } = await exportSession(home, name);
        const [message, hint, ...rest] = r.lines;
        expect(rest).toEqual([]);
        expect(message).toStartWith(`cachet: ${provider}: ${c.what} (`);
        expect(message).toEndWith("); not resent, as the provider may have billed it");
        // Nothing streamed: a parser's error inside a "stream failed" would not say what happened.
        expect(message).not.toContain("stream failed");
        expect(hint).toBe(
          `  hint: \`cachet cost ${session.id}\` shows its ledger row (status error, cost unknown); the prompt was not kept in the session (no answer came): run the same command again to resend it`,
        );
        // The one attempt has its row, saying what happened; its cost is not $0 (it may have been billed).
        expect(requests).toHaveLength(1);
        expect(requests[0]).toMatchObject({ status: "error", messageId: null });
        expect(requests[0]!.error).toBe(message!.slice("cachet: ".length));
        expect(requests[0]!.costUsd).not.toBe(0);
        expect(messages).toEqual([]);
        // The command the hint names shows that row.
        const cost = await cachet(["cost", session.id], { home });
        expect(cost.code).toBe(0);
        expect(cost.stdout).toContain(requests[0]!.id);
        expect(cost.stdout.split("\n").find((l) => l.startsWith(requests[0]!.id))).toEndWith("cost unknown  in ? · read ? · write ? · out ?  (status error)");
      });
    }
  }

  test("under --no-store the hint names no ledger, only how to resend", async () => {
    const r = await turn("cut", "anthropic/claude-sonnet-4-6", ["--no-store", "--no-stream"]);
    expect(r.reached).toBe(1);
    expect(r.code).toBe(4);
    expect(r.lines).toHaveLength(2);
    expect(r.lines[0]).toStartWith("cachet: anthropic: the response body was cut or unreadable after HTTP 200 (");
    expect(r.lines[1]).toBe("  hint: the prompt was not kept in the session (no answer came): run the same command again to resend it");
  });
});

describe("what the README's --retries covers is still retried: 429, 500, a connection reset, a stream failed before any content", () => {
  for (const fault of ["429", "500", "reset", "error-before"]) {
    for (const model of MODELS) {
      test(`${fault} ${model} --retries 1: two requests, one notice, exit 4`, async () => {
        const r = await turn(fault, model, ["--retries", "1", "--no-store"]);
        expect(r.reached).toBe(2);
        expect(r.code).toBe(4);
        expect(r.lines.filter((l) => l.includes("retrying in"))).toHaveLength(1);
        expect(r.lines.filter((l) => l.startsWith("cachet: "))).toHaveLength(1);
        expect(r.lines.join("\n")).not.toContain("not resent");
      });
    }
  }
});
