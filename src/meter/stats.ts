/**
 * Ledger statistics, pure over ledger rows: tokens per category, hit rate,
 * cacheable maximum and cache efficiency, cost, savings against no caching,
 * output tokens per second, grouped by session, model, role, day or request.
 *
 * hit rate = cacheRead / (input + cacheRead + cacheWrite). Cacheable maximum
 * of a request = the tokens of the longest chain prefix it shares with the
 * previous request of its session (equal prefix hashes), as a share of its
 * prompt. Cache efficiency = hit rate / cacheable maximum (= reads / cacheable tokens).
 */
import type { Config } from "../config.ts";
import { promptTokens, type Usage } from "../plugin/usage.ts";
import type { LedgerRow } from "../session/types.ts";
import type { Catalog } from "./catalog.ts";
import { formatUsd, priceFromNumber, toUsd, type Atto } from "./money.ts";
import { priceUsage, resolvePrice } from "./pricing.ts";

/** Grouping of {@link ledgerStats}. */
export type StatsGroupBy = "session" | "model" | "role" | "day" | "request";

/** Token sums of a group (unknown counts contribute nothing). */
export interface TokenTotals {
  input: number;
  cacheRead: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  output: number;
  reasoning: number;
}

/** Statistics of one group. Ratios are 0..1, null when undefined (no prompt tokens, nothing cacheable). */
export interface StatsGroup {
  key: string;
  requests: number;
  tokens: TokenTotals;
  /** Prompt tokens: input + cacheRead + cacheWrite5m + cacheWrite1h. */
  promptTokens: number;
  hitRate: number | null;
  /** Tokens the previous request of each session could have left in the cache. */
  cacheableTokens: number;
  /** cacheableTokens / promptTokens: the share of the prompt that could have been read from the cache. */
  cacheableShare: number | null;
  cacheEfficiency: number | null;
  /** Sum of the recorded costs, USD (requests with unknown cost are left out and counted). */
  costUsd: number;
  costExact: string;
  unpricedRequests: number;
  /** What the same requests would have cost with every prompt token at the input price; null if any could not be priced. */
  noCacheCostUsd: number | null;
  /** noCacheCost − cost at current prices; null when unknown. */
  savingsUsd: number | null;
  /** Output tokens per second of streaming (first token to end), null without timings. */
  outputTps: number | null;
}

/** Options of {@link ledgerStats}. */
export interface StatsOptions {
  by?: StatsGroupBy;
  /** Prices for the no-caching comparison; without them savings are null. */
  catalog?: Catalog;
  overrides?: Config["prices"];
}

/**
 * Per-request cacheable maximum in billed tokens, as recorded on each row by
 * the turn pipeline (src/wire/divergence.ts `cacheableMaximum`, with the
 * provider's cache rules). Returns a map row id → tokens; 0 when unknown.
 */
export function cacheableTokens(rows: readonly LedgerRow[]): Map<string, number> {
  return new Map(rows.map((row) => [row.id, row.cacheableMax ?? 0]));
}

/** Groups the rows and computes each group's statistics, groups in first-seen order. */
export function ledgerStats(rows: readonly LedgerRow[], options: StatsOptions = {}): StatsGroup[] {
  const by = options.by ?? "session";
  const cacheable = cacheableTokens(rows);
  const groups = new Map<string, LedgerRow[]>();
  for (const row of rows) {
    const key = groupKey(row, by);
    const list = groups.get(key);
    if (list) list.push(row);
    else groups.set(key, [row]);
  }
  return [...groups].map(([key, list]) => summarize(key, list, cacheable, options));
}

/** Statistics of all rows as one group keyed "total". */
export function ledgerTotal(rows: readonly LedgerRow[], options: Omit<StatsOptions, "by"> = {}): StatsGroup {
  return summarize("total", rows, cacheableTokens(rows), options);
}

function summarize(key: string, rows: readonly LedgerRow[], cacheable: Map<string, number>, options: StatsOptions): StatsGroup {
  const tokens: TokenTotals = { input: 0, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 0, reasoning: 0 };
  let cost: Atto = 0n;
  let unpriced = 0;
  let cacheableSum = 0;
  let streamedOutput = 0;
  let streamMs = 0;
  let noCache: Atto | null = options.catalog ? 0n : null;
  let actual: Atto = 0n;
  for (const row of rows) {
    const u = row.usage;
    for (const k of Object.keys(tokens) as (keyof TokenTotals)[]) tokens[k] += u[k] ?? 0;
    if (row.costUsd === null) unpriced++;
    else cost += priceFromNumber(row.costUsd);
    cacheableSum += cacheable.get(row.id) ?? 0;
    if (row.firstTokenAt !== null && row.finishedAt !== null && row.finishedAt > row.firstTokenAt && u.output !== undefined) {
      streamedOutput += u.output;
      streamMs += row.finishedAt - row.firstTokenAt;
    }
    if (noCache !== null && options.catalog) {
      const pair = pricePair(row, options.catalog, options.overrides);
      if (pair === null) noCache = null;
      else {
        noCache += pair.noCache;
        actual += pair.actual;
      }
    }
  }
  const prompt = tokens.input + tokens.cacheRead + tokens.cacheWrite5m + tokens.cacheWrite1h;
  const hitRate = prompt === 0 ? null : tokens.cacheRead / prompt;
  // Row costs are summed in pico-USD (12 decimals); shown in atto for a uniform format.
  const costAtto = cost * 1_000_000n;
  return {
    key,
    requests: rows.length,
    tokens,
    promptTokens: prompt,
    hitRate,
    cacheableTokens: cacheableSum,
    cacheableShare: prompt === 0 ? null : cacheableSum / prompt,
    cacheEfficiency: cacheableSum === 0 ? null : tokens.cacheRead / cacheableSum,
    costUsd: toUsd(costAtto),
    costExact: formatUsd(costAtto),
    unpricedRequests: unpriced,
    noCacheCostUsd: noCache === null ? null : toUsd(noCache),
    savingsUsd: noCache === null ? null : toUsd(noCache - actual),
    outputTps: streamMs === 0 ? null : streamedOutput / (streamMs / 1000),
  };
}

/** The request priced at current prices as billed, and with every prompt token uncached. */
function pricePair(row: LedgerRow, catalog: Catalog, overrides: Config["prices"]): { actual: Atto; noCache: Atto } | null {
  const modelId = `${row.provider}/${row.model}`;
  const resolved = resolvePrice(catalog, modelId, overrides);
  const prompt = promptTokens(row.usage);
  if (!resolved || prompt === undefined) return null;
  const uncached: Usage = { input: prompt, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: row.usage.output, reasoning: row.usage.reasoning };
  const actual = priceUsage(row.usage, resolved, modelId).costAtto;
  const noCache = priceUsage(uncached, resolved, modelId).costAtto;
  return actual === null || noCache === null ? null : { actual, noCache };
}

function groupKey(row: LedgerRow, by: StatsGroupBy): string {
  switch (by) {
    case "session":
      return row.sessionId;
    case "model":
      return `${row.provider}/${row.model}`;
    case "role":
      return row.role;
    case "day":
      return new Date(row.startedAt).toISOString().slice(0, 10);
    case "request":
      return row.id;
  }
}

/**
 * Parses `--since`: a duration back from `now` (`90m`, `36h`, `7d`, `2w`) or
 * an ISO date. Returns Unix epoch ms, or undefined for an unparsable value.
 */
export function parseSince(value: string, now: number = Date.now()): number | undefined {
  const match = /^(\d+)\s*([mhdw])$/.exec(value.trim());
  if (match) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[match[2] as "m" | "h" | "d" | "w"];
    return now - Number(match[1]) * unit;
  }
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : date;
}

/**
 * The one-line cost summary printed on stderr after a run, e.g.
 * `cost $0.005615 · in 86 · cache read 1,920 (96% hit) · write 0 · out 300`.
 * Unknown cost reads "cost unknown"; a provider-reported cost is shown beside.
 */
export function formatCostLine(row: Pick<LedgerRow, "usage" | "costUsd" | "providerCostUsd">): string {
  const u = row.usage;
  const n = (value: number | undefined): string => (value === undefined ? "?" : value.toLocaleString("en-US"));
  const prompt = promptTokens(u);
  const hit = prompt && prompt > 0 && u.cacheRead !== undefined ? ` (${Math.round(((u.cacheRead ?? 0) / prompt) * 100)}% hit)` : "";
  const write = (u.cacheWrite5m ?? 0) + (u.cacheWrite1h ?? 0);
  const parts = [
    row.costUsd === null ? "cost unknown" : `cost $${formatUsd(priceFromNumber(row.costUsd) * 1_000_000n)}`,
    `in ${n(u.input)}`,
    `cache read ${n(u.cacheRead)}${hit}`,
    `write ${write.toLocaleString("en-US")}${(u.cacheWrite1h ?? 0) > 0 ? ` (1h ${n(u.cacheWrite1h)})` : ""}`,
    `out ${n(u.output)}${u.reasoning ? ` (reasoning ${n(u.reasoning)})` : ""}`,
  ];
  if (row.providerCostUsd !== null && row.providerCostUsd !== undefined) parts.push(`provider says $${row.providerCostUsd}`);
  return parts.join(" · ");
}

/** A text table of stats groups and the total row. */
export function formatStats(groups: readonly StatsGroup[], total: StatsGroup): string {
  const pct = (v: number | null): string => (v === null ? "-" : `${(v * 100).toFixed(1)}%`);
  const usd = (v: number | null): string => (v === null ? "?" : `$${v}`);
  const table = [["group", "reqs", "input", "cache read", "write 5m", "write 1h", "output", "hit", "cacheable", "efficiency", "cost", "savings", "tok/s"]];
  for (const g of [...groups, total]) {
    table.push([
      g.key,
      String(g.requests),
      String(g.tokens.input),
      String(g.tokens.cacheRead),
      String(g.tokens.cacheWrite5m),
      String(g.tokens.cacheWrite1h),
      String(g.tokens.output),
      pct(g.hitRate),
      pct(g.cacheableShare),
      pct(g.cacheEfficiency),
      `$${g.costExact}${g.unpricedRequests ? `+${g.unpricedRequests}?` : ""}`,
      usd(g.savingsUsd),
      g.outputTps === null ? "-" : g.outputTps.toFixed(1),
    ]);
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return `${table.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ")).join("\n")}\n`;
}
