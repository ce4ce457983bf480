/**
 * Emulator throughput: small non-streaming requests (the four protocols in
 * turn) from a second process with bounded concurrency against an emulator
 * with a file-backed cache state, then 2,000-token cached prefixes (SQLite
 * reads and writes on every request). Prints req/s and median/p99 latency.
 * The yardstick, same client, same run: a Bun.serve that answers every request
 * with a fixed JSON body. Ratio (test/bench/ratios.ts): its req/s over the
 * emulator's for the small requests, target ≤ 3: the old absolute target,
 * 2,000 req/s, was about a third of the yardstick's 6,300 req/s when the ratio
 * was introduced (2 shared cores, load average 17). The cached figures are
 * printed for reference.
 *
 *   bun test/bench/emulator.ts [--requests 20000] [--concurrency 32]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ratio } from "./ratios.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};

const LONG = " cache".repeat(2_000);

const SMALL: [string, unknown][] = [
  ["/openai/v1/chat/completions", { model: "gpt-5", messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "Say hi." }] }],
  ["/anthropic/v1/messages", { model: "claude-sonnet-4-6", max_tokens: 64, system: "You are terse.", messages: [{ role: "user", content: "Say hi." }] }],
  ["/openai/v1/responses", { model: "gpt-5", instructions: "You are terse.", input: "Say hi." }],
  ["/google/v1beta/models/gemini-2.5-flash:generateContent", { contents: [{ role: "user", parts: [{ text: "Say hi." }] }] }],
  ["/deepseek/chat/completions", { model: "deepseek-chat", messages: [{ role: "user", content: "Say hi." }] }],
];

/** 2,000-token prefixes that hit the cache: every request reads and writes SQLite. */
const CACHED: [string, unknown][] = [
  ["/anthropic/v1/messages", { model: "claude-sonnet-4-6", max_tokens: 64, system: [{ type: "text", text: LONG, cache_control: { type: "ephemeral" } }], messages: [{ role: "user", content: "Say hi." }] }],
  ["/openai/v1/chat/completions", { model: "gpt-5", prompt_cache_key: "bench", messages: [{ role: "system", content: LONG }, { role: "user", content: "Say hi." }] }],
  ["/deepseek/chat/completions", { model: "deepseek-chat", messages: [{ role: "system", content: LONG }, { role: "user", content: "Say hi." }] }],
];

if (args[0] === "--client") await client(args[1]!, Number(args[2]), Number(args[3]), args[4] === "cached" ? CACHED : SMALL);
else await main();

async function main(): Promise<void> {
  const requests = option("requests", 20_000);
  const concurrency = option("concurrency", 32);
  const home = mkdtempSync(join(tmpdir(), "cachet-bench-"));
  const { startEmulator } = await import("../../src/emulator/index.ts");
  const emulator = await startEmulator({ env: { CACHET_HOME: home } });
  const answer = JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion", created: 0, model: "gpt-5", choices: [{ index: 0, message: { role: "assistant", content: "Hi." }, finish_reason: "stop" }], usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 } });
  const yardstick = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (request) => (await request.arrayBuffer(), new Response(answer, { headers: { "content-type": "application/json" } })) });
  const rates: Record<string, number> = {};
  for (const [kind, url] of [["yardstick", yardstick.url.origin], ["small", emulator.url], ["cached", emulator.url]] as const) {
    const bodies = kind === "cached" ? "cached" : "small";
    // Warm-up: JIT, tokenizer memo, SQLite pages.
    await runClient(url, 2_000, concurrency, bodies);
    const result = await runClient(url, requests, concurrency, bodies);
    rates[kind] = result.errors === 0 ? result.perSecond : Number.NaN;
    process.stdout.write(
      `${kind === "yardstick" ? "Bun.serve, fixed answer" : `emulator ${kind}`}: ${result.count} requests, concurrency ${concurrency}, ${result.perSecond.toFixed(0)} req/s, median ${result.medianMs.toFixed(3)} ms, p99 ${result.p99Ms.toFixed(3)} ms, errors ${result.errors}\n`,
    );
  }
  await emulator.stop();
  await yardstick.stop(true);
  ratio("emulator.small_vs_bun_serve", rates.yardstick! / rates.small!, 3);
}

async function runClient(url: string, count: number, concurrency: number, kind: "small" | "cached"): Promise<{ count: number; perSecond: number; medianMs: number; p99Ms: number; errors: number }> {
  const child = Bun.spawn([process.execPath, import.meta.path, "--client", url, String(count), String(concurrency), kind], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(child.stdout).text();
  await child.exited;
  return JSON.parse(out);
}

async function client(url: string, count: number, concurrency: number, bodies: [string, unknown][]): Promise<void> {
  const latencies = new Float64Array(count);
  let next = 0;
  let errors = 0;
  const prepared = bodies.map(([path, body]) => [`${url}${path}`, JSON.stringify(body)] as const);
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const [target, body] = prepared[i % prepared.length]!;
        const t0 = performance.now();
        const response = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
        await response.arrayBuffer();
        if (response.status !== 200) errors++;
        latencies[i] = performance.now() - t0;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort();
  process.stdout.write(JSON.stringify({ count, perSecond: count / seconds, medianMs: latencies[count >> 1], p99Ms: latencies[Math.floor(count * 0.99)], errors }));
}
