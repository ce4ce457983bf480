/**
 * The one way a benchmark reports a figure that can fail `npm run bench`: a
 * ratio against a yardstick measured in the same run (absolute times vary
 * tenfold between machines, ratios do not), checked against its target and
 * against the committed baseline ratio in test/bench/baseline.json.
 *
 * Every ratio is a cost ratio, lower is better: `measured / yardstick` for
 * times, `yardstick rate / measured rate` for throughputs.
 *
 *   import { median, ratio, skip } from "./ratios.ts";
 *   ratio("turn.anthropic.1000_vs_10", m1000 / m10, 1.3);   // prints, and fails the bench when over
 *   skip("startup.version_vs_codex.wall", "npm could not install @openai/codex (offline?)");
 *
 * Prints one line per ratio, `name: value (target ≤ X, baseline Y)`, with
 * MISSED / REGRESSED when it fails. A failure sets `process.exitCode = 1`, so
 * the bench goes on to print its other figures and exits 1 at the end (the
 * runner, test/bench/run.ts, reports it); a bench that calls `process.exit(n)`
 * itself must pass `process.exitCode ?? 0` along, not 0.
 *
 * Recording a baseline: run a bench (or `npm run bench`) with
 * `--write-baseline`; every ratio it reports is written into baseline.json
 * (other keys are kept) and only its target can fail the run.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The committed baseline: ratio name → ratio recorded on a quiet run. */
export const BASELINE_FILE = join(import.meta.dir, "baseline.json");
/** A ratio above this multiple of its baseline is a regression. */
export const REGRESSION_FACTOR = 2;

const writing = process.argv.includes("--write-baseline") || process.env.CACHET_BENCH_WRITE_BASELINE === "1";

function readBaseline(): Record<string, number> {
  return existsSync(BASELINE_FILE) ? (JSON.parse(readFileSync(BASELINE_FILE, "utf8")) as Record<string, number>) : {};
}

/**
 * Reports one ratio and judges it: fails (returns false, sets process.exitCode
 * to 1) when `value` is above `target`, above REGRESSION_FACTOR × its baseline,
 * or not a finite number. A name without a baseline is printed as such and is
 * judged by its target only.
 *
 * @param name   dotted and stable, `<bench>.<what>[.<detail>]`, e.g. "startup.version_vs_bun.wall"; the baseline key
 * @param value  the measured cost ratio (dimensionless, lower is better)
 * @param target the goal's ceiling for `value` (e.g. 1.5 for "≤ 1.5× the trivial program")
 */
export function ratio(name: string, value: number, target: number): boolean {
  const baseline = readBaseline()[name];
  const missed = !Number.isFinite(value) || value > target;
  const regressed = !writing && baseline !== undefined && value > REGRESSION_FACTOR * baseline;
  const verdicts = [missed ? "MISSED target" : "", regressed ? `REGRESSED beyond ${REGRESSION_FACTOR}× baseline` : ""].filter(Boolean);
  console.log(`${name}: ${value.toFixed(2)} (target ≤ ${target}, baseline ${baseline === undefined ? "none" : baseline})${verdicts.length ? `  ${verdicts.join(", ")}` : ""}`);
  if (writing && Number.isFinite(value)) {
    const next = { ...readBaseline(), [name]: Math.round(value * 100) / 100 };
    const sorted = Object.fromEntries(Object.entries(next).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(BASELINE_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
  }
  if (missed || regressed) process.exitCode = 1;
  return !(missed || regressed);
}

/** Reports a ratio that could not be measured in this run (a yardstick unavailable offline); not a failure. */
export function skip(name: string, reason: string): void {
  console.log(`${name}: skipped (${reason})`);
}

/** The median of samples (the upper one of an even count); throws on an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error("median of no samples");
  return [...values].sort((a, b) => a - b)[values.length >> 1]!;
}
