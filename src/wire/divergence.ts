/**
 * Comparing a request with the previous one of its session at the wire
 * level: the cacheable maximum (what the previous request could have left in
 * the cache for this one) and, for `cachet why`, the first divergent node and
 * the cause of every miss.
 */
import type { CacheRules } from "../plugin/provider.ts";
import { promptTokens } from "../plugin/usage.ts";
import type { ChainLink, LedgerRow } from "../session/types.ts";
import { sharedPrefixLength, tokenTotal } from "./prefix-chain.ts";

/** Rules used when a provider declares none: automatic prefix caching from 1,024 tokens. */
export const DEFAULT_CACHE_RULES: CacheRules = { mode: "prefix", minimumTokens: 1_024, granularity: 1 };

/** The parts of a ledger row the comparison reads. */
export type ComparedRow = Pick<LedgerRow, "chain" | "usage" | "startedAt" | "affinityKey" | "cacheMode" | "cacheTtl" | "provider" | "model" | "prefixVersion"> &
  Partial<Pick<LedgerRow, "messageId" | "id" | "sessionId">>;

/** Relative error of cachet's per-node token estimates against a provider's count (other tokenizers, wrapping). */
const ESTIMATE_ERROR = 0.05;

/** Earlier requests the live-entry search looks at, newest first; entries of older ones are not counted. */
export const LIVE_ENTRY_ROWS = 32;

/** The cacheable maximum over every live entry, and the request that wrote the best one. */
export interface LiveMaximum {
  /** Tokens, in the provider's counting (see {@link cacheableMaximum}). */
  tokens: number;
  /** The earlier request whose entry could serve the most; null when none could serve anything. */
  from: ComparedRow | null;
}

/** Other sessions whose latest requests the live-entry search looks at (see {@link otherSessionsSince}). */
export const OTHER_SESSIONS = 8;

/** How far back other sessions' requests are looked for when the provider declares no TTL: the longest retention providers.md lists (OpenAI `24h`). */
const UNDECLARED_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The earliest start (Unix epoch ms) of another session's request whose
 * entry can still be live when `current` starts: the provider's longest TTL
 * before it, or {@link UNDECLARED_TTL_MS} when its rules declare none. A
 * later request that refreshed an older entry is itself in that window.
 */
export function otherSessionsSince(current: Pick<ComparedRow, "startedAt">, rules: CacheRules): number {
  const ttl = rules.ttlMs;
  const longest = ttl ? Math.max(ttl["5m"] ?? 0, ttl["1h"] ?? 0, ttl.default ?? 0) : 0;
  return current.startedAt - (longest > 0 ? longest : UNDECLARED_TTL_MS);
}

/**
 * The cacheable maximum of `current` = the longest prefix any still-live
 * entry of an earlier request to the same provider cache could serve: the
 * best {@link cacheableMaximum} over the last {@link LIVE_ENTRY_ROWS}
 * requests of the session (`earlier`, oldest first) and the latest requests
 * of other sessions to the same provider and model (`others`, oldest first:
 * a provider's cache is shared by every session of an account, so a new
 * session's first request can read what another one wrote), whose entries
 * have not expired. An entry lives for the provider's TTL after the last
 * request that wrote or could have read it (a later request repeating its
 * whole written prefix); providers that declare no TTL keep every entry. A
 * provider then reports no more than this (efficiency ≤ 100%) unless a
 * request cachet did not record (another client's) wrote the entry.
 */
export function liveCacheableMaximum(earlier: readonly ComparedRow[], current: ComparedRow, rules: CacheRules, others: readonly ComparedRow[] = []): LiveMaximum {
  const own = earlier.slice(-LIVE_ENTRY_ROWS);
  const recent = others.length === 0 ? own : [...own, ...others].sort((a, b) => a.startedAt - b.startedAt);
  let best: LiveMaximum = { tokens: 0, from: null };
  for (let i = recent.length - 1; i >= 0; i--) {
    const row = recent[i]!;
    if (!isLive(row, recent.slice(i + 1), current, rules)) continue;
    const tokens = cacheableMaximum(row, current, rules);
    if (tokens > best.tokens) best = { tokens, from: row };
  }
  return best;
}

/** True when `row`'s entries are still alive when `current` starts (later requests repeating them refresh them). */
function isLive(row: ComparedRow, later: readonly ComparedRow[], current: ComparedRow, rules: CacheRules): boolean {
  // Within the shortest TTL the provider has, an entry is live whichever TTL it was written with.
  if (!rules.ttlMs || current.startedAt - row.startedAt <= shortestTtl(rules.ttlMs)) return true;
  const ttl = ttlOf(row, rules);
  if (ttl === undefined || current.startedAt - row.startedAt <= ttl) return true;
  const written = writtenLength(row.chain, rules);
  let touched = row.startedAt;
  for (const next of later) if (written > 0 && sharedPrefixLength(row.chain, next.chain) >= written) touched = Math.max(touched, next.startedAt);
  return current.startedAt - touched <= ttl;
}

/** Where the previous request's cache entries end, in chain links. */
export function writtenLength(previous: readonly ChainLink[], rules: CacheRules): number {
  if (rules.mode === "breakpoints") {
    // Each of a turn's comparisons with the recent rows asks again: found once per chain.
    let written = breakpointEnds.get(previous);
    if (written === undefined || written.links !== previous.length) {
      written = { links: previous.length, end: lastBreakpointEnd(previous) };
      breakpointEnds.set(previous, written);
    }
    return written.end;
  }
  // The overlay is volatile: a prefix cache keeps it, but no later request starts with it.
  let end = previous.length;
  while (end > 0 && previous[end - 1]!.kind === "overlay") end--;
  return end;
}

function lastBreakpointEnd(previous: readonly ChainLink[]): number {
  for (let i = previous.length - 1; i >= 0; i--) if (previous[i]!.breakpoint) return i + 1;
  return 0;
}

/**
 * The cacheable maximum of `current` after `previous`, in the provider's
 * token counting. When `current` starts with everything the previous request
 * cached, the figure comes from the previous request's billed usage (exact);
 * otherwise the billed prompt is apportioned by the per-node estimates.
 * Rounded down to the provider's granularity; 0 below its minimum.
 */
export function cacheableMaximum(previous: ComparedRow | null | undefined, current: ComparedRow, rules: CacheRules): number {
  if (!previous || previous.provider !== current.provider || previous.model !== current.model) return 0;
  const written = writtenLength(previous.chain, rules);
  const shared = sharedPrefixLength(previous.chain, current.chain);
  const billedWritten =
    rules.mode === "breakpoints"
      ? (previous.usage.cacheRead ?? 0) + (previous.usage.cacheWrite5m ?? 0) + (previous.usage.cacheWrite1h ?? 0)
      : promptTokens(previous.usage);
  // Below the minimum the previous request read and wrote nothing: there is no entry to read.
  if (rules.mode === "breakpoints" && billedWritten === 0) return 0;
  const usable = rules.mode === "breakpoints" ? deepestBreakpoint(previous.chain, Math.min(shared, written)) : Math.min(written, shared);
  if (usable === 0) return 0;
  const estimate = (from: number, to: number) => tokensBefore(previous.chain, to) - tokensBefore(previous.chain, from);
  let tokens: number;
  if (billedWritten !== undefined && billedWritten > 0) {
    // Exact when this request starts with all the previous one cached (the
    // volatile tail, an overlay, is then the only estimated part); otherwise
    // the billed figure is apportioned by the per-node estimates.
    const tail = rules.mode === "breakpoints" ? 0 : estimate(written, previous.chain.length);
    const writtenEstimate = rules.mode === "breakpoints" ? estimate(0, written) : estimate(0, previous.chain.length);
    if (usable === written) tokens = Math.max(0, billedWritten - tail) + cachedAnswer(previous, current, written, rules);
    else {
      // Apportioned by cachet's estimates, which differ from the provider's count by a few percent. A read
      // reported within that error of the estimate is the provider's exact count of the same prefix.
      const apportioned = Math.floor((billedWritten * estimate(0, usable)) / Math.max(1, writtenEstimate));
      const read = current.usage.cacheRead ?? 0;
      tokens = read > apportioned && read <= Math.min(billedWritten, apportioned * (1 + ESTIMATE_ERROR)) ? read : apportioned;
    }
  } else {
    tokens = estimate(0, usable);
  }
  if (tokens < rules.minimumTokens) return 0;
  return rules.granularity > 1 ? Math.floor(tokens / rules.granularity) * rules.granularity : tokens;
}

/** End (exclusive) of the deepest breakpoint at or before `limit` links: where an entry was written. */
function deepestBreakpoint(chain: readonly ChainLink[], limit: number): number {
  for (let i = limit; i > 0; i--) if (chain[i - 1]!.breakpoint) return i;
  return 0;
}

/**
 * Tokens of the previous answer the provider kept in the cache and `current`
 * re-sends right after the previous prompt (rules.answerCached). Only when
 * the previous prompt ended with no volatile tail (its answer unit then
 * starts with exactly the bytes `current` starts with) and the answer had no
 * reasoning, which the next request does not re-send.
 */
function cachedAnswer(previous: ComparedRow, current: ComparedRow, written: number, rules: CacheRules): number {
  if (!rules.answerCached || !previous.messageId || written !== previous.chain.length) return 0;
  const output = previous.usage.output;
  if (output === undefined || (previous.usage.reasoning ?? 0) > 0) return 0;
  const next = current.chain[written];
  // A node is the whole message (chat protocols) or one of its blocks (`id#k`).
  const answers = next !== undefined && (next.nodeId === previous.messageId || next.nodeId.startsWith(`${previous.messageId}#`));
  return answers ? output : 0;
}

/** The explanation `cachet why` prints. */
export interface Explanation {
  /** First link where the requests differ; null when the current request extends the previous one. */
  divergence: { index: number; nodeId: string; kind: string; previousNodeId: string | null } | null;
  /** Links shared with the previous request. */
  sharedLinks: number;
  /** Tokens the previous request could have left in the cache for this one. */
  expectedCacheRead: number;
  /** What the provider reported. */
  actualCacheRead: number | undefined;
  /** Causes, most important first, e.g. "system changed", "TTL expired (6m 10s > 5m)". */
  causes: string[];
}

/**
 * Explains `current` against `previous`, with the provider's cache rules;
 * `earlier` (the session's earlier requests, oldest first, `previous` last)
 * and `others` (other sessions' latest requests to the same provider and
 * model, see {@link liveCacheableMaximum}) set the cacheable maximum over
 * every live entry and name an older or another session's entry when one
 * could serve more than the previous request's. Pure.
 */
export function explain(
  previous: ComparedRow | null | undefined,
  current: ComparedRow,
  rules: CacheRules,
  earlier: readonly ComparedRow[] = previous ? [previous] : [],
  others: readonly ComparedRow[] = [],
): Explanation {
  const actual = current.usage.cacheRead;
  const live = liveCacheableMaximum(earlier, current, rules, others);
  if (!previous) {
    const causes = live.from === null ? ["first request of the session: nothing cached yet"] : [`first request of the session: ${entryCause(live)}`];
    if (live.from !== null && actual !== undefined && actual < live.tokens) causes.push("unexplained by the wire: the provider evicted the entry or routed the request elsewhere");
    unexplainedRead(causes, actual, live.tokens);
    return { divergence: null, sharedLinks: 0, expectedCacheRead: live.tokens, actualCacheRead: actual, causes };
  }
  const shared = sharedPrefixLength(previous.chain, current.chain);
  const fromPrevious = cacheableMaximum(previous, current, rules);
  const expected = Math.max(live.tokens, fromPrevious);
  const causes: string[] = [];
  let divergence: Explanation["divergence"] = null;
  const written = writtenLength(previous.chain, rules);
  const sameModel = previous.model === current.model;
  const sameProvider = previous.provider === current.provider;
  // A cache entry belongs to one model (and one protocol's bytes): when either differs, that explains the miss before anything else does.
  if (!sameModel) causes.push(`different model (${previous.provider}/${previous.model} → ${current.provider}/${current.model}): a provider caches per model, so nothing the previous request cached can be read`);
  else if (!sameProvider) causes.push(`protocol changed (${previous.provider} → ${current.provider}): the same model's request renders to other bytes`);
  if (shared < Math.min(written, current.chain.length)) {
    const link = current.chain[shared]!;
    const before = previous.chain[shared] ?? null;
    divergence = { index: shared, nodeId: link.nodeId, kind: link.kind, previousNodeId: before?.nodeId ?? null };
    // Another model or protocol renders every node to other bytes, so only what the node ids tell apart is a change of the head.
    const changes = sameModel && sameProvider ? [divergenceCause(previous.chain, current.chain, shared), ...headChanges(previous.chain, current.chain, "content")] : headChanges(previous.chain, current.chain, "nodeId");
    // The first divergence hides later ones: a client that changed its system prompt and reordered its tools in one turn is told both.
    for (const change of changes) if (!causes.includes(change)) causes.push(change);
  }
  if (live.from !== null && live.from !== previous && live.tokens > fromPrevious) {
    causes.push(live.from.sessionId !== undefined && live.from.sessionId !== current.sessionId ? entryCause(live) : `an older live entry can serve ${live.tokens.toLocaleString("en-US")} tokens: the one written by request ${writer(live.from)}`);
  }
  if (current.cacheMode === "off") causes.push("cache strategies off (--cache off)");
  if ((previous.affinityKey ?? null) !== (current.affinityKey ?? null)) causes.push("different affinity key");
  if (rules.mode === "breakpoints" && written === 0) causes.push("the previous request had no breakpoint, so it wrote no cache entry");
  if (rules.mode === "breakpoints" && written > 0 && rules.lookback !== undefined) {
    const reach = current.chain.findIndex((l, i) => i >= written - 1 && i < written - 1 + rules.lookback! && l.breakpoint);
    if (reach === -1 && shared >= written) causes.push(`breakpoint moved: no breakpoint within ${rules.lookback} blocks after the previous entry at node ${previous.chain[written - 1]!.nodeId}`);
  }
  const ttlMs = ttlOf(previous, rules);
  const gap = current.startedAt - previous.startedAt;
  if (ttlMs !== undefined && gap > ttlMs) causes.push(`TTL expired (${duration(gap)} since the previous request > ${duration(ttlMs)})`);
  const sharedTokens = current.chain.slice(0, Math.min(shared, written)).reduce((n, l) => n + l.tokens, 0);
  const promptSize = current.chain.reduce((n, l) => n + l.tokens, 0);
  if (expected === 0 && promptSize < rules.minimumTokens) causes.push(`below the minimum cacheable length (${rules.minimumTokens} tokens)`);
  else if (expected === 0 && shared > 0 && sharedTokens < rules.minimumTokens) {
    causes.push(`only ${sharedTokens.toLocaleString("en-US")} tokens are shared with the cached prefix; the provider caches prefixes from ${rules.minimumTokens.toLocaleString("en-US")}`);
  }
  if (causes.length === 0 && actual !== undefined && actual < expected) causes.push("unexplained by the wire: the provider evicted the entry or routed the request elsewhere");
  unexplainedRead(causes, actual, expected);
  if (causes.length === 0) causes.push(actual !== undefined && actual >= expected ? "no miss: the request read everything the previous one cached" : "usage unknown");
  return { divergence, sharedLinks: shared, expectedCacheRead: expected, actualCacheRead: actual, causes };
}

function writer(row: ComparedRow): string {
  return row.id ?? `started at ${new Date(row.startedAt).toISOString()}`;
}

/** The entry another session's request (or an older one of the session) left, as a cause. */
function entryCause(live: LiveMaximum): string {
  const from = live.from!;
  const session = from.sessionId !== undefined ? ` of session ${from.sessionId}` : "";
  return `a live entry can serve ${live.tokens.toLocaleString("en-US")} tokens: the one written by request ${writer(from)}${session} (the provider's cache is shared by every session of the same model)`;
}

/**
 * A read beyond every entry a recorded request could have left (another
 * client, or a request cachet did not record, warmed the cache): named, and
 * counted as cacheable by the statistics (see src/meter/stats.ts `cacheableOf`).
 */
function unexplainedRead(causes: string[], actual: number | undefined, expected: number): void {
  if (actual === undefined || actual <= expected) return;
  causes.push(
    `read ${actual.toLocaleString("en-US")} tokens, ${(actual - expected).toLocaleString("en-US")} more than any recorded earlier request could have cached: another client or an unrecorded request wrote that entry (the statistics count the whole read as cacheable)`,
  );
}

function divergenceCause(previous: readonly ChainLink[], current: readonly ChainLink[], index: number): string {
  const kind = current[index]!.kind;
  if (kind === "system") return "system changed";
  if (kind === "schema") return "schema changed";
  if (kind === "tool") {
    const names = (chain: readonly ChainLink[]) => chain.filter((l) => l.kind === "tool").map((l) => l.content).sort().join();
    return names(previous) === names(current) ? "tools reordered" : "tools changed";
  }
  if (previous[index]?.kind === "system" || previous[index]?.kind === "tool" || previous[index]?.kind === "schema") {
    return `${previous[index]!.kind === "tool" ? "tools" : previous[index]!.kind} changed`;
  }
  return `history rewritten at node ${index} (${current[index]!.nodeId})`;
}

/**
 * Every change of the request head (system, tools, schema) between two
 * chains, in that order, told apart by the links' wire bytes (`content`) or,
 * across models or protocols whose bytes differ anyway, by their node ids (a
 * system part's id hashes its text, a tool's names it).
 */
function headChanges(previous: readonly ChainLink[], current: readonly ChainLink[], by: "content" | "nodeId"): string[] {
  const contents = (chain: readonly ChainLink[], kind: string) => chain.filter((l) => l.kind === kind).map((l) => l[by]);
  const out: string[] = [];
  if (contents(previous, "system").join() !== contents(current, "system").join()) out.push("system changed");
  const before = contents(previous, "tool");
  const after = contents(current, "tool");
  if (before.join() !== after.join()) out.push([...before].sort().join() === [...after].sort().join() ? "tools reordered" : "tools changed");
  if (contents(previous, "schema").join() !== contents(current, "schema").join()) out.push("schema changed");
  return out;
}

function shortestTtl(ttl: NonNullable<CacheRules["ttlMs"]>): number {
  return Math.min(ttl["5m"] ?? Infinity, ttl["1h"] ?? Infinity, ttl.default ?? Infinity);
}

function ttlOf(previous: ComparedRow, rules: CacheRules): number | undefined {
  const ttl = rules.ttlMs;
  if (!ttl) return undefined;
  let long = hasLongMark.get(previous.chain);
  if (long === undefined) {
    long = previous.chain.some((l) => l.breakpoint === "1h");
    hasLongMark.set(previous.chain, long);
  }
  const used = long ? "1h" : previous.cacheTtl;
  return ttl[used] ?? ttl.default;
}

// A recorded chain never changes, and a turn compares the new request with
// the session's recent ones (each a long chain in a long session): what is
// read from a chain is computed once per chain.
const hasLongMark = new WeakMap<readonly ChainLink[], boolean>();
const breakpointEnds = new WeakMap<readonly ChainLink[], { links: number; end: number }>();
const sumsOf = new WeakMap<readonly ChainLink[], Float64Array>();

/** Links summed one by one rather than by a chain's cumulative sums (built once per chain). */
const NEAR = 64;

/**
 * The token estimates of a chain's first `k` links. The ends a comparison
 * asks about (where entries were written, where the requests diverge) lie
 * mostly near a chain's start or end: a sum over the few links to the nearer
 * end (the chain's total is known, tokenTotal), and only in between the
 * chain's cumulative sums, so a new chain is not walked whole for them.
 */
function tokensBefore(chain: readonly ChainLink[], k: number): number {
  const sums = sumsOf.get(chain);
  if (sums !== undefined) return sums[k]!;
  let n = 0;
  if (k <= NEAR) {
    for (let i = 0; i < k; i++) n += chain[i]!.tokens;
    return n;
  }
  if (chain.length - k <= NEAR) {
    for (let i = k; i < chain.length; i++) n += chain[i]!.tokens;
    return tokenTotal(chain) - n;
  }
  return tokenSums(chain)[k]!;
}

/** Cumulative token estimates of a chain: entry i is the sum over its first i links. */
function tokenSums(chain: readonly ChainLink[]): Float64Array {
  let sums = sumsOf.get(chain);
  if (sums === undefined) {
    sums = new Float64Array(chain.length + 1);
    for (let i = 0; i < chain.length; i++) sums[i + 1] = sums[i]! + chain[i]!.tokens;
    sumsOf.set(chain, sums);
  }
  return sums;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? ` ${s % 60}s` : ""}`;
  return `${Math.floor(m / 60)}h${m % 60 ? ` ${m % 60}m` : ""}`;
}
