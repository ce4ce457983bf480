/**
 * `cachet proxy` overhead: small non-streamed exchanges (the four protocols
 * in turn) from a client process, straight to an emulator and through the
 * compiled `cachet proxy --upstream EMULATOR`, in the same run.
 * - Throughput: concurrency 32, direct then proxied. Ratio (test/bench/ratios.ts): direct req/s
 *   over proxied req/s, target ≤ 2.5: the old absolute target, ≥ 1,000 req/s through the
 *   proxy, against the 2,560 req/s direct when the ratio was introduced (2 shared cores,
 *   load average 17; the proxy then made 620 req/s, a ratio of 4.1).
 * - Added latency: one request at a time, direct and proxied alternating, the
 *   median of each. Ratio: proxied median over direct median, target ≤ 3.5: the old
 *   target, ≤ 2 ms added, over the 0.81 ms direct median of that run.
 * Every proxied exchange must be recorded (counted once the proxy has stopped).
 * The machine is shared: the load average is printed beside the figures.
 *
 *   bun test/bench/proxy.ts [--requests 10000] [--concurrency 32] [--latency 1000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ratio } from "./ratios.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};

const SMALL: [string, unknown][] = [
  ["/v1/messages", { model: "claude-sonnet-4-6", max_tokens: 64, system: "You are terse.", messages: [{ role: "user", content: "Say hi." }] }],
  ["/v1/chat/completions", { model: "gpt-5", messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "Say hi." }] }],
  ["/v1/responses", { model: "gpt-5", instructions: "You are terse.", input: "Say hi." }],
  ["/v1beta/models/gemini-2.5-flash:generateContent", { contents: [{ role: "user", parts: [{ text: "Say hi." }] }] }],
];

type Result = { count: number; perSecond: number; medianMs: number; p99Ms: number; errors: number };

if (args[0] === "--client") await client(args[1]!, args[2]!, Number(args[3]), Number(args[4]));
else await main();

async function main(): Promise<void> {
  const requests = option("requests", 10_000);
  const concurrency = option("concurrency", 32);
  const latencyCount = option("latency", 1_000);
  const home = mkdtempSync(join(tmpdir(), "cachet-bench-proxy-"));
  const { startEmulator } = await import("../../src/emulator/index.ts");
  const emulator = await startEmulator({ env: { CACHET_HOME: home }, statePath: null });
  const binary = join(import.meta.dir, "..", "..", "dist", "cachet");
  const proxy = Bun.spawn([binary, "proxy", "--upstream", emulator.url, "--quiet"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: home, CACHET_HOME: home },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = proxy.stdout.getReader();
  const { value } = await reader.read();
  const proxyUrl = new TextDecoder().decode(value).split("\n")[0]!;
  const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
  process.stdout.write(`load average before: ${load()} (2 cores shared; figures are noisy)\n`);

  // Warm-up: JIT, SDK loading in the proxy's usage reader, tokenizer memo, SQLite pages.
  await run("throughput", emulator.url, proxyUrl, 2_000, concurrency);
  const direct = await run("throughput", emulator.url, emulator.url, requests, concurrency);
  const cpuBefore = cpuSeconds(proxy.pid);
  const proxied = await run("throughput", emulator.url, proxyUrl, requests, concurrency);
  const cpuPerExchange = ((cpuSeconds(proxy.pid) - cpuBefore) * 1000) / requests;
  const latency = await run("latency", emulator.url, proxyUrl, latencyCount, 1);
  const loadAfter = load();

  proxy.kill("SIGTERM");
  await proxy.exited;
  const { openStore } = await import("../../src/session/store.ts");
  const store = openStore(join(home, "cachet.db"));
  const recorded = store.ledger().length;
  store.close();
  await emulator.stop();
  rmSync(home, { recursive: true, force: true });

  const expected = 2_000 + requests + latencyCount;
  const added = latency.proxied.medianMs - latency.direct.medianMs;
  process.stdout.write(
    [
      `direct:  ${direct.direct.count} requests, concurrency ${concurrency}, ${direct.direct.perSecond.toFixed(0)} req/s, median ${direct.direct.medianMs.toFixed(3)} ms, p99 ${direct.direct.p99Ms.toFixed(3)} ms, errors ${direct.direct.errors}`,
      `proxied: ${proxied.proxied.count} requests, concurrency ${concurrency}, ${proxied.proxied.perSecond.toFixed(0)} req/s (${((proxied.proxied.perSecond / direct.direct.perSecond) * 100).toFixed(0)}% of direct), median ${proxied.proxied.medianMs.toFixed(3)} ms, p99 ${proxied.proxied.p99Ms.toFixed(3)} ms, errors ${proxied.proxied.errors}`,
      `proxy process CPU: ${cpuPerExchange.toFixed(3)} ms per exchange (forwarding and recording)`,
      `latency, one at a time (${latencyCount} each, alternating): direct median ${latency.direct.medianMs.toFixed(3)} ms, proxied median ${latency.proxied.medianMs.toFixed(3)} ms, added ${added.toFixed(3)} ms`,
      `recorded: ${recorded} of ${expected} proxied exchanges in the ledger`,
      `load average after: ${loadAfter}`,
      "",
    ].join("\n"),
  );
  ratio("proxy.throughput_direct_vs_proxied", direct.direct.perSecond / proxied.proxied.perSecond, 2.5);
  ratio("proxy.latency_proxied_vs_direct", latency.proxied.medianMs / latency.direct.medianMs, 3.5);
  // A lost ledger row or a failed exchange fails the bench whatever the figures.
  if (recorded !== expected || proxied.proxied.errors > 0) process.exitCode = 1;
}

/** CPU time (user + system) a process has used, seconds (Linux /proc; NaN elsewhere). */
function cpuSeconds(pid: number): number {
  try {
    const fields = require("node:fs").readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Runs the client process; `proxied` and `direct` are the same result unless the mode alternates. */
async function run(mode: "throughput" | "latency", directUrl: string, url: string, count: number, concurrency: number): Promise<{ direct: Result; proxied: Result }> {
  const child = Bun.spawn([process.execPath, import.meta.path, "--client", mode === "latency" ? `${directUrl},${url}` : url, mode, String(count), String(concurrency)], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(child.stdout).text();
  await child.exited;
  const parsed = JSON.parse(out) as Result[];
  return { direct: parsed[0]!, proxied: parsed[1] ?? parsed[0]! };
}

async function client(urls: string, mode: string, count: number, concurrency: number): Promise<void> {
  const targets = urls.split(",");
  const prepared = SMALL.map(([path, body]) => [path, JSON.stringify(body)] as const);
  const send = async (root: string, i: number) => {
    const [path, body] = prepared[i % prepared.length]!;
    const t0 = performance.now();
    const response = await fetch(`${root}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "bench-key" }, body });
    await response.arrayBuffer();
    return { ms: performance.now() - t0, ok: response.status === 200 };
  };
  if (mode === "latency") {
    // Alternating, so both see the same background load.
    const latencies = targets.map(() => [] as number[]);
    const errors = targets.map(() => 0);
    for (let i = 0; i < count * targets.length; i++) {
      const which = i % targets.length;
      const { ms, ok } = await send(targets[which]!, i >> 1);
      latencies[which]!.push(ms);
      if (!ok) errors[which]!++;
    }
    process.stdout.write(JSON.stringify(latencies.map((list, k) => summary(list, errors[k]!, 0))));
    return;
  }
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const { ms, ok } = await send(targets[0]!, next++);
        latencies.push(ms);
        if (!ok) errors++;
      }
    }),
  );
  process.stdout.write(JSON.stringify([summary(latencies, errors, (performance.now() - start) / 1000)]));
}

function summary(latencies: number[], errors: number, seconds: number): Result {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { count: sorted.length, perSecond: seconds > 0 ? sorted.length / seconds : 0, medianMs: sorted[sorted.length >> 1]!, p99Ms: sorted[Math.floor(sorted.length * 0.99)]!, errors };
}
