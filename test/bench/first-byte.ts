/**
 * Benchmark: from process start to the first request byte arriving at a
 * loopback server speaking the OpenAI chat protocol (target: median ≤ 30 ms).
 * The server notes when each request arrives; the same process spawns the
 * compiled binary, so both times come from one clock.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = join(ROOT, "dist", "cachet");
const RUNS = 20;
const TARGET_MS = 30;

if (!(await Bun.file(BINARY).exists())) {
  console.log("first-byte: dist/cachet is missing; run `npm run build:host` first");
  process.exit(1);
}

let arrived: number | undefined;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch() {
    arrived ??= performance.now();
    const body = {
      id: "chatcmpl-bench",
      object: "chat.completion",
      created: 0,
      model: "gpt-5",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, prompt_tokens_details: { cached_tokens: 0 } },
    };
    return Response.json(body);
  },
});

const home = mkdtempSync(join(tmpdir(), "cachet-bench-"));
const samples: number[] = [];
try {
  for (let i = 0; i < RUNS + 2; i++) {
    arrived = undefined;
    const started = performance.now();
    const proc = Bun.spawn([BINARY, "--no-stream", "-m", "openai/gpt-5", "--base-url", `${server.url.origin}/v1`, "hello"], {
      env: { ...process.env, CACHET_HOME: home, OPENAI_API_KEY: "bench" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const code = await proc.exited;
    if (code !== 0) {
      console.log(`first-byte: the binary exited ${code}: ${await new Response(proc.stderr).text()}`);
      process.exit(1);
    }
    if (arrived === undefined) throw new Error("no request arrived");
    if (i >= 2) samples.push(arrived - started); // two warm-up runs
  }
} finally {
  server.stop(true);
  rmSync(home, { recursive: true, force: true });
}

samples.sort((a, b) => a - b);
const median = samples[samples.length >> 1]!;
console.log(`first-byte: process start → first request byte, ${RUNS} runs: median ${median.toFixed(1)} ms, min ${samples[0]!.toFixed(1)} ms, max ${samples.at(-1)!.toFixed(1)} ms (target ≤ ${TARGET_MS} ms, ratio ${(median / TARGET_MS).toFixed(2)})`);
process.exit(median > TARGET_MS * 2 ? 1 : 0);
