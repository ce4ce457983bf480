/**
 * Start-up benchmark of the compiled binary (dist/cachet, from `npm run build:host`).
 * Not a test: it prints figures, and exits 1 only on a gross regression, a
 * median more than 2x its committed baseline (test/bench/startup-baseline.json);
 * noise on a shared 2-core machine is real, the baseline catches regressions.
 *
 *   bun test/bench/startup.ts                   measure and compare
 *   bun test/bench/startup.ts --write-baseline  measure and record this run as the baseline
 *
 * Each case: 5 warm-up runs (page cache, disk), then 30 measured runs; wall
 * time from spawn to exit, peak RSS from the child's rusage. CACHET_HOME is a
 * fresh temp dir so no user state is read.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = process.env.CACHET_BENCH_BINARY ?? join(ROOT, "dist", "cachet");
const BASELINE = join(import.meta.dir, "startup-baseline.json");
const WARMUP = 5;
const RUNS = 30;
/** A median above this multiple of the baseline fails the run. */
const REGRESSION_RATIO = 2;

/** A measured command line and the targets for it on the reference 2-core machine. */
const CASES = [
  { name: "--version", args: ["--version"], targetMedianMs: 10, targetPeakRssMiB: 45 },
  { name: "--help", args: ["--help"], targetMedianMs: 20, targetPeakRssMiB: undefined },
] as const;

interface Figures {
  medianMs: number;
  minMs: number;
  p90Ms: number;
  peakRssMiB: number;
}

interface Baseline {
  machine: string;
  recorded: string;
  cases: Record<string, Figures>;
}

if (!existsSync(BINARY)) {
  process.stderr.write(`startup: ${BINARY} does not exist; run \`npm run build:host\` first\n`);
  process.exit(1);
}

const home = mkdtempSync(join(tmpdir(), "cachet-bench-"));
const results: Record<string, Figures> = {};
try {
  for (const c of CASES) results[c.name] = await measure(c.args);
} finally {
  rmSync(home, { recursive: true, force: true });
}

const baseline: Baseline | undefined = existsSync(BASELINE) ? JSON.parse(readFileSync(BASELINE, "utf8")) : undefined;
let regressed = false;
console.log(`startup of ${BINARY} (${RUNS} runs after ${WARMUP} warm-up, ${navigator.hardwareConcurrency} cores)`);
console.log("case         median    min    p90   peak RSS   vs baseline   target");
for (const c of CASES) {
  const r = results[c.name]!;
  const base = baseline?.cases[c.name];
  const ratio = base ? r.medianMs / base.medianMs : undefined;
  if (ratio !== undefined && ratio > REGRESSION_RATIO) regressed = true;
  const targets = [
    `median ≤ ${c.targetMedianMs} ms ${r.medianMs <= c.targetMedianMs ? "ok" : "MISSED"}`,
    c.targetPeakRssMiB === undefined ? undefined : `RSS ≤ ${c.targetPeakRssMiB} MiB ${r.peakRssMiB <= c.targetPeakRssMiB ? "ok" : "MISSED"}`,
  ].filter(Boolean);
  console.log(
    [
      c.name.padEnd(10),
      `${r.medianMs.toFixed(1)} ms`.padStart(9),
      r.minMs.toFixed(1).padStart(6),
      r.p90Ms.toFixed(1).padStart(6),
      `${r.peakRssMiB.toFixed(1)} MiB`.padStart(10),
      (ratio === undefined ? "(none)" : `${ratio.toFixed(2)}x${ratio > REGRESSION_RATIO ? " REGRESSED" : ""}`).padStart(13),
      ` ${targets.join(", ")}`,
    ].join(" "),
  );
}

if (process.argv.includes("--write-baseline")) {
  const next: Baseline = { machine: `${process.platform}-${process.arch}, ${navigator.hardwareConcurrency} cores`, recorded: new Date().toISOString().slice(0, 10), cases: results };
  writeFileSync(BASELINE, `${JSON.stringify(next, null, 2)}\n`);
  console.log(`wrote ${BASELINE}`);
} else if (regressed) {
  console.log(`startup: a median is more than ${REGRESSION_RATIO}x its baseline (${BASELINE})`);
  process.exit(1);
}

async function measure(args: readonly string[]): Promise<Figures> {
  const times: number[] = [];
  let peak = 0;
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const start = performance.now();
    const proc = Bun.spawn([BINARY, ...args], { stdin: "ignore", stdout: "ignore", stderr: "pipe", env: { ...process.env, CACHET_HOME: home, NO_COLOR: "1" } });
    const code = await proc.exited;
    const elapsed = performance.now() - start;
    if (code !== 0) {
      process.stderr.write(`startup: \`cachet ${args.join(" ")}\` exited ${code}: ${(await new Response(proc.stderr).text()).trim()}\n`);
      process.exit(1);
    }
    if (i < WARMUP) continue;
    times.push(elapsed);
    peak = Math.max(peak, proc.resourceUsage()?.maxRSS ?? 0);
  }
  times.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    medianMs: round(quantile(times, 0.5)),
    minMs: round(times[0]!),
    p90Ms: round(quantile(times, 0.9)),
    peakRssMiB: round(peak / 1024 / 1024),
  };
}

function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}
