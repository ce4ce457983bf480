/**
 * The probe's figures, pure over the rows of a run: per call the billed
 * tokens, hit rate, cacheable maximum (src/wire/divergence.ts, with the
 * provider's cache rules), cache efficiency, cost and the cause of any miss;
 * per variant the totals (auxiliary calls included); across variants the
 * side-by-side cost forecast.
 *
 * The document holds no timestamps and no random ids (sessions and calls are
 * numbered in order), so two runs of the same scenario give the same bytes.
 */
import { priceFromNumber, toUsd, type Atto } from "../meter/money.ts";
import { promptTokens } from "../plugin/usage.ts";
import type { LedgerRow } from "../session/types.ts";
import { explain, liveCacheableMaximum, type ComparedRow } from "../wire/divergence.ts";
import type { ProbeVariantRun } from "./run-probe.ts";

/** One call of a variant. Token counts are billed tokens; null = unknown (the provider reported no usage). */
export interface ProbeCall {
  /** 1-based, in the order the calls started. */
  call: number;
  /** 1-based session number in order of first appearance (a fork is a new session). */
  session: number;
  role: string;
  status: LedgerRow["status"];
  /** Uncached input tokens. */
  input: number | null;
  cacheRead: number | null;
  /** 5-minute plus 1-hour cache writes. */
  cacheWrite: number | null;
  output: number | null;
  /** cacheRead / (input + cacheRead + cacheWrite), 0..1. */
  hitRate: number | null;
  /** Tokens the previous call of the session (for a fork's first call: the parent's last) could have left in the cache. */
  cacheableMax: number;
  /** cacheRead / cacheableMax; null when nothing was cacheable. */
  efficiency: number | null;
  /** USD; null when the model has no known price. */
  costUsd: number | null;
  /** The deliberate change before the call (`system changed`, `clock +6m`), else null. */
  change: string | null;
  /** Why the call read less than it could have (from the wire comparison), or another problem; null when it read everything. */
  note: string | null;
}

/** Sums over a variant's calls (every role). Ratios are 0..1. */
export interface ProbeTotals {
  calls: number;
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  hitRate: number | null;
  cacheableMax: number;
  /** Σ cacheRead / Σ cacheableMax over calls with something cacheable. */
  efficiency: number | null;
  /** USD, exact sum of the priced calls. */
  costUsd: number;
  /** Calls whose cost is unknown (left out of `costUsd`). */
  unpriced: number;
}

/** One model and cache setting. */
export interface ProbeVariant {
  model: string;
  cache: "auto" | "off";
  calls: ProbeCall[];
  totals: ProbeTotals;
}

/** A row of the side-by-side comparison. */
export interface ProbeComparison {
  model: string;
  cache: "auto" | "off";
  calls: number;
  hitRate: number | null;
  efficiency: number | null;
  costUsd: number;
  unpriced: number;
  /** costUsd / the cheapest variant's; null when the cheapest costs 0. */
  relative: number | null;
}

/** The probe's output document (`--json`). */
export interface ProbeReport {
  scenario: string;
  emulate: boolean;
  variants: ProbeVariant[];
  /** Present with more than one variant. */
  comparison?: ProbeComparison[];
}

/** Builds the report of a probe run. Pure. */
export function probeReport(scenario: string, emulate: boolean, runs: readonly ProbeVariantRun[]): ProbeReport {
  const variants = runs.map(variantOf);
  const report: ProbeReport = { scenario, emulate, variants };
  if (variants.length > 1) report.comparison = compare(variants);
  return report;
}

function variantOf(run: ProbeVariantRun): ProbeVariant {
  const sessions = new Map<string, number>();
  // Each session's requests so far (a fork starts with its parent's): the entries a call may read.
  const history = new Map<string, ComparedRow[]>();
  const calls: ProbeCall[] = [];
  run.rows.forEach((entry, index) => {
    const { row } = entry;
    if (!sessions.has(row.sessionId)) sessions.set(row.sessionId, sessions.size + 1);
    // The scenario's clock, not the wall clock: TTL judgements repeat exactly.
    const current: ComparedRow = { ...row, startedAt: entry.at + index };
    const parent = run.parents.get(row.sessionId);
    if (!history.has(row.sessionId)) history.set(row.sessionId, parent ? [...(history.get(parent) ?? [])] : []);
    const earlier = history.get(row.sessionId)!;
    const previous = earlier.at(-1);
    const rules = run.rulesOf(row.provider, row.model);
    // The pipeline records the figure on the row; computed here only for rows that lack it.
    const max = row.cacheableMax !== undefined ? (row.cacheableMax ?? 0) : liveCacheableMaximum(earlier, current, rules).tokens;
    const u = row.usage;
    const prompt = promptTokens(u);
    const read = u.cacheRead ?? null;
    const write = u.cacheWrite5m === undefined && u.cacheWrite1h === undefined ? null : (u.cacheWrite5m ?? 0) + (u.cacheWrite1h ?? 0);
    const efficiency = max > 0 && read !== null ? read / max : null;
    const missed = read === null || read < max || previous === undefined || max === 0;
    const causes = missed ? explain(previous, current, rules, earlier).causes.filter((c) => !c.startsWith("no miss")) : [];
    const notes = [...(entry.problem ? [entry.problem] : []), ...(row.error ? [row.error] : []), ...causes];
    calls.push({
      call: index + 1,
      session: sessions.get(row.sessionId)!,
      role: row.role,
      status: row.status,
      input: u.input ?? null,
      cacheRead: read,
      cacheWrite: write,
      output: u.output ?? null,
      hitRate: prompt ? ratio((read ?? 0) / prompt) : null,
      cacheableMax: max,
      efficiency: efficiency === null ? null : ratio(efficiency),
      costUsd: row.costUsd,
      change: entry.change,
      note: notes.length ? notes.join("; ") : null,
    });
    earlier.push(current);
  });
  return { model: run.model, cache: run.cache, calls, totals: totalsOf(calls) };
}

function totalsOf(calls: readonly ProbeCall[]): ProbeTotals {
  let input = 0;
  let read = 0;
  let write = 0;
  let output = 0;
  let max = 0;
  let readOfCacheable = 0;
  let cost: Atto = 0n;
  let unpriced = 0;
  for (const c of calls) {
    input += c.input ?? 0;
    read += c.cacheRead ?? 0;
    write += c.cacheWrite ?? 0;
    output += c.output ?? 0;
    if (c.cacheableMax > 0) {
      max += c.cacheableMax;
      readOfCacheable += c.cacheRead ?? 0;
    }
    if (c.costUsd === null) unpriced++;
    // Row costs are exact to 1e-12 USD; summed as integers so the total has no float drift.
    else cost += priceFromNumber(c.costUsd);
  }
  const prompt = input + read + write;
  return {
    calls: calls.length,
    input,
    cacheRead: read,
    cacheWrite: write,
    output,
    hitRate: prompt === 0 ? null : ratio(read / prompt),
    cacheableMax: max,
    efficiency: max === 0 ? null : ratio(readOfCacheable / max),
    costUsd: toUsd(cost * 1_000_000n),
    unpriced,
  };
}

function compare(variants: readonly ProbeVariant[]): ProbeComparison[] {
  const cheapest = Math.min(...variants.map((v) => v.totals.costUsd));
  return variants.map((v) => ({
    model: v.model,
    cache: v.cache,
    calls: v.totals.calls,
    hitRate: v.totals.hitRate,
    efficiency: v.totals.efficiency,
    costUsd: v.totals.costUsd,
    unpriced: v.totals.unpriced,
    relative: cheapest > 0 ? ratio(v.totals.costUsd / cheapest) : null,
  }));
}

/** Ratios to 4 decimals: enough to read, and stable across platforms. */
function ratio(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
