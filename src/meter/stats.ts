/**
 * Ledger statistics, pure over ledger rows: tokens per category, hit rate,
 * cacheable maximum and cache efficiency, cost, savings against no caching,
 * output tokens per second, grouped by session, model, role, day or request.
 *
 * hit rate = cacheRead / (input + cacheRead + cacheWrite). Cacheable tokens
 * of a request = the longest prefix a live entry of an earlier request to the
 * same provider cache (its session's or another session's, same provider and
 * model) could serve, or what it read when it read more (an entry cachet did
 * not see written): src/session/ledger-figures.ts `cacheableOf`; shown as a
 * share of its prompt. Cache efficiency = reads / cacheable tokens, never above 100%.
 */
import { parseDuration } from "../duration.ts";
import { printable } from "../printable.ts";
import type { Config } from "../config.ts";
import { promptTokens } from "../plugin/usage.ts";
import { cacheableOf, type FigureFilter, type FigureGroupBy, type FigureSums } from "../session/ledger-figures.ts";
import { openStore, type Store } from "../session/store.ts";
import { isCachetError } from "../errors.ts";
import type { LedgerRow } from "../session/types.ts";
import type { Catalog } from "./catalog.ts";
import { dollars, formatUsd, priceFromNumber, toUsd } from "./money.ts";
import { uncachedCost } from "./pricing.ts";

/** Grouping of {@link ledgerStats}. */
export type StatsGroupBy = FigureGroupBy;

/** Token sums of a group (unknown counts contribute nothing). */
export type TokenTotals = Pick<FigureSums, "input" | "cacheRead" | "cacheWrite5m" | "cacheWrite1h" | "output" | "reasoning">;

/** Statistics of one group. Ratios are 0..1, null when undefined (no prompt tokens, nothing cacheable). */
export interface StatsGroup {
  key: string;
  requests: number;
  tokens: TokenTotals;
  /** Prompt tokens: input + cacheRead + cacheWrite5m + cacheWrite1h. */
  promptTokens: number;
  hitRate: number | null;
  /** Tokens live cache entries could have served (see {@link cacheableTokens}). */
  cacheableTokens: number;
  /** cacheableTokens / promptTokens: the share of the prompt that could have been read from the cache. */
  cacheableShare: number | null;
  cacheEfficiency: number | null;
  /** Sum of the recorded costs, USD (requests with unknown cost are left out and counted). */
  costUsd: number;
  costExact: string;
  unpricedRequests: number;
  /** Requests whose recorded cost is a flagged estimate or lower bound. */
  estimatedRequests: number;
  /**
   * What the requests would have cost with every prompt token at the input
   * price, as priced when recorded; over the requests whose cost and
   * uncached cost are both known (`savingsLeftOut` are not). Null when none is.
   */
  noCacheCostUsd: number | null;
  /** noCacheCost − cost over the same requests (negative when caching cost more); null when none is known. */
  savingsUsd: number | null;
  savingsExact: string | null;
  savingsLeftOut: number;
  /** Output tokens per second of streaming (first token to end), null without timings. */
  outputTps: number | null;
}

/** Options of {@link ledgerStats} over rows in memory. */
export interface StatsOptions {
  by?: StatsGroupBy;
  /** Prices for rows recorded before their uncached cost was stored; without them those rows are left out of savings. */
  catalog?: Catalog;
  overrides?: Config["prices"];
  /** Where the catalog lists a row's model (default: its provider id). */
  catalogRef?: CatalogRefOf;
}

/**
 * Per-request cacheable tokens in billed tokens: the cacheable maximum
 * recorded on each row by the turn pipeline (src/wire/divergence.ts
 * `liveCacheableMaximum`, with the provider's cache rules, over the
 * session's and other sessions' live entries), or the tokens read when more
 * (src/session/ledger-figures.ts `cacheableOf`). Returns a map row id →
 * tokens; 0 when unknown.
 */
export function cacheableTokens(rows: readonly LedgerRow[]): Map<string, number> {
  return new Map(rows.map((row) => [row.id, cacheableOf(row) ?? 0]));
}

/**
 * Groups rows held in memory and computes each group's statistics, groups
 * in first-seen order. `cachet stats` aggregates in SQL instead
 * (src/session/ledger-figures.ts) and shares {@link statsOf}.
 */
export function ledgerStats(rows: readonly LedgerRow[], options: StatsOptions = {}): StatsGroup[] {
  const by = options.by ?? "session";
  const groups = new Map<string, FigureSums>();
  for (const row of rows) {
    const key = groupKey(row, by);
    let sums = groups.get(key);
    if (!sums) groups.set(key, (sums = emptySums(key)));
    addRow(sums, row, options);
  }
  return [...groups.values()].map(statsOf);
}

/** Statistics of all rows as one group keyed "total". */
export function ledgerTotal(rows: readonly LedgerRow[], options: Omit<StatsOptions, "by"> = {}): StatsGroup {
  const sums = emptySums("total");
  for (const row of rows) addRow(sums, row, options);
  return statsOf(sums);
}

/**
 * `cachet stats` and the totals of `cachet cost`: the ledger's stored
 * figures summed in SQL per group, plus the total. Rows recorded before
 * figures were stored are priced once first (at the catalog in force, with
 * `config`'s price overrides and plugins: the command read it before anything else).
 */
export async function ledgerSums(store: Store, config: Config, by: StatsGroupBy, filter: FigureFilter = {}): Promise<{ groups: StatsGroup[]; total: StatsGroup }> {
  const figures = store.figures();
  if (figures.pending()) {
    const [{ loadCatalog }, { loadModelHost, catalogRefFor }] = await Promise.all([import("./catalog.ts"), import("../run/model-resolution.ts")]);
    const { catalog } = await loadCatalog();
    const catalogRef = catalogRefFor(await loadModelHost(config));
    withWriter(store, (writer) => writer.figures().backfill((row) => storedLater(row, catalog, config.prices, catalogRef)));
  }
  const sums = figures.sums(by, filter);
  const groups = sums.map(statsOf);
  // Per client, the one reading least of its prompt from the cache comes first.
  if (by === "client") groups.sort((a, b) => (a.hitRate ?? 0) - (b.hitRate ?? 0) || b.costUsd - a.costUsd);
  return { groups, total: statsOf(totalOf(sums)) };
}

/**
 * Runs `fn` on a store that can write: `store` itself, or (for a read command's
 * read-only store) the same file opened for writing. In a place cachet cannot
 * write, `fn` is skipped: the read goes on with what is stored.
 */
function withWriter(store: Store, fn: (writer: Store) => void): void {
  if (!store.readonly) return fn(store);
  let writer: Store;
  try {
    writer = openStore(store.path);
  } catch (error) {
    if (isCachetError(error) && error.code === "STORE") return;
    throw error;
  }
  try {
    fn(writer);
  } finally {
    writer.close();
  }
}

/** The sums of several groups as one group keyed "total". */
export function totalOf(groups: readonly FigureSums[]): FigureSums {
  const total = emptySums("total");
  for (const g of groups) {
    for (const k of NUMBER_SUMS) total[k] += g[k];
    total.costPico += g.costPico;
    total.noCachePico += g.noCachePico;
    total.savingsPico += g.savingsPico;
  }
  return total;
}

/** Statistics of a group from its sums. Pure. */
export function statsOf(s: FigureSums): StatsGroup {
  const prompt = s.input + s.cacheRead + s.cacheWrite5m + s.cacheWrite1h;
  const known = s.requests - s.savingsLeftOut > 0;
  // Sums are in pico-USD (12 decimals); shown in atto for the meter's one decimal format.
  const atto = (pico: bigint): bigint => pico * 1_000_000n;
  return {
    key: s.key,
    requests: s.requests,
    tokens: { input: s.input, cacheRead: s.cacheRead, cacheWrite5m: s.cacheWrite5m, cacheWrite1h: s.cacheWrite1h, output: s.output, reasoning: s.reasoning },
    promptTokens: prompt,
    hitRate: prompt === 0 ? null : s.cacheRead / prompt,
    cacheableTokens: s.cacheable,
    cacheableShare: prompt === 0 ? null : s.cacheable / prompt,
    cacheEfficiency: s.cacheable === 0 ? null : s.cacheRead / s.cacheable,
    costUsd: toUsd(atto(s.costPico)),
    costExact: formatUsd(atto(s.costPico)),
    unpricedRequests: s.unpriced,
    estimatedRequests: s.estimated,
    noCacheCostUsd: known ? toUsd(atto(s.noCachePico)) : null,
    savingsUsd: known ? toUsd(atto(s.savingsPico)) : null,
    savingsExact: known ? formatUsd(atto(s.savingsPico)) : null,
    savingsLeftOut: s.savingsLeftOut,
    outputTps: s.streamMs === 0 ? null : s.streamedOutput / (s.streamMs / 1000),
  };
}

const NUMBER_SUMS = ["requests", "input", "cacheRead", "cacheWrite5m", "cacheWrite1h", "output", "reasoning", "cacheable", "unpriced", "estimated", "savingsLeftOut", "streamedOutput", "streamMs"] as const;

function emptySums(key: string): FigureSums {
  const sums = { key, costPico: 0n, noCachePico: 0n, savingsPico: 0n } as FigureSums;
  for (const k of NUMBER_SUMS) sums[k] = 0;
  return sums;
}

/** Adds one row to a group's sums, as the SQL aggregation does. */
function addRow(sums: FigureSums, row: LedgerRow, options: StatsOptions): void {
  const u = row.usage;
  sums.requests++;
  sums.input += u.input ?? 0;
  sums.cacheRead += u.cacheRead ?? 0;
  sums.cacheWrite5m += u.cacheWrite5m ?? 0;
  sums.cacheWrite1h += u.cacheWrite1h ?? 0;
  sums.output += u.output ?? 0;
  sums.reasoning += u.reasoning ?? 0;
  // A row with no reported usage (an older cachet gave one a cacheable maximum) counts no prompt: nor any cacheable part.
  sums.cacheable += cacheableOf(row) ?? 0;
  const cost = row.costUsd === null ? null : priceFromNumber(row.costUsd);
  if (cost === null) sums.unpriced++;
  else sums.costPico += cost;
  if (row.costEstimate) sums.estimated++;
  const noCacheUsd = row.noCacheCostUsd !== undefined ? row.noCacheCostUsd : options.catalog ? storedLater(row, options.catalog, options.overrides, options.catalogRef) : null;
  if (cost === null || noCacheUsd === null) sums.savingsLeftOut++;
  else {
    const noCache = priceFromNumber(noCacheUsd);
    sums.noCachePico += noCache;
    sums.savingsPico += noCache - cost;
  }
  if (row.firstTokenAt !== null && row.finishedAt !== null && row.finishedAt > row.firstTokenAt && u.output !== undefined) {
    sums.streamedOutput += u.output;
    sums.streamMs += row.finishedAt - row.firstTokenAt;
  }
}

/**
 * The uncached cost of a row recorded before it was stored, at the catalog's
 * prices (what `LedgerFigures.backfill` stores once).
 */
export function storedLater(row: LedgerRow, catalog: Catalog, overrides: Config["prices"] = {}, catalogRef: CatalogRefOf = plainRef): number | null {
  return uncachedCost({ usage: row.usage, raw: row.rawUsage }, catalogRef(row.provider, row.model), catalog, overrides);
}

/** `provider/model` as the catalog lists it (src/run/model-resolution.ts `catalogRefFor` maps a provider to its catalog id). */
export type CatalogRefOf = (provider: string, model: string) => string;

/** The stored provider id as the catalog id (for rows of providers whose catalog id is their own). */
export const plainRef: CatalogRefOf = (provider, model) => `${provider}/${model}`;

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
    case "client":
      throw new RangeError("grouping by client needs the store's sessions: use ledgerSums");
  }
}

/**
 * Parses `--since`: a duration back from `now` (`30s`, `90m`, `1h30m`, `7d`, `2w`; `0s` is now;
 * src/duration.ts, as scenarios read them) or an ISO date that exists. Returns Unix epoch ms,
 * or undefined for an unparsable value or an impossible date (`2026-02-30`).
 */
export function parseSince(value: string, now: number = Date.now()): number | undefined {
  const ms = parseDuration(value.trim());
  if (ms !== undefined) return now - ms;
  return parseIsoDate(value.trim());
}

/**
 * An ISO 8601 date (`2026-01-31`, UTC) or date-time (`2026-01-31T12:00`,
 * `…Z`, `…+02:00`) as epoch ms; undefined for anything else, and for a date
 * that does not exist (`2026-02-30`), which Date.parse would roll over.
 */
function parseIsoDate(value: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4] ?? "0", m[5] ?? "0", m[6] ?? "0"].map(Number) as [number, number, number, number, number, number];
  const probe = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  const exists = probe.getUTCFullYear() === year && probe.getUTCMonth() === month - 1 && probe.getUTCDate() === day && probe.getUTCHours() === hour && probe.getUTCMinutes() === minute && probe.getUTCSeconds() === second;
  if (!exists) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
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
    row.costUsd === null ? "cost unknown" : `cost ${dollars(row.costUsd)}`,
    `in ${n(u.input)}`,
    `cache read ${n(u.cacheRead)}${hit}`,
    `write ${write.toLocaleString("en-US")}${(u.cacheWrite1h ?? 0) > 0 ? ` (1h ${n(u.cacheWrite1h)})` : ""}`,
    `out ${n(u.output)}${u.reasoning ? ` (reasoning ${n(u.reasoning)})` : ""}`,
  ];
  if (row.providerCostUsd !== null && row.providerCostUsd !== undefined) parts.push(`provider says ${dollars(row.providerCostUsd)}`);
  return parts.join(" · ");
}

/** A text table of stats groups and the total row. */
export function formatStats(groups: readonly StatsGroup[], total: StatsGroup): string {
  const pct = (v: number | null): string => (v === null ? "-" : `${(v * 100).toFixed(1)}%`);
  // An estimated cost makes the savings against it an estimate too: marked as `cost` marks both.
  const savings = (g: StatsGroup): string => (g.savingsExact === null ? "?" : `${g.estimatedRequests ? "~" : ""}${dollars(g.savingsExact)}${g.savingsLeftOut ? `+${g.savingsLeftOut}?` : ""}`);
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
      `${g.estimatedRequests ? "~" : ""}${dollars(g.costExact)}${g.unpricedRequests ? `+${g.unpricedRequests}?` : ""}`,
      savings(g),
      g.outputTps === null ? "-" : g.outputTps.toFixed(1),
    ]);
  }
  // Group keys (model ids, roles) are user text: escaped, so a control character cannot break the table.
  for (const row of table) row[0] = printable(row[0]!);
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return `${table.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ")).join("\n")}\n`;
}
