/**
 * Faults through the compiled binary against the in-process emulator's fault
 * injection (CACHET_EMULATOR_FAULT): retries before any output, no silent
 * retry once text reached stdout (CASES.md case 30), the idle timer that only
 * content resets ("Diagnostics are not liveness"), SSE events split inside a
 * UTF-8 character (case 22), and Ctrl-C or a crash mid-stream (the partial
 * answer is stored, marked incomplete, and the session goes on).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType, homeEnv } from "./harness.ts";
import { against, startEmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

/** One model per protocol. */
const PROTOCOLS = ["anthropic/claude-sonnet-4-6", "openai/gpt-5", "openai-responses/gpt-5", "google/gemini-2.5-flash"];

/** The answer of CASES.md case 30, scripted so a duplicate would be visible. */
const PLAN = "Here is the plan: 1) read the failing test 2) find the module that owns the bug 3) fix it there 4) run the whole suite again";

/** A script file that makes the emulator answer {@link PLAN}. */
function planScript(home: string): string {
  const path = join(home, "plan-script.json");
  writeFileSync(path, JSON.stringify([{ text: PLAN }]));
  return path;
}

/** The `cachet export` lines of the latest session, by type. */
async function exported(home: string): Promise<{ raw: string; messages: Raw[]; requests: Raw[] }> {
  const r = await cachet(["export"], { home });
  expect(r.code).toBe(0);
  const lines = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Raw);
  return { raw: r.stdout, messages: lines.filter((l) => l.type === "message").map((l) => l.message), requests: lines.filter((l) => l.type === "request").map((l) => l.request) };
}

/** stderr lines that carry text (consola pads warnings with blank lines). */
function textLines(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.trim() !== "");
}

/** The text of a stored message. */
function textOf(message: Raw): string {
  return (message.content as Raw[]).filter((b) => b.type === "text").map((b) => b.text).join("");
}

/** The answer to `prompt` without any fault, from a fresh home (the emulator's answers are deterministic). */
async function cleanAnswer(args: string[], prompt: string): Promise<string> {
  const r = await cachet(["--emulate", ...args, prompt]);
  expect(r.code).toBe(0);
  return r.stdout;
}

describe("a retryable failure before any output is retried, then succeeds", () => {
  const cases = [
    { fault: "429:1", notice: /HTTP 429.*retrying in 0\.2 s \(attempt 2 of 3\)/, minMs: 200 },
    { fault: "529:1", notice: /HTTP 529.*retrying in 0\.5 s \(attempt 2 of 3\)/, minMs: 500 },
    { fault: "503:1", notice: /HTTP 503.*retrying in 0\.5 s \(attempt 2 of 3\)/, minMs: 500 },
    { fault: "error-before:1", notice: /overloaded_error.*retrying in 0\.5 s \(attempt 2 of 3\)/, minMs: 500 },
  ];
  for (const c of cases) {
    test(c.fault, async () => {
      const prompt = "summarise the release notes";
      const expected = await cleanAnswer([], prompt);
      const home = freshHome();
      const started = performance.now();
      const r = await cachet(["--emulate", prompt], { home, env: { CACHET_EMULATOR_FAULT: c.fault } });
      const elapsed = performance.now() - started;
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(expected);
      // The wait is the provider's retry-after (429 sends retry-after-ms: 200) or the first backoff step.
      expect(elapsed).toBeGreaterThanOrEqual(c.minMs);
      const notices = textLines(r.stderr);
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(c.notice);

      const { messages, requests } = await exported(home);
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(messages[1]!.incomplete).toBeUndefined();
      expect(`${textOf(messages[1]!)}\n`).toBe(expected);
      // Every attempt sent has its row. One refused with an HTTP status is not billed: exactly $0, usage unknown. An
      // overload inside a 200 stream comes after message_start, whose input-side usage the provider reported: that
      // attempt's row has it, flagged as a lower bound (CASES.md case 44).
      const billedFirst = c.fault === "error-before:1";
      expect(requests).toHaveLength(2);
      if (!billedFirst) {
        expect(requests[0]).toMatchObject({ status: "error", costUsd: 0, messageId: null });
        expect(requests[0]!.usageLowerBound).toBeUndefined();
        expect(requests[0]!.usage.input).toBeUndefined();
        expect(requests[0]!.error).toContain(`HTTP ${c.fault.split(":")[0]}`);
      } else {
        expect(requests[0]).toMatchObject({ status: "error", usageLowerBound: true, messageId: null });
        expect(requests[0]!.attempt).toBeUndefined();
        expect(requests[0]!.error).toContain("overloaded_error");
        expect(requests[0]!.usage.input).toBeGreaterThan(0);
      }
      const final = requests.at(-1)!;
      expect(final).toMatchObject({ status: "ok", error: null, role: "main", attempt: 2 });
      expect(final.usageLowerBound).toBeUndefined();
      expect(final.usage.input).toBeGreaterThan(0);
      expect(final.usage.output).toBeGreaterThan(0);
      expect(final.costUsd).toBeGreaterThan(0);
    });
  }

  test("429 with --retries 0: exit 4, one line naming HTTP 429 and a hint, nothing on stdout, the unanswered prompt taken back out of the log, its ledger row kept", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "--retries", "0", "summarise the release notes"], { home, env: { CACHET_EMULATOR_FAULT: "429" } });
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("");
    const [message, hint, ...rest] = textLines(r.stderr);
    expect(message).toStartWith("cachet: anthropic: HTTP 429: ");
    expect(hint).toStartWith("  hint: ");
    expect(hint).toEndWith("the prompt was not kept in the session (no answer came): run the same command again to resend it");
    expect(rest).toEqual([]);
    const { messages, requests } = await exported(home);
    expect(messages).toEqual([]);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ status: "error", messageId: null, costUsd: 0 });
    expect(requests[0]!.error).toContain("HTTP 429");
    // The session goes on from a well-formed log: the next -c sends one user message.
    const next = await cachet(["--emulate", "-c", "summarise the release notes"], { home });
    expect(next.code).toBe(0);
    expect((await exported(home)).messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  test("a 429 that never clears: the default 2 retries, then exit 4 (three attempts, two notices)", async () => {
    const r = await cachet(["--emulate", "hello"], { env: { CACHET_EMULATOR_FAULT: "429" } });
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("");
    const lines = textLines(r.stderr);
    expect(lines.filter((l) => l.includes("retrying in"))).toHaveLength(2);
    expect(lines.filter((l) => l.startsWith("cachet: anthropic: HTTP 429"))).toHaveLength(1);
  });
});

describe("a failure after text reached stdout is not retried (CASES.md case 30)", () => {
  for (const fault of ["error-after:1", "cut:1"]) {
    for (const model of PROTOCOLS) {
      test(`${fault} ${model}`, async () => {
        const home = freshHome();
        const env = { CACHET_EMULATOR_FAULT: fault, CACHET_EMULATOR_SCRIPT: planScript(home) };
        const r = await cachet(["--emulate", "-m", model, "make a plan"], { home, env });
        expect(r.code).toBe(4);
        // `:1` lets a second request through: a silent retry would print the plan twice and exit 0.
        expect(r.stdout.split("Here is the plan").length - 1).toBe(1);
        const partial = r.stdout.replace(/\n$/, "");
        expect(partial.length).toBeGreaterThan(0);
        expect(PLAN.startsWith(partial)).toBe(true);
        if (fault.startsWith("cut")) expect(partial.length).toBeLessThan(PLAN.length);
        const [message, hint] = textLines(r.stderr);
        expect(message).toStartWith("cachet: ");
        expect(message).not.toContain("retrying");
        expect(hint).toStartWith("  hint: ");

        const before = await exported(home);
        expect(before.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
        expect(before.messages[1]).toMatchObject({ role: "assistant", incomplete: true });
        expect(textOf(before.messages[1]!)).toBe(partial);
        expect(before.requests).toHaveLength(1);
        expect(before.requests[0]).toMatchObject({ status: "incomplete", messageId: before.messages[1]!.id });

        const next = await cachet(["--emulate", "-c", "go on"], { home });
        expect(next.code).toBe(0);
        expect(next.stdout.length).toBeGreaterThan(1);
        const after = await exported(home);
        expect(after.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
        expect(after.messages[1]).toEqual(before.messages[1]);
        expect(after.messages[3]!.incomplete).toBeUndefined();
        expect(after.requests.map((q) => q.status)).toEqual(["incomplete", "ok"]);

        const shown = await cachet(["sessions", "show"], { home });
        expect(shown.code).toBe(0);
        expect(shown.stdout).toMatch(new RegExp(`${before.messages[1]!.id} \\(incomplete\\)`));
      });
    }
  }

  test("the resumed request carries the partial answer as the assistant turn", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_FAULT: "error-after:1", CACHET_EMULATOR_SCRIPT: planScript(home) });
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const first = await cachet(["-m", "anthropic/claude-sonnet-4-6", ...target.args, "make a plan"], { home, env: target.env });
      expect(first.code).toBe(4);
      const partial = first.stdout.replace(/\n$/, "");
      const next = await cachet([...target.args, "-c", "go on"], { home, env: target.env });
      expect(next.code).toBe(0);
      const bodies = await emulator.bodies();
      expect(bodies).toHaveLength(2);
      const messages = bodies[1]!.messages as Raw[];
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect((messages[1]!.content as Raw[]).map((b) => b.text).join("")).toBe(partial);
    } finally {
      emulator.stop();
    }
  });
});

describe("a provider's error is named by its own status and message, without SDK wrapping", () => {
  test("Gemini: an error object after the stream started reads as Anthropic's error event does; an HTTP error names its status name", async () => {
    const home = freshHome();
    const cases = [
      { model: "anthropic/claude-sonnet-4-6", fault: "error-after:1", line: "cachet: anthropic: error event in stream: overloaded_error: Overloaded", code: "PROVIDER_STREAM" },
      { model: "google/gemini-2.5-flash", fault: "error-after:1", line: "cachet: google: error event in stream: UNAVAILABLE (503): Overloaded", code: "PROVIDER_STREAM" },
      { model: "google/gemini-2.5-flash", fault: "429", line: "cachet: google: HTTP 429: RESOURCE_EXHAUSTED: Number of request tokens has exceeded your rate limit (emulated)", code: "PROVIDER_HTTP" },
    ];
    for (const c of cases) {
      const r = await cachet(["--emulate", "--retries", "0", "-m", c.model, "hi"], { home, env: { CACHET_EMULATOR_FAULT: c.fault } });
      expect(r.code).toBe(4);
      expect(textLines(r.stderr)[0]).toBe(c.line);
      const json = await cachet(["--emulate", "--json", "--retries", "0", "-m", c.model, "hi"], { home, env: { CACHET_EMULATOR_FAULT: c.fault } });
      expect(json.code).toBe(4);
      expect(events(json.stdout).filter((e) => e.type === "error").map((e) => [e.code, e.message])).toEqual([[c.code, c.line.slice("cachet: ".length)]]);
    }
  });
});

describe("the idle timer: only content resets it (Diagnostics are not liveness)", () => {
  for (const fault of ["stall", "chatter"]) {
    for (const model of PROTOCOLS) {
      test(`${fault} ${model} with --idle-timeout 1`, async () => {
        const home = freshHome();
        const started = performance.now();
        const r = await cachet(["--emulate", "--json", "-m", model, "--idle-timeout", "1", "hello there"], { home, env: { CACHET_EMULATOR_FAULT: fault } });
        const elapsed = performance.now() - started;
        expect(r.code).toBe(4);
        // chatter comes every 250 ms for 10 minutes: were it liveness, this would run for 10 minutes.
        // The bound only has to tell the 1 s limit from the 10-minute fault, however loaded the machine.
        expect(elapsed).toBeGreaterThanOrEqual(1_000);
        expect(elapsed).toBeLessThan(60_000);
        const list = events(r.stdout);
        const [error] = ofType(list, "error");
        expect(error).toMatchObject({ code: "PROVIDER_STALL", message: "no content from the provider for 1 s" });
        const done = list.at(-1)!;
        expect(done).toMatchObject({ type: "done", incomplete: fault === "stall" });
        const stalled = "the provider stalled; retry later, or raise the limit with --idle-timeout SECONDS (0: no limit)";
        // What was kept is said only when something was: after the first half of the answer, not before any content.
        expect(error!.hint).toBe(
          fault === "stall"
            ? `the partial answer is stored and marked incomplete (\`cachet sessions show ${done.session}\` and \`cachet export ${done.session}\` show it); ${stalled}`
            : `${stalled}; the prompt was not kept in the session (no answer came): run the same command again to resend it`,
        );
        const text = ofType(list, "text").map((e) => e.delta as string).join("");
        const { messages, requests } = await exported(home);
        if (fault === "stall") {
          // The stall comes after the first half of the answer: that half is kept.
          expect(text.length).toBeGreaterThan(0);
          expect(messages[1]).toMatchObject({ role: "assistant", incomplete: true });
          expect(textOf(messages[1]!)).toBe(text);
          expect(requests[0]).toMatchObject({ status: "incomplete" });
        } else {
          expect(text).toBe("");
          // No answer at all: the prompt is rolled back out of the log; the ledger row stays.
          expect(messages.map((m) => m.role)).toEqual([]);
          expect(requests[0]).toMatchObject({ status: "error", messageId: null });
        }
      });
    }
  }

  test("stall in text mode: one line naming the stall, a hint saying the partial text on stdout is stored and where to see it", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "--idle-timeout", "1", "hello there"], { home, env: { CACHET_EMULATOR_FAULT: "stall" } });
    expect(r.code).toBe(4);
    expect(r.stdout.trim().length).toBeGreaterThan(0);
    const { messages, raw } = await exported(home);
    const session = JSON.parse(raw.split("\n")[0]!).session.id as string;
    expect(messages[1]).toMatchObject({ role: "assistant", incomplete: true });
    // stdout ends the cut-short line.
    expect(r.stdout).toBe(`${textOf(messages[1]!)}\n`);
    expect(textLines(r.stderr)).toEqual([
      "cachet: no content from the provider for 1 s",
      `  hint: the partial answer is stored and marked incomplete (\`cachet sessions show ${session}\` and \`cachet export ${session}\` show it); the provider stalled; retry later, or raise the limit with --idle-timeout SECONDS (0: no limit)`,
    ]);
  });

  test("stall under --no-store: the hint says the partial text was not stored", async () => {
    const r = await cachet(["--emulate", "--no-store", "--idle-timeout", "1", "hello there"], { env: { CACHET_EMULATOR_FAULT: "stall" } });
    expect(r.code).toBe(4);
    expect(r.stdout.trim().length).toBeGreaterThan(0);
    expect(textLines(r.stderr)).toEqual([
      "cachet: no content from the provider for 1 s",
      "  hint: the partial answer was not stored (--no-store); the provider stalled; retry later, or raise the limit with --idle-timeout SECONDS (0: no limit)",
    ]);
  });

  test("stall with --no-stream: the JSON body never comes; fails after the thinking timeout (the idle limit does not cap a whole answer)", async () => {
    const started = performance.now();
    const r = await cachet(["--emulate", "--no-stream", "--idle-timeout", "0.2", "--thinking-timeout", "1", "hello there"], { env: { CACHET_EMULATOR_FAULT: "stall" } });
    const elapsed = performance.now() - started;
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("");
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
    expect(textLines(r.stderr)[0]).toBe("cachet: no answer from the provider within 1 s");
  });
});

describe("SSE events split inside a UTF-8 character (CASES.md case 22)", () => {
  for (const model of PROTOCOLS) {
    for (const mode of ["--stream", "--no-stream"]) {
      test(`${model} ${mode}: byte-identical to the unsplit answer, no U+FFFD`, async () => {
        const prompt = "tell me about the café in the déjà vu street";
        const expected = await cleanAnswer(["-m", model, mode], prompt);
        // The answer carries multi-byte characters, so the split falls inside one.
        expect(expected).toMatch(/[^\x00-\x7f]/);
        const r = await cachet(["--emulate", "-m", model, mode, prompt], { env: { CACHET_EMULATOR_FAULT: "split-utf8" } });
        expect(r.code).toBe(0);
        expect(r.stderr).toBe("");
        expect(r.stdout).toBe(expected);
        expect(r.stdout).not.toContain("\uFFFD");
      });
    }
  }
});

/** Spawns the binary with stdout piped, and resolves once `minBytes` of stdout arrived. */
async function startStreaming(home: string, args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([BINARY, ...args], {
    env: { ...homeEnv(home), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let stdout = "";
  const deadline = Date.now() + 10_000;
  while (stdout.trim() === "" && Date.now() < deadline) {
    const chunk = await reader.read();
    if (chunk.done) break;
    stdout += decoder.decode(chunk.value, { stream: true });
  }
  const rest = (async () => {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return stdout + decoder.decode();
      stdout += decoder.decode(chunk.value, { stream: true });
    }
  })();
  return { proc, firstText: stdout, shown: () => stdout, rest, stderr: new Response(proc.stderr).text() };
}

describe("interrupted mid-stream: the partial answer is stored, marked, and the session goes on", () => {
  test("SIGINT: exit 130, the partial answer stored incomplete, export shows it, -c continues", async () => {
    const home = freshHome();
    const run = await startStreaming(home, ["--emulate", "--idle-timeout", "600", "hello there"], { CACHET_EMULATOR_FAULT: "stall" });
    expect(run.firstText.trim().length).toBeGreaterThan(0);
    const sentAt = performance.now();
    run.proc.kill("SIGINT");
    const code = await run.proc.exited;
    const exitMs = performance.now() - sentAt;
    const stdout = await run.rest;
    expect(code).toBe(130);
    // The stream stalls for 10 minutes with a 600 s idle limit: only the signal can have ended it.
    expect(exitMs).toBeLessThan(60_000);
    expect(textLines(await run.stderr)).toEqual(["cachet: interrupted by SIGINT mid-answer: the partial answer is stored and marked incomplete (`cachet -c` continues)"]);
    const shown = stdout.replace(/\n$/, "");

    const { messages, requests } = await exported(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]).toMatchObject({ incomplete: true });
    expect(textOf(messages[1]!)).toBe(shown);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ status: "incomplete", messageId: messages[1]!.id });
    expect(requests[0]!.error).toContain("interrupted");

    const next = await cachet(["--emulate", "-c", "go on"], { home });
    expect(next.code).toBe(0);
    const after = await exported(home);
    expect(after.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(after.messages[1]).toEqual(messages[1]);
    expect((await cachet(["sessions", "show"], { home })).stdout).toContain(`${messages[1]!.id} (incomplete)`);
  });

  test("SIGKILL (a crash): the session stays resumable with the partial answer marked incomplete", async () => {
    const home = freshHome();
    const run = await startStreaming(home, ["--emulate", "--idle-timeout", "600", "hello there"], { CACHET_EMULATOR_FAULT: "stall" });
    expect(run.firstText.trim().length).toBeGreaterThan(0);
    // The pipeline saves the partial answer at most every 250 ms, with a trailing save: kill once the store holds what stdout shows.
    for (;;) {
      const { messages } = await exported(home);
      if (messages.length === 2 && textOf(messages[1]!) === run.shown()) break;
      await Bun.sleep(25);
    }
    run.proc.kill("SIGKILL");
    expect(await run.proc.exited).not.toBe(0);
    const shown = await run.rest;

    const { messages } = await exported(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]).toMatchObject({ incomplete: true });
    // What stdout showed is what the store kept.
    expect(textOf(messages[1]!)).toBe(shown);

    const started = performance.now();
    const next = await cachet(["--emulate", "-c", "go on"], { home });
    expect(next.code).toBe(0);
    // The dead process's turn lease is taken over, not waited out (it would run for the lease's 15 s and more).
    expect(performance.now() - started).toBeLessThan(15_000);
    const after = await exported(home);
    expect(after.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(after.messages[1]).toEqual(messages[1]);
    expect(after.messages[3]!.incomplete).toBeUndefined();
  });
});
