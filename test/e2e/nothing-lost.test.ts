/**
 * Issue 12, part A, through the compiled binary: what went in is what was
 * sent, and every run ends as documented. Prompt words and `-`; stdin with
 * and without a PROMPT, and data that comes late (CASES.md case 48); one
 * input reader (BOM, directories, offsets: case 43); a closed stdout; SIGINT
 * and SIGTERM wherever the run waits (stream, retry backoff: case 45, plugin
 * hook, stdin, session lease); hook time limits; liveness while a model
 * thinks out of sight (case 42) and the timer flags; a structured answer cut
 * at the output limit or refused (case 41); user text escaped in tables and
 * one-line messages; the cache TTL sticking to the session.
 *
 * Each test checks the exact exit code and what the store holds afterwards.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType, homeEnv } from "./harness.ts";
import { canonicalJson } from "../../src/wire/canonical-json.ts";
import { LARGE_SYSTEM, against, exportSession, startEmulatorProcess, tempFile, withoutMarkers } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const BOM = new Uint8Array([0xef, 0xbb, 0xbf]);

/** The stored messages and ledger rows of the latest session, or none. */
async function stored(home: string): Promise<{ messages: Raw[]; requests: Raw[] }> {
  const list = await cachet(["sessions"], { home });
  if (list.stdout.startsWith("no sessions")) return { messages: [], requests: [] };
  const { messages, requests } = await exportSession(home);
  return { messages, requests };
}

function textOf(message: Raw): string {
  return (message.content as Raw[]).filter((b) => b.type === "text").map((b) => b.text).join("");
}

/** A running binary with stdin, stdout and stderr piped; stderr is collected as it comes. */
function spawnCachet(home: string, args: string[], env: Record<string, string> = {}, options: { readStdout?: boolean } = {}) {
  const proc = Bun.spawn([BINARY, ...args], {
    env: { ...homeEnv(home), ...env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  const stderrDone = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  // A test that reads stdout itself (to close it, or to wait for the first text) passes readStdout: false.
  const stdout = options.readStdout === false ? Promise.resolve("") : new Response(proc.stdout).text();
  return {
    proc,
    stdout,
    stderr: () => stderr,
    stderrDone,
    /** Resolves once stderr holds `count` matches of `pattern` (the run reached that point). */
    async stderrHas(pattern: RegExp, count = 1): Promise<void> {
      const deadline = Date.now() + 20_000;
      while ((stderr.match(new RegExp(pattern, "g"))?.length ?? 0) < count) {
        if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`stderr never showed ${pattern} ×${count}: ${stderr}`);
        await Bun.sleep(10);
      }
    },
  };
}

/**
 * Resolves once a PROMPT run started now, with the same first-byte wait
 * (`env`), has gone on without its silent stdin (it says so on stderr): a run
 * started before it has by then waited for stdin longer than that wait.
 */
async function firstByteWaitPassed(env: Record<string, string>): Promise<void> {
  const reference = spawnCachet(freshHome(), ["--emulate", "reference"], env);
  try {
    await reference.stderrHas(/stdin stayed open with no data; going on with the PROMPT alone/);
  } finally {
    reference.proc.kill();
    await reference.proc.exited;
  }
}

/** Resolves once `path` exists (a plugin's rendezvous file). */
async function fileAppears(path: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`);
    await Bun.sleep(10);
  }
}

/**
 * Sends `signal` and checks the run ends with `code`. The time bound only has to tell "the signal ended it" from
 * "the wait ran out" (a 30 s hook limit, a 600 s idle limit, stdin that never ends), however loaded the machine;
 * the 1 s figure itself is measured, not asserted in a timed test.
 */
async function endsBySignal(proc: ReturnType<typeof Bun.spawn>, signal: "SIGINT" | "SIGTERM", code: number): Promise<void> {
  const sentAt = performance.now();
  proc.kill(signal);
  expect(await proc.exited).toBe(code);
  expect(performance.now() - sentAt).toBeLessThan(10_000);
}

/** A plugin whose `request:before` hook writes `ready`, then waits for `go` (or never settles when `go` is undefined). */
function gatePlugin(dir: string, go: string | undefined): string {
  const path = join(dir, "gate-plugin.mjs");
  const ready = join(dir, "ready");
  writeFileSync(
    path,
    `import { existsSync, writeFileSync } from "node:fs";
export default { name: "gate", api: 1, setup(api) {
  api.hook("request:before", (wire) => {
    writeFileSync(${JSON.stringify(ready)}, "");
    ${go === undefined ? "return new Promise(() => {});" : `return new Promise((resolve) => { const poll = () => existsSync(${JSON.stringify(go)}) ? resolve(wire) : setTimeout(poll, 10); poll(); });`}
  });
} };
`,
  );
  return path;
}

describe("prompt words and `-`", () => {
  test("unquoted words are joined with spaces: the whole prompt is sent", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "write", "a", "haiku", "about", "caching"], { home });
    expect(r.code).toBe(0);
    const { messages, requests } = await stored(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(textOf(messages[0]!)).toBe("write a haiku about caching");
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ status: "ok" });
  });

  test("`-` places stdin where it stands among the words", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "summarise", "this:", "-", "in", "French"], { home, stdin: "DATA\n" });
    expect(r.code).toBe(0);
    expect(textOf((await stored(home)).messages[0]!)).toBe("summarise this:\n\nDATA\n\nin French");
    const first = await cachet(["--emulate", "-", "summarise"], { home: freshHome(), stdin: "data" });
    expect(first.code).toBe(0);
  });

  test("`-` twice is a usage error; nothing is stored", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "-", "and", "-"], { home, stdin: "x" });
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe("cachet: `-` (stdin) appears more than once among the prompt words");
    expect(await stored(home)).toEqual({ messages: [], requests: [] });
  });
});

describe("stdin", () => {
  test("no PROMPT: stdin is waited for to its end, however late its first byte (past the first-byte wait)", async () => {
    const home = freshHome();
    const run = spawnCachet(home, ["--emulate"], { CACHET_STDIN_WAIT_MS: "50" });
    // Longer than the first-byte wait a PROMPT run would give it.
    await firstByteWaitPassed({ CACHET_STDIN_WAIT_MS: "50" });
    expect(run.proc.exitCode).toBeNull();
    run.proc.stdin.write("slow producer\n");
    run.proc.stdin.end();
    expect(await run.proc.exited).toBe(0);
    expect(textOf((await stored(home)).messages[0]!)).toBe("slow producer\n");
  });

  test("a PROMPT and data that comes after cachet went on: said even with --quiet, exit 5, the turn stored without it (case 48)", async () => {
    const home = freshHome();
    const go = join(home, "go");
    const run = spawnCachet(home, ["--emulate", "--quiet", "what", "is", "the", "input?"], { CACHET_STDIN_WAIT_MS: "50", CACHET_PLUGINS: gatePlugin(home, go) });
    // The request is about to go out, so cachet went on without stdin: now the producer writes.
    await fileAppears(join(home, "ready"));
    run.proc.stdin.write("DATA\n");
    run.proc.stdin.flush();
    writeFileSync(go, "");
    const code = await run.proc.exited;
    await run.stderrDone;
    expect(code).toBe(5);
    expect(run.stderr().split("\n").filter(Boolean)).toEqual([
      "cachet: data arrived on stdin after cachet went on without it; it was NOT sent (the turn is stored without it)",
      "  hint: pass `-` among the prompt words or --stdin wait to wait for a slow producer, --stdin skip to ignore stdin",
    ]);
    expect((await run.stdout).length).toBeGreaterThan(0);
    const { messages, requests } = await stored(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(textOf(messages[0]!)).toBe("what is the input?");
    expect(messages[1]!.incomplete).toBeUndefined();
    expect(requests).toMatchObject([{ status: "ok" }]);
  });

  test("data already waiting in the pipe when the turn ends (the thread busy until then): seen by the final peek, exit 5", async () => {
    const home = freshHome();
    const go = join(home, "go");
    // A usage:record hook that holds the thread until `go`: the event loop gets no turn between the write and the turn's end.
    const plugin = join(home, "busy-plugin.mjs");
    writeFileSync(
      plugin,
      `import { existsSync, writeFileSync } from "node:fs";
export default { name: "busy", api: 1, setup(api) {
  api.hook("usage:record", () => {
    writeFileSync(${JSON.stringify(join(home, "ready"))}, "");
    while (!existsSync(${JSON.stringify(go)})) {}
  });
} };
`,
    );
    const run = spawnCachet(home, ["--emulate", "what", "is", "this"], { CACHET_STDIN_WAIT_MS: "50", CACHET_PLUGINS: plugin });
    await fileAppears(join(home, "ready"));
    run.proc.stdin.write("LATEDATA\n");
    await run.proc.stdin.flush();
    writeFileSync(go, "");
    expect(await run.proc.exited).toBe(5);
    await run.stderrDone;
    expect(run.stderr()).toContain("cachet: data arrived on stdin after cachet went on without it; it was NOT sent (the turn is stored without it)\n");
    expect((await stored(home)).requests).toMatchObject([{ status: "ok" }]);
  });

  for (const noStore of [false, true]) {
    test(`--json${noStore ? " --no-store" : ""} and data that comes after cachet went on: an error line STDIN_LATE before done, exit 5`, async () => {
      const home = freshHome();
      const go = join(home, "go");
      const run = spawnCachet(home, ["--emulate", "--json", ...(noStore ? ["--no-store"] : []), "what", "is", "this"], { CACHET_STDIN_WAIT_MS: "50", CACHET_PLUGINS: gatePlugin(home, go) });
      await fileAppears(join(home, "ready"));
      run.proc.stdin.write("LATEDATA\n");
      run.proc.stdin.flush();
      writeFileSync(go, "");
      expect(await run.proc.exited).toBe(5);
      const lines = events(await run.stdout);
      expect(lines.map((e) => e.type).filter((t) => t !== "text")).toEqual(["session", "usage", "cost", "error", "done"]);
      expect(ofType(lines, "error")).toEqual([
        {
          type: "error",
          code: "STDIN_LATE",
          message: `data arrived on stdin after cachet went on without it; it was NOT sent (${noStore ? "the turn went without it; nothing was stored: --no-store" : "the turn is stored without it"})`,
          hint: "pass `-` among the prompt words or --stdin wait to wait for a slow producer, --stdin skip to ignore stdin",
          incomplete: false,
        },
      ]);
      expect(ofType(lines, "done")[0]).toMatchObject({ incomplete: false, finish_reason: "stop" });
      await run.stderrDone;
      expect(run.stderr()).toContain(`cachet: ${ofType(lines, "error")[0]!.message}`);
      if (noStore) expect(await stored(home)).toEqual({ messages: [], requests: [] });
    });
  }

  test("--stdin wait: a PROMPT run waits for a slow producer; --stdin skip ignores an open pipe at once", async () => {
    const home = freshHome();
    const run = spawnCachet(home, ["--emulate", "--stdin", "wait", "summarise"], { CACHET_STDIN_WAIT_MS: "50" });
    await firstByteWaitPassed({ CACHET_STDIN_WAIT_MS: "50" });
    expect(run.proc.exitCode).toBeNull();
    run.proc.stdin.write("late but awaited");
    run.proc.stdin.end();
    expect(await run.proc.exited).toBe(0);
    expect(textOf((await stored(home)).messages[0]!)).toBe("late but awaited\n\nsummarise");

    const skipHome = freshHome();
    const skip = spawnCachet(skipHome, ["--emulate", "--stdin", "skip", "hello"]);
    expect(await skip.proc.exited).toBe(0);
    await skip.stderrDone;
    expect(skip.stderr()).toBe("");
    skip.proc.stdin.end();
    expect(textOf((await stored(skipHome)).messages[0]!)).toBe("hello");
  });
});

describe("one input reader (case 43)", () => {
  test("a BOM is dropped from -s @FILE, --overlay @FILE, --tools, --schema, stdin and config: the wire request is byte-identical to the BOM-less one", async () => {
    const dir = freshHome();
    const emulator = await startEmulatorProcess(dir);
    try {
      const files = (bom: boolean) => {
        const sub = join(dir, bom ? "bom" : "plain");
        mkdirSync(sub, { recursive: true });
        const write = (name: string, text: string) => {
          const path = join(sub, name);
          writeFileSync(path, bom ? Buffer.concat([BOM, Buffer.from(text)]) : text);
          return path;
        };
        return {
          system: write("system.txt", "You are terse."),
          overlay: write("overlay.txt", "Today: 2026-06-17"),
          tools: write("tools.json", JSON.stringify([{ name: "lookup", description: "look up", parameters: { type: "object", properties: { q: { type: "string" } } } }])),
          schema: write("answer.json", JSON.stringify({ type: "object", properties: { verdict: { type: "string" } }, required: ["verdict"], additionalProperties: false })),
          config: write("config.toml", 'model = "anthropic/claude-sonnet-4-6"\n'),
        };
      };
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      for (const bom of [false, true]) {
        const f = files(bom);
        const home = freshHome();
        writeFileSync(join(home, "config.toml"), await Bun.file(f.config).bytes());
        const stdin = bom ? Buffer.concat([BOM, Buffer.from("the input")]) : Buffer.from("the input");
        const r = await cachet([...target.args, "-s", `@${f.system}`, "--overlay", `@${f.overlay}`, "--tools", f.tools, "--schema", f.schema, "judge"], { home, env: target.env, stdin });
        expect(r.code).toBe(0);
        expect(textOf((await stored(home)).messages[0]!)).toBe("the input\n\njudge");
      }
      // The affinity key is each session's own id; every other byte must match.
      const [plain, withBom] = (await emulator.bodies()).map(({ metadata, ...body }) => body);
      expect(JSON.stringify(withBom)).not.toContain("\uFEFF");
      expect(withBom).toEqual(plain!);
    } finally {
      emulator.stop();
    }
  });

  test("a BOM in a probe scenario, a usage file and a prices file is dropped too", async () => {
    const home = freshHome();
    const scenario = join(home, "scenario.json");
    writeFileSync(scenario, Buffer.concat([BOM, Buffer.from(JSON.stringify({ models: ["anthropic/claude-sonnet-4-6"], steps: [{ user: "hi" }] }))]));
    const probe = await cachet(["probe", scenario, "--emulate", "--json"], { home });
    expect(probe.code).toBe(0);
    const usage = join(home, "usage.json");
    writeFileSync(usage, Buffer.concat([BOM, Buffer.from(JSON.stringify({ prompt_tokens: 2006, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 1920 } }))]));
    const priced = await cachet(["price", "--model", "openai/gpt-4o", "--usage", usage, "--json"], { home });
    expect(priced.code).toBe(0);
    expect(JSON.parse(priced.stdout)).toMatchObject({ cost_usd: expect.any(Number) });
  });

  test("a directory is named as one; invalid UTF-8 in a file names the exact byte offset", async () => {
    const home = freshHome();
    const dir = join(home, "adir");
    mkdirSync(dir);
    const tools = await cachet(["--emulate", "--tools", dir, "hi"], { home });
    expect(tools.code).toBe(3);
    expect(tools.stderr.split("\n")[0]).toBe(`cachet: --tools ${dir}: is a directory, not a file`);
    const schema = await cachet(["--emulate", "--schema", dir, "hi"], { home });
    expect(schema.code).toBe(3);
    expect(schema.stderr.split("\n")[0]).toBe(`cachet: schema file ${dir}: is a directory, not a file`);
    const usage = await cachet(["price", "--model", "openai/gpt-4o", "--usage", dir], { home });
    expect(usage.code).toBe(3);
    expect(usage.stderr.split("\n")[0]).toBe(`cachet: --usage ${dir}: is a directory, not a file`);
    const bad = join(home, "bad.txt");
    writeFileSync(bad, new Uint8Array([0x6f, 0x6b, 0x20, 0xc3, 0x28]));
    const system = await cachet(["--emulate", "-s", `@${bad}`, "hi"], { home });
    expect(system.code).toBe(3);
    expect(system.stderr.split("\n")[0]).toBe(`cachet: --system @${bad} is not valid UTF-8: invalid byte 0xc3 at offset 3`);
    expect(await stored(home)).toEqual({ messages: [], requests: [] });
  });
});

describe("a closed stdout (`| head -c1`)", () => {
  test("stops the printing only: 20 of 20 runs exit 0 with the turn and its ledger row stored", async () => {
    const home = freshHome();
    const script = join(home, "long.json");
    writeFileSync(script, JSON.stringify([{ text: Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ") }]));
    const runOnce = async (i: number) => {
      // split-utf8 writes each event in two parts with pauses: the reader closes while the answer still streams.
      const run = spawnCachet(home, ["--emulate", `question ${i}`], { CACHET_EMULATOR_SCRIPT: script, CACHET_EMULATOR_FAULT: "split-utf8" }, { readStdout: false });
      run.proc.stdin.end();
      return run;
    };
    const codes: (number | null)[] = [];
    for (let batch = 0; batch < 5; batch++) {
      const runs = await Promise.all([0, 1, 2, 3].map((k) => runOnce(batch * 4 + k)));
      await Promise.all(
        runs.map(async (run) => {
          const reader = (run.proc.stdout as ReadableStream<Uint8Array>).getReader();
          await reader.read();
          await reader.cancel();
          codes.push(await run.proc.exited);
        }),
      );
    }
    expect(codes).toEqual(Array(20).fill(0));
    const stats = await cachet(["stats", "--json", "--by", "session"], { home });
    const groups = (JSON.parse(stats.stdout) as Raw).groups as Raw[];
    expect(groups).toHaveLength(20);
    for (const g of groups) expect(g.requests).toBe(1);
    const sessions = (await cachet(["sessions"], { home })).stdout.trim().split("\n").slice(1);
    expect(sessions).toHaveLength(20);
    for (const line of sessions) expect(line.split(/\s+/).slice(3, 5)).toEqual(["2", "1"]);
  }, 180_000);
});

describe("signals end any run within 1 s", () => {
  test("SIGTERM mid-stream: exit 143, the partial answer stored and marked incomplete, -c continues", async () => {
    const home = freshHome();
    const run = spawnCachet(home, ["--emulate", "--idle-timeout", "600", "hello there"], { CACHET_EMULATOR_FAULT: "stall" }, { readStdout: false });
    run.proc.stdin.end();
    const reader = (run.proc.stdout as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    reader.releaseLock();
    await endsBySignal(run.proc, "SIGTERM", 143);
    const { messages, requests } = await stored(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]).toMatchObject({ incomplete: true });
    expect(requests).toMatchObject([{ status: "incomplete" }]);
    expect((await cachet(["--emulate", "-c", "go on"], { home })).code).toBe(0);
  });

  test("SIGINT during a retry wait: nothing more is sent, exit 130, the failed attempt is in the ledger (case 45)", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(home, { CACHET_EMULATOR_FAULT: "503" });
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const run = spawnCachet(home, [...target.args, "--retries", "9", "hello"], target.env);
      run.proc.stdin.end();
      // Waits grow 0.5, 1, 2 s: the third notice starts a 2 s wait.
      await run.stderrHas(/retrying in/, 3);
      await endsBySignal(run.proc, "SIGINT", 130);
      await run.stderrDone;
      expect(run.stderr().trim().split("\n").slice(-2)).toEqual([
        "cachet: interrupted by SIGINT while waiting to retry: nothing more was sent",
        "  hint: the prompt was not kept in the session (no answer came): run the same command again to resend it",
      ]);
      expect(await emulator.bodies()).toHaveLength(3);
      const { messages, requests } = await stored(home);
      // No answer at all: the prompt is rolled back out of the log; each attempt sent keeps its row, refused with
      // HTTP 503 and so not billed: $0 each.
      expect(messages.map((m) => m.role)).toEqual([]);
      expect(requests.map((r) => [r.status, r.costUsd, r.messageId])).toEqual([["error", 0, null], ["error", 0, null], ["error", 0, null]]);
      expect(requests[2]!.error).toContain("interrupted");
    } finally {
      emulator.stop();
    }
  });

  test("a hook that never settles: --hook-timeout names the plugin and the hook (exit 1); SIGINT ends it at once (exit 130); nothing stored", async () => {
    const home = freshHome();
    const plugin = gatePlugin(home, undefined);
    const limited = await cachet(["--emulate", "--hook-timeout", "0.5", "hello"], { home, env: { CACHET_PLUGINS: plugin } });
    expect(limited.code).toBe(1);
    expect(limited.stderr.split("\n")[0]).toBe("cachet: gate: hook request:before did not finish within 0.5 s");
    expect(limited.stderr.split("\n")[1]).toContain("--hook-timeout");
    expect(await stored(home)).toEqual({ messages: [], requests: [] });

    const run = spawnCachet(home, ["--emulate", "hello"], { CACHET_PLUGINS: plugin });
    run.proc.stdin.end();
    await fileAppears(join(home, "ready"));
    await endsBySignal(run.proc, "SIGINT", 130);
    expect(await stored(home)).toEqual({ messages: [], requests: [] });
  });

  for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
    test(`${signal} while waiting for stdin: exit ${code}, nothing stored, and the message says nothing was sent`, async () => {
      const home = freshHome();
      // The run opens the provider's connection while it reads stdin (src/run/prepare.ts), after its signal handlers
      // are in place: a connection to this listener says the run is in the wait.
      let connected!: () => void;
      const inTheWait = new Promise<void>((resolve) => (connected = resolve));
      const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: () => connected(), data() {} } });
      try {
        const run = spawnCachet(home, ["--base-url", `http://127.0.0.1:${listener.port}`], { ANTHROPIC_API_KEY: "test-key" });
        await inTheWait;
        await endsBySignal(run.proc, signal, code);
        await run.stderrDone;
        expect(run.stderr().split("\n")).toEqual([`cachet: interrupted by ${signal} before the request was sent: nothing was sent, and the prompt was not stored`, ""]);
      } finally {
        listener.stop(true);
      }
      expect(await stored(home)).toEqual({ messages: [], requests: [] });
    });
  }

  test("SIGINT while waiting for another process's turn on the session lease: exit 130 within 1 s", async () => {
    const home = freshHome();
    expect((await cachet(["--emulate", "--session", "shared", "first"], { home })).code).toBe(0);
    const holder = spawnCachet(home, ["--emulate", "--session", "shared", "--idle-timeout", "600", "second"], { CACHET_EMULATOR_FAULT: "stall" }, { readStdout: false });
    holder.proc.stdin.end();
    const reader = (holder.proc.stdout as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    reader.releaseLock();
    const waiter = spawnCachet(home, ["--emulate", "--verbose", "--session", "shared", "third"]);
    waiter.proc.stdin.end();
    await waiter.stderrHas(/is busy \(process \d+ on .+ is running a turn\): waiting for it/);
    await endsBySignal(waiter.proc, "SIGINT", 130);
    await endsBySignal(holder.proc, "SIGINT", 130);
    const { messages } = await exportSession(home, "shared");
    expect(messages.map((m) => textOf(m)).filter((t, i) => i % 2 === 0)).toEqual(["first", "second"]);
  });
});

describe("liveness", () => {
  const model = "anthropic/claude-sonnet-4-6";
  const thinkingScript = (home: string) => {
    const path = join(home, "thinking.json");
    writeFileSync(path, JSON.stringify([{ thinking: "Let me weigh the options carefully.", text: "Use the 1-hour TTL." }]));
    return path;
  };

  test("keep-alives while a thinking block is open are progress: 2 s of hidden thinking passes --idle-timeout 0.75 (case 42)", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "-m", model, "--idle-timeout", "0.75", "which TTL?"], { home, env: { CACHET_EMULATOR_SCRIPT: thinkingScript(home), CACHET_EMULATOR_FAULT: "thinking-pings" } });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Use the 1-hour TTL.\n");
    const { messages, requests } = await stored(home);
    expect(messages[1]!.content).toEqual([
      { type: "thinking", text: "Let me weigh the options carefully.", signature: expect.any(String) },
      { type: "text", text: "Use the 1-hour TTL." },
    ]);
    expect(requests).toMatchObject([{ status: "ok" }]);
  });

  test("--thinking-timeout bounds hidden thinking: exit 4 naming it, the failed request in the ledger", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "-m", model, "--idle-timeout", "0.75", "--thinking-timeout", "1", "which TTL?"], { home, env: { CACHET_EMULATOR_SCRIPT: thinkingScript(home), CACHET_EMULATOR_FAULT: "thinking-pings" } });
    expect(r.code).toBe(4);
    expect(r.stderr.split("\n")[0]).toBe("cachet: the model thought for 1 s without output (only keep-alives)");
    const { messages, requests } = await stored(home);
    // Hidden thinking is no answer: the prompt is rolled back out of the log; the ledger row stays.
    expect(messages.map((m) => m.role)).toEqual([]);
    expect(requests).toMatchObject([{ status: "error" }]);
  });

  test("--no-stream: an answer that takes longer than --idle-timeout completes (the idle limit does not cap the whole answer)", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "-m", model, "--no-stream", "--idle-timeout", "0.5", "which TTL?"], { home, env: { CACHET_EMULATOR_SCRIPT: thinkingScript(home), CACHET_EMULATOR_FAULT: "thinking-pings" } });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Use the 1-hour TTL.\n");
    expect((await stored(home)).requests).toMatchObject([{ status: "ok" }]);
  });

  test("--idle-timeout 0 is no limit; a value past the timer range is a usage error before anything is stored", async () => {
    const home = freshHome();
    expect((await cachet(["--emulate", "--idle-timeout", "0", "hi"], { home })).code).toBe(0);
    const other = freshHome();
    for (const [flag, value] of [["--idle-timeout", "1e9"], ["--thinking-timeout", "3000000"], ["--hook-timeout", "0"], ["--hook-timeout", "abc"], ["--idle-timeout", "-1"]] as const) {
      const r = await cachet(["--emulate", flag, value, "hi"], { home: other });
      expect(r.code).toBe(2);
      expect(r.stderr.split("\n")[0]).toStartWith(`cachet: ${flag} ${value}: expected seconds from 0.001 to 2147483`);
      expect(r.stderr).not.toContain("TimeoutOverflowWarning");
    }
    expect(await stored(other)).toEqual({ messages: [], requests: [] });
  });
});

describe("finish reasons of a structured answer (case 41)", () => {
  const schema = JSON.stringify({
    type: "object",
    properties: { reasoning: { type: "string" }, is_valid: { type: "boolean" }, violations: { type: "array", items: { type: "string" } } },
    required: ["reasoning", "is_valid", "violations"],
    additionalProperties: false,
  });

  test("cut at the output limit: the cause and its fix, exit 1, the cut answer stored", async () => {
    const home = freshHome();
    const r = await cachet(["--emulate", "--schema", schema, "--max-tokens", "8", "check the script"], { home });
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n")).toEqual([
      "cachet: the structured answer was cut at the output limit of 8 tokens (finish reason max_tokens) before its JSON was complete",
      "  hint: raise --max-tokens above 8 and run again; the cut answer is stored (`cachet export`)",
      "",
    ]);
    const { messages, requests } = await stored(home);
    expect(textOf(messages[1]!)).toStartWith('{"reasoning":"');
    expect(() => JSON.parse(textOf(messages[1]!))).toThrow();
    expect(requests).toHaveLength(1);
  });

  for (const model of ["anthropic/claude-sonnet-4-6", "openai/gpt-5"]) {
    test(`refused (${model}): named as a refusal, not as "not JSON"`, async () => {
      const home = freshHome();
      const script = join(home, "refuse.json");
      writeFileSync(script, JSON.stringify([{ text: "I can't help with that.", refusal: true }]));
      const r = await cachet(["--emulate", "-m", model, "--json", "--schema", schema, "check the script"], { home, env: { CACHET_EMULATOR_SCRIPT: script } });
      expect(r.code).toBe(1);
      const [error] = ofType(events(r.stdout), "error");
      expect(error).toMatchObject({ code: "ANSWER_INVALID", hint: "rephrase the prompt or the input; the refusal is stored (`cachet export`)" });
      expect(String(error!.message)).toStartWith("the model refused to answer");
      expect(textOf((await stored(home)).messages[1]!)).toBe("I can't help with that.");
    });
  }
});

describe("user text is escaped in tables and one-line messages", () => {
  test("a session name holding an escape sequence and a newline (stored before --session refused such names)", async () => {
    const home = freshHome();
    const name = "evil\u001b[2J\nname";
    expect((await cachet(["--emulate", "--session", name, "hi"], { home })).code).toBe(2);
    expect((await cachet(["--emulate", "--session", "plain", "hi"], { home })).code).toBe(0);
    const db = new Database(join(home, "cachet.db"));
    expect(db.query("UPDATE sessions SET name = ? WHERE name = 'plain'").run(name).changes).toBe(1);
    db.close();
    const list = await cachet(["sessions"], { home });
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain("\u001b");
    const lines = list.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain("evil\\x1b[2J\\nname");
    const show = await cachet(["sessions", "show", name], { home });
    expect(show.stdout.split("\n")[0]).toMatch(/^session {3}s_\w+ \(evil\\x1b\[2J\\nname\)$/);
    const missing = await cachet(["sessions", "show", "nope\u001b[31m\nx"], { home });
    expect(missing.code).toBe(2);
    expect(missing.stderr).not.toContain("\u001b");
    expect(missing.stderr.split("\n")[0]).toBe('cachet: no session "nope\\x1b[31m\\nx"');
  });
});

describe("sticky config", () => {
  test("--cache-ttl 1h sticks to the session: the next -c writes 1-hour entries; a new flag changes it with a notice", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(home);
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      expect((await cachet([...target.args, "--cache-ttl", "1h", "first"], { home, env: target.env })).code).toBe(0);
      const second = await cachet([...target.args, "-c", "second"], { home, env: target.env });
      expect(second.code).toBe(0);
      expect(second.stderr).toBe("");
      const third = await cachet([...target.args, "-c", "--cache-ttl", "5m", "third"], { home, env: target.env });
      expect(third.code).toBe(0);
      expect(third.stderr).toContain("cache TTL 1h → 5m for this session from now on");
      const ttls = (await emulator.bodies()).map((body) => [...JSON.stringify(body).matchAll(/"ttl":"(\w+)"/g)].map((m) => m[1]));
      expect(ttls[1]!.length).toBeGreaterThan(0);
      expect(new Set(ttls[1])).toEqual(new Set(["1h"]));
      expect(ttls[2]).not.toContain("1h");
      const { requests } = await exportSession(home);
      expect(requests.map((r) => r.cacheTtl)).toEqual(["1h", "1h", "5m"]);
    } finally {
      emulator.stop();
    }
  });

  test("every flag that shapes the request sticks: a 3-turn -c session sends the same bytes before its messages, which only grow; -o key=null drops one", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(home);
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const tools = tempFile("tools.json", JSON.stringify([{ name: "lookup", description: "Look a word up", parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } }]));
      const schema = JSON.stringify({ type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false });
      // A thinking budget above the default max_tokens (8192): --max-tokens must stick with it or the provider refuses the turn.
      const first = await cachet(
        [...target.args, "-m", "anthropic/claude-sonnet-4-6", "-s", LARGE_SYSTEM, "--tools", tools, "--schema", schema, "--cache-ttl", "1h", "--max-tokens", "12000",
          "-o", 'thinking={"type":"enabled","budget_tokens":10000}', "-o", 'tool_choice={"type":"auto"}', "-o", "top_k=40", "first"],
        { home, env: target.env },
      );
      expect(first.code).toBe(0);
      for (const prompt of ["second", "third"]) {
        const next = await cachet([...target.args, "-c", prompt], { home, env: target.env });
        expect(next.code).toBe(0);
        expect(next.stderr).toBe("");
      }
      const bodies = await emulator.bodies();
      expect(bodies.length).toBe(3);
      const head = (body: Raw) => canonicalJson(withoutMarkers({ ...body, messages: undefined }));
      expect(JSON.parse(head(bodies[0]!))).toMatchObject({ max_tokens: 12000, thinking: { type: "enabled", budget_tokens: 10000 }, tool_choice: { type: "auto" }, top_k: 40 });
      expect(head(bodies[1]!)).toBe(head(bodies[0]!));
      expect(head(bodies[2]!)).toBe(head(bodies[1]!));
      for (const n of [1, 2]) {
        const before = withoutMarkers(bodies[n - 1]!.messages) as unknown[];
        expect(withoutMarkers(bodies[n]!.messages.slice(0, before.length))).toEqual(before);
        expect(bodies[n]!.messages.length).toBe(before.length + 2);
      }
      const { requests, session } = await exportSession(home);
      expect(requests.map((r) => [r.status, r.cacheTtl, r.model])).toEqual(Array(3).fill(["ok", "1h", "claude-sonnet-4-6"]));
      expect(session.parentId).toBeNull();

      const dropped = await cachet([...target.args, "-c", "-o", "top_k=null", "fourth"], { home, env: target.env });
      expect(dropped.code).toBe(0);
      expect(dropped.stderr).toContain("-o top_k 40 → (unset) for this session from now on");
      const fifth = await cachet([...target.args, "-c", "fifth"], { home, env: target.env });
      expect(fifth.code).toBe(0);
      const later = (await emulator.bodies()).slice(3);
      expect(later.map((b) => [b.top_k, b.max_tokens, b.thinking?.budget_tokens])).toEqual([[undefined, 12000, 10000], [undefined, 12000, 10000]]);
      expect((await exportSession(home)).requests.length).toBe(5);
    } finally {
      emulator.stop();
    }
  });
});
