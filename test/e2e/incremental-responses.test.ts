/**
 * Incremental OpenAI Responses requests through the binary (issue 18): with
 * `incremental = true` for openai-responses, every turn after the first sends
 * only its new input with `previous_response_id`, and gets the same answers,
 * usage and cost as the same session sent whole; when the provider has
 * forgotten the previous response (the documented 400), the turn is resent
 * whole and the session goes on.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanHomes, freshHome } from "./harness.ts";
import { LARGE_SYSTEM, against, exportSession, ok, startEmulatorProcess, type EmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const MODEL = "openai-responses/gpt-4.1";
const TURNS = 20;
// A fixed emulated clock per batch of 10 turns (both emulators answer the same request with the same bytes), two
// minutes apart: more requests than OpenAI's per-minute rate for one prefix and key would overflow to other machines.
const clock = (batch: number) => ({ CACHET_EMULATOR_CLOCK_MS: String(Date.UTC(2026, 0, 1) + batch * 120_000) });

const question = (i: number) => `Question ${i + 1}: what does rule ${i * 3 + 1} say about item ${i * 7}?`;

describe("OpenAI Responses: incremental requests (previous_response_id)", () => {
  const incremental = { home: freshHome(), emulator: undefined as EmulatorProcess | undefined };
  const whole = { home: freshHome(), emulator: undefined as EmulatorProcess | undefined };
  writeFileSync(join(incremental.home, "config.toml"), '[providers.openai-responses]\nincremental = true\n');

  async function turn(side: typeof incremental, i: number, quiet = true): Promise<{ stdout: string; stderr: string }> {
    const target = against(side.emulator!, MODEL);
    const first = i === 0 ? ["-m", MODEL, "--system", LARGE_SYSTEM] : ["-c"];
    return ok([...first, ...target.args, ...(quiet ? ["-q"] : []), question(i)], { home: side.home, env: target.env });
  }

  test(
    `a ${TURNS}-turn session sends only the new input after turn 1, with the same answers and ledger as the full form`,
    async () => {
      const sent: Raw[] = [];
      const full: Raw[] = [];
      // Each emulator keeps its stored responses and cache in its home's state file across the batches.
      for (let batch = 0; batch < TURNS / 10; batch++) {
        incremental.emulator = await startEmulatorProcess(incremental.home, clock(batch));
        whole.emulator = await startEmulatorProcess(whole.home, clock(batch));
        try {
          for (let i = batch * 10; i < (batch + 1) * 10; i++) await Promise.all([turn(incremental, i), turn(whole, i)]);
          sent.push(...(await incremental.emulator.bodies()));
          full.push(...(await whole.emulator.bodies()));
        } finally {
          incremental.emulator.stop();
          whole.emulator.stop();
        }
      }
      expect(sent).toHaveLength(TURNS);
      expect(full).toHaveLength(TURNS);
      const inc = await exportSession(incremental.home);
      const ref = await exportSession(whole.home);

      // The wire: turn 1 whole; every later turn names the previous response and sends only the new user message,
      // with everything else (model, tools, options) as the whole request has it, and the session's own cache key.
      const keyed = (body: Raw, key: string) => {
        expect(body.prompt_cache_key).toBe(key);
        const { prompt_cache_key: _, ...rest } = body;
        return rest;
      };
      expect(keyed(sent[0]!, inc.session.affinityKey)).toEqual(keyed(full[0]!, ref.session.affinityKey));
      expect(sent[0]!.previous_response_id).toBeUndefined();
      for (let n = 1; n < TURNS; n++) {
        const { input, previous_response_id, ...rest } = keyed(sent[n]!, inc.session.affinityKey);
        const { input: wholeInput, ...wholeRest } = keyed(full[n]!, ref.session.affinityKey);
        expect(previous_response_id).toBe(inc.requests[n - 1]!.providerRequestId);
        expect(input).toEqual([{ type: "message", role: "user", content: [{ type: "input_text", text: question(n) }] }]);
        expect(rest).toEqual(wholeRest);
        expect(wholeInput.length).toBe(2 * n + 2);
        expect(wholeInput.at(-1)).toEqual(input[0]);
      }

      // The same answers, and the same ledger: usage, cost, cacheable maximum; only the recorded form differs.
      const answers = (messages: Raw[]) => messages.filter((m) => m.role === "assistant").map((m) => m.content);
      expect(answers(inc.messages)).toHaveLength(TURNS);
      expect(answers(inc.messages)).toEqual(answers(ref.messages));
      const figures = (r: Raw) => ({ usage: r.usage, costUsd: r.costUsd, cacheableMax: r.cacheableMax, status: r.status, chain: r.chain.map((l: Raw) => l.prefix) });
      expect(inc.requests.map(figures)).toEqual(ref.requests.map(figures));
      // The stored conversation is read from the cache: every later request reads the long system prompt and more.
      expect(inc.requests.slice(1).filter((r) => !(r.usage.cacheRead > 2_000))).toEqual([]);
      expect(inc.requests.map((r) => r.requestForm)).toEqual(["full", ...Array(TURNS - 1).fill("incremental")]);
      expect(ref.requests.map((r) => r.requestForm)).toEqual(Array(TURNS).fill("full"));

      // `cachet cost` names the incremental requests.
      const cost = (await ok(["cost"], { home: incremental.home })).stdout;
      expect(cost.split("\n").filter((line) => line.endsWith("(incremental)"))).toHaveLength(TURNS - 1);
    },
    240_000,
  );

  test(
    "when the provider forgot the previous response, the turn is resent whole (one notice), and the next one is incremental again",
    async () => {
      incremental.emulator = await startEmulatorProcess(incremental.home, clock(TURNS / 10));
      try {
        const forgot = await fetch(`${incremental.emulator!.url}/_emulator/forget-responses`, { method: "POST" });
        expect(forgot.status).toBe(200);
        const before = (await incremental.emulator!.received()).length;
        const recovered = await turn(incremental, TURNS, false);
        expect(recovered.stderr).toContain("Previous response with id");
        expect(recovered.stderr).toContain("sending the whole request instead");

        const received = (await incremental.emulator!.received()).slice(before);
        expect(received.map((r) => [r.status, r.body.previous_response_id !== undefined])).toEqual([
          [400, true],
          [200, false],
        ]);
        expect(received[1]!.body.input).toHaveLength(2 * TURNS + 2);

        await turn(incremental, TURNS + 1);
        const next = (await incremental.emulator!.received()).at(-1)!;
        expect(next.status).toBe(200);
        expect(next.body.previous_response_id).toBeDefined();

        const { requests, messages } = await exportSession(incremental.home);
        // The incremental attempt the provider refused (it forgot the response) has its row: not billed, $0.
        expect(requests).toHaveLength(TURNS + 3);
        expect(requests.slice(-3).map((r) => [r.status, r.requestForm, r.attempt ?? 1, r.costUsd === 0])).toEqual([
          ["error", "incremental", 1, true],
          ["ok", "full", 2, false],
          ["ok", "incremental", 1, false],
        ]);
        expect(messages.filter((m) => m.role === "assistant")).toHaveLength(TURNS + 2);
      } finally {
        incremental.emulator!.stop();
      }
    },
    60_000,
  );
});
