/**
 * Benchmark: from process start to the first byte of the request arriving at
 * a loopback server speaking the OpenAI chat protocol (`cachet --no-stream -m
 * openai/gpt-5 --base-url … hello`, stdin closed), against the whole run of a
 * trivial compiled Bun program (fixtures/yardstick.ts), interleaved in the same
 * run. Target: ≤ 1.5× (issue 18).
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
const firstByte: number[] = [];
const whole: number[] = [];
try {
  for (let i = 0; i < WARMUP + RUNS; i++) {
    arrived = undefined;
    const started = performance.now();
    const proc = Bun.spawn([BINARY, "--no-stream", "-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${server.port}/v1`, "hello"], {
      env: { ...process.env, CACHET_HOME: home, OPENAI_API_KEY: "bench" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const code = await proc.exited;
    if (code !== 0) {
      console.log(`first-byte: the binary exited ${code}: ${await new Response(proc.stderr).text()}`);
      process.exit(1);
    }
    if (arrived === undefined) throw new Error("no request arrived");
    const trivialRun = await timeRun([trivial]);
    if (i < WARMUP) continue;
    firstByte.push(arrived - started);
    whole.push(trivialRun.wallMs);
  }
} finally {
  server.stop(true);
  rmSync(home, { recursive: true, force: true });
}

const m = median(firstByte);
const t = median(whole);
console.log(`first-byte: process start → first request byte, ${RUNS} runs: median ${m.toFixed(1)} ms (min ${Math.min(...firstByte).toFixed(1)}, max ${Math.max(...firstByte).toFixed(1)})`);
console.log(`first-byte: trivial compiled Bun program, whole run, interleaved: median ${t.toFixed(1)} ms`);
ratio("first_byte.vs_bun", m / t, 1.5);
