/**
 * Benchmark: from process start to the first byte of the request arriving at
 * a loopback server speaking the OpenAI chat protocol (`cachet --no-stream -m
 * openai/gpt-5 --base-url … PROMPT`, stdin closed), against the whole run of a
 * trivial compiled Bun program (fixtures/yardstick.ts), interleaved in the same
 * run. Target: ≤ 1.5× (issue 18). Two kinds of turn: a new session, and a turn
 * that continues it (`-c`) with a prompt never sent before, which is what a
 * conversation does: its checks before sending (compaction, context window)
 * meet text whose tokens no memo knows.
 *
 * Measured twice, each in a fresh home:
 * - as cachet runs by default on a developer's machine (no CI variable, auto-start on): the first turn runs in its
 *   own process and starts the resident daemon, every later turn goes through it (the client's start, the socket
 *   hop and the warm daemon's work before the request). The ratio; the first turn, and the
 *   {@link WARMUP} turns of each kind after it, are printed apart (a daemon runs warm-up turns before it listens, and
 *   its engine optimizes a turn's code over its first dozens of commands: src/daemon/server.ts WARM_ROUNDS,
 *   src/daemon/self.ts DAEMON_JSC_OPTIONS).
 * - every turn in its own process (CACHET_DAEMON_AUTOSTART=0, as in CI or with CACHET_NO_DAEMON=1): what the first
 *   turn of a fresh environment costs. Its target guards it against regressions only; it cannot reach 1.5× (module
 *   evaluation, the store's writes before the send and the SDK's request building come on top of Bun's own start).
 *
 * The server is a raw TCP listener, so "first byte" is the first bytes read
 * off the socket, not the moment an HTTP server has parsed the headers; it
 * answers once the request is complete. Both times come from this process's
 * clock: the spawn and the socket read.
 *
 *   bun test/bench/first-byte.ts [--write-baseline]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { timeRun, trivialBinary } from "./fixtures/yardstick.ts";
import { median, ratio } from "./ratios.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = process.env.CACHET_BENCH_BINARY ?? join(ROOT, "dist", "cachet");
const WARMUP = 3;
/** Turns of each kind: with 20, the ratio's median moved by ±0.08 between runs on a shared 2-core machine. */
const RUNS = 40;
/** The ceiling of a turn in its own process: a guard against regressions (measured 3.2–4.1 on 2-core machines). */
const IN_PROCESS_GUARD = 5;

if (!(await Bun.file(BINARY).exists())) {
  console.log(`first-byte: ${BINARY} is missing; run \`npm run build:host\` first`);
  process.exit(1);
}

const ANSWER = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 0,
  model: "gpt-5",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, prompt_tokens_details: { cached_tokens: 0 } },
});
const RESPONSE = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(ANSWER)}\r\n\r\n${ANSWER}`;

let arrived: number | undefined;
const server = Bun.listen<{ received: string }>({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    open(socket) {
      socket.data = { received: "" };
    },
    data(socket, chunk) {
      arrived ??= performance.now();
      socket.data.received += chunk.toString("latin1");
      if (complete(socket.data.received)) {
        socket.data.received = "";
        socket.write(RESPONSE);
      }
    },
  },
});

/** Whether `raw` holds a whole HTTP/1.1 request (a content-length body, or a chunked one up to its last chunk). */
function complete(raw: string): boolean {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const head = raw.slice(0, end).toLowerCase();
  if (/\ntransfer-encoding:\s*chunked/.test(head)) return raw.endsWith("\r\n0\r\n\r\n");
  const length = Number(/\ncontent-length:\s*(\d+)/.exec(head)?.[1] ?? 0);
  return raw.length - (end + 4) >= length;
}

const ownHome = mkdtempSync(join(tmpdir(), "cachet-bench-"));
const defaultHome = mkdtempSync(join(tmpdir(), "cachet-bench-"));
const trivial = await trivialBinary();
const fresh: number[] = [];
const continued: number[] = [];
const whole: number[] = [];
const daemonFresh: number[] = [];
const daemonContinued: number[] = [];
const daemonWhole: number[] = [];
const daemonEarly: number[][] = [[], []];
// The default environment of a developer's machine: no CI variable, no daemon switch (the bench may run under CI).
const { CI: _ci, CACHET_DAEMON_AUTOSTART: _auto, CACHET_NO_DAEMON: _off, ...outer } = process.env;
const ownEnv = { ...outer, CACHET_HOME: ownHome, OPENAI_API_KEY: "bench", CACHET_DAEMON_AUTOSTART: "0" };
const defaultEnv = { ...outer, CACHET_HOME: defaultHome, OPENAI_API_KEY: "bench" };

/** Runs cachet once with `args` before the prompt and returns the time from its spawn to the request's first byte, and to its exit, ms. */
async function firstByteOf(env: Record<string, string | undefined>, args: string[], prompt: string): Promise<{ firstByte: number; exit: number }> {
  arrived = undefined;
  const started = performance.now();
  const proc = Bun.spawn([BINARY, ...args, "--no-stream", "-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${server.port}/v1`, prompt], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const code = await proc.exited;
  const exit = performance.now() - started;
  if (code !== 0) {
    console.log(`first-byte: the binary exited ${code}: ${await new Response(proc.stderr).text()}`);
    process.exit(1);
  }
  if (arrived === undefined) throw new Error("no request arrived");
  return { firstByte: arrived - started, exit };
}

/** `cachet daemon ACTION` in `env`'s home; its exit code. */
function daemon(env: Record<string, string | undefined>, action: string): Promise<number> {
  return Bun.spawn([BINARY, "daemon", action], { env, stdio: ["ignore", "ignore", "ignore"] }).exited;
}

let firstTurn: { firstByte: number; exit: number } | undefined;
let served = "";
try {
  for (let i = 0; i < WARMUP + RUNS; i++) {
    // A new session, then a turn that continues it with a prompt never sent before (its tokens are not memoized).
    const newSession = await firstByteOf(ownEnv, [], `hello ${i}`);
    const nextTurn = await firstByteOf(ownEnv, ["-c"], `and then ${i}?`);
    const trivialRun = await timeRun([trivial]);
    if (i < WARMUP) continue;
    fresh.push(newSession.firstByte);
    continued.push(nextTurn.firstByte);
    whole.push(trivialRun.wallMs);
  }
  if ((await daemon(ownEnv, "status")) === 0) throw new Error("a daemon was started with CACHET_DAEMON_AUTOSTART=0");
  // The default: the first turn runs in its own process and starts the daemon; the next ones go through it once it answers.
  firstTurn = await firstByteOf(defaultEnv, [], "the very first turn");
  try {
    const waitStarted = performance.now();
    while ((await daemon(defaultEnv, "status")) !== 0) {
      if (performance.now() - waitStarted > 30_000) throw new Error("the first turn started no daemon within 30 s");
    }
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const newSession = await firstByteOf(defaultEnv, [], `daemon hello ${i}`);
      const nextTurn = await firstByteOf(defaultEnv, ["-c"], `and then in the daemon ${i}?`);
      const trivialRun = await timeRun([trivial]);
      if (i < WARMUP) {
        daemonEarly[0]!.push(newSession.firstByte);
        daemonEarly[1]!.push(nextTurn.firstByte);
        continue;
      }
      daemonFresh.push(newSession.firstByte);
      daemonContinued.push(nextTurn.firstByte);
      daemonWhole.push(trivialRun.wallMs);
    }
    served = (await new Response(Bun.spawn([BINARY, "daemon", "status"], { env: defaultEnv, stdout: "pipe" }).stdout).text()).trim();
  } finally {
    await daemon(defaultEnv, "stop");
  }
} finally {
  server.stop(true);
  rmSync(ownHome, { recursive: true, force: true });
  rmSync(defaultHome, { recursive: true, force: true });
}

const td = median(daemonWhole);
console.log(`first-byte: by default, the first turn of a fresh home (its own process; it starts the daemon): first byte ${firstTurn!.firstByte.toFixed(1)} ms, exit ${firstTurn!.exit.toFixed(1)} ms`);
console.log(`first-byte: ${served}`);
console.log(`first-byte: by default, a fresh daemon's first ${WARMUP} turns of each kind, not counted: median new session ${median(daemonEarly[0]!).toFixed(1)} ms, continued ${median(daemonEarly[1]!).toFixed(1)} ms`);
for (const [label, runs] of [["new session", daemonFresh], ["continued (-c)", daemonContinued]] as const) {
  console.log(`first-byte: by default, through the daemon the first turn started, ${label}, ${RUNS} runs: median ${median(runs).toFixed(1)} ms (min ${Math.min(...runs).toFixed(1)}, max ${Math.max(...runs).toFixed(1)})`);
}
console.log(`first-byte: trivial compiled Bun program, whole run, interleaved with those turns: median ${td.toFixed(1)} ms`);
ratio("first_byte.daemon_vs_bun", median(daemonFresh) / td, 1.5);
ratio("first_byte.daemon_continued_vs_bun", median(daemonContinued) / td, 1.5);

const t = median(whole);
for (const [label, runs] of [["new session", fresh], ["continued (-c)", continued]] as const) {
  console.log(`first-byte: every turn in its own process (CACHET_DAEMON_AUTOSTART=0), ${label}, ${RUNS} runs: median ${median(runs).toFixed(1)} ms (min ${Math.min(...runs).toFixed(1)}, max ${Math.max(...runs).toFixed(1)})`);
}
console.log(`first-byte: trivial compiled Bun program, whole run, interleaved: median ${t.toFixed(1)} ms`);
// A regression guard, not the target (see the top of this file).
ratio("first_byte.vs_bun", median(fresh) / t, IN_PROCESS_GUARD);
ratio("first_byte.continued_vs_bun", median(continued) / t, IN_PROCESS_GUARD);
