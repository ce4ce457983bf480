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
 * Then the same two kinds of turn through the resident daemon (`cachet daemon
 * run` on the bench's home, warmed with a few turns first): the client's start,
 * the socket hop and the warm daemon's work before the request.
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
const RUNS = 20;

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

const home = mkdtempSync(join(tmpdir(), "cachet-bench-"));
const trivial = await trivialBinary();
const fresh: number[] = [];
const continued: number[] = [];
const whole: number[] = [];
const daemonFresh: number[] = [];
const daemonContinued: number[] = [];
const daemonWhole: number[] = [];
// The cold turns stay cold: a turn that finds no daemon would start one (src/daemon/autostart.ts) for the next.
const env = { ...process.env, CACHET_HOME: home, OPENAI_API_KEY: "bench", CACHET_DAEMON_AUTOSTART: "0" };

/** Runs cachet once with `args` before the prompt and returns the time from its spawn to the request's first byte, ms. */
async function firstByteOf(args: string[], prompt: string): Promise<number> {
  arrived = undefined;
  const started = performance.now();
  const proc = Bun.spawn([BINARY, ...args, "--no-stream", "-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${server.port}/v1`, prompt], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const code = await proc.exited;
  if (code !== 0) {
    console.log(`first-byte: the binary exited ${code}: ${await new Response(proc.stderr).text()}`);
    process.exit(1);
  }
  if (arrived === undefined) throw new Error("no request arrived");
  return arrived - started;
}

try {
  for (let i = 0; i < WARMUP + RUNS; i++) {
    // A new session, then a turn that continues it with a prompt never sent before (its tokens are not memoized).
    const newSession = await firstByteOf([], `hello ${i}`);
    const nextTurn = await firstByteOf(["-c"], `and then ${i}?`);
    const trivialRun = await timeRun([trivial]);
    if (i < WARMUP) continue;
    fresh.push(newSession);
    continued.push(nextTurn);
    whole.push(trivialRun.wallMs);
  }
  // The daemon: started in the foreground on the same home, serving once its socket answers.
  const daemon = Bun.spawn([BINARY, "daemon", "run"], { env, stdio: ["ignore", "ignore", "ignore"] });
  try {
    while ((await Bun.spawn([BINARY, "daemon", "status"], { env, stdio: ["ignore", "ignore", "ignore"] }).exited) !== 0) {
      if (daemon.exitCode !== null) throw new Error(`cachet daemon run exited ${daemon.exitCode}`);
    }
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const newSession = await firstByteOf([], `daemon hello ${i}`);
      const nextTurn = await firstByteOf(["-c"], `and then in the daemon ${i}?`);
      const trivialRun = await timeRun([trivial]);
      if (i < WARMUP) continue;
      daemonFresh.push(newSession);
      daemonContinued.push(nextTurn);
      daemonWhole.push(trivialRun.wallMs);
    }
    const served = await new Response(Bun.spawn([BINARY, "daemon", "status"], { env, stdout: "pipe" }).stdout).text();
    console.log(`first-byte: ${served.trim()}`);
  } finally {
    await Bun.spawn([BINARY, "daemon", "stop"], { env, stdio: ["ignore", "ignore", "ignore"] }).exited;
    daemon.kill();
  }
} finally {
  server.stop(true);
  rmSync(home, { recursive: true, force: true });
}

const t = median(whole);
for (const [label, runs] of [["new session", fresh], ["continued (-c)", continued]] as const) {
  console.log(`first-byte: ${label}, process start → first request byte, ${RUNS} runs: median ${median(runs).toFixed(1)} ms (min ${Math.min(...runs).toFixed(1)}, max ${Math.max(...runs).toFixed(1)})`);
}
console.log(`first-byte: trivial compiled Bun program, whole run, interleaved: median ${t.toFixed(1)} ms`);
ratio("first_byte.vs_bun", median(fresh) / t, 1.5);
ratio("first_byte.continued_vs_bun", median(continued) / t, 1.5);

const td = median(daemonWhole);
for (const [label, runs] of [["new session", daemonFresh], ["continued (-c)", daemonContinued]] as const) {
  console.log(`first-byte: through the daemon, ${label}, ${RUNS} runs: median ${median(runs).toFixed(1)} ms (min ${Math.min(...runs).toFixed(1)}, max ${Math.max(...runs).toFixed(1)})`);
}
console.log(`first-byte: trivial compiled Bun program, interleaved with the daemon's turns: median ${td.toFixed(1)} ms`);
ratio("first_byte.daemon_vs_bun", median(daemonFresh) / td, 1.5);
ratio("first_byte.daemon_continued_vs_bun", median(daemonContinued) / td, 1.5);
