/**
 * Per-node attribution: a request's billed prompt tokens laid over its
 * chain (the nodes in the provider's cache order), in prefix order —
 * cache reads first, then 1-hour writes, then 5-minute writes (together up
 * to the last breakpoint), then uncached input. Output tokens go to the
 * assistant message the call produced.
 *
 * Node token estimates are scaled to the billed total by prefix-sum
 * rounding: node i spans billed positions [⌊T(i)·P/E⌋, ⌊T(i+1)·P/E⌋) where
 * T is the cumulative estimate, E the estimated total and P the billed
 * prompt. Every node is within one token of its exact share and the node
 * sums equal the billed totals exactly, per category.
 *
 * A {@link ChainMeter} keeps the cumulative estimates of a session's chain
 * between requests: request N+1 usually extends request N, which is checked
 * in O(1) on the cumulative prefix hash, so metering a turn costs the new
 * nodes plus O(log n), not the whole history. Per-node figures are computed
 * on demand.
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (mixing TTLs: read = A, 1h write = B − A, 5m write = C − B)
 */
import type { Usage } from "../plugin/usage.ts";
import type { ChainLink } from "../session/types.ts";
import { costOf, toUsd, type Atto, type PicoPerMillion } from "./money.ts";
import type { CostCategory, RequestCost } from "./pricing.ts";

/** Exact prices per billed category (pico-USD per million tokens); undefined = unknown. */
export interface CategoryRates {
  input?: PicoPerMillion;
  cacheRead?: PicoPerMillion;
  cacheWrite5m?: PicoPerMillion;
  cacheWrite1h?: PicoPerMillion;
  /** Output rate; with a separate reasoning price, the average over the output (exact per request, see outputUsdAtto). */
  output?: PicoPerMillion;
}

/** How a node was billed. "mixed" when it straddles a boundary (e.g. the end of the cache read); "empty" when it was given no billed token. */
export type NodeCacheStatus = "read" | "write-1h" | "write-5m" | "uncached" | "mixed" | "empty";

/** Billed prompt tokens attributed to one node, by category, and its cache status. */
export interface AttributedTokens {
  kind: string;
  /** Billed tokens attributed to the node (sum of the four categories). */
  tokens: number;
  cacheRead: number;
  cacheWrite1h: number;
  cacheWrite5m: number;
  input: number;
  status: NodeCacheStatus;
}

/** One node's share of a request. Tokens are billed tokens (scaled estimates). */
export interface NodeCost extends AttributedTokens {
  /** Position in the chain. */
  index: number;
  nodeId: string;
  /** Exact USD of the node in atto-USD; null when a needed rate is unknown. */
  usdAtto: Atto | null;
  usd: number | null;
}

/** The output side of a request: attributed to the assistant message it produced. */
export interface OutputCost {
  messageId: string | null;
  tokens: number | undefined;
  usdAtto: Atto | null;
  usd: number | null;
}

/** A request's attribution. `node(i)` is O(1); `nodes()` materializes all (O(n)). */
export interface RequestAttribution {
  nodeCount: number;
  /** Billed prompt tokens P = input + cacheRead + cacheWrite1h + cacheWrite5m. */
  billedPrompt: number;
  /** Sum of the chain's token estimates E. */
  estimatedPrompt: number;
  /** Number of leading nodes billed entirely as cache reads. */
  readNodes: number;
  node(index: number): NodeCost;
  nodes(): NodeCost[];
  output: OutputCost;
}

/** Options of an attribution. */
export interface AttributeOptions {
  /** Exact rates, e.g. from {@link ratesOf}; without them USD fields are null. */
  rates?: CategoryRates;
  /** Id of the assistant message the call produced. */
  messageId?: string | null;
  /** Exact output cost (atto-USD) when known from the priced request (reasoning and image/audio output at their own prices). */
  outputUsdAtto?: Atto | null;
}

/** The lines of a priced request that make up its output: text, reasoning and generated media, each at its own rate. */
export const OUTPUT_CATEGORIES: ReadonlySet<CostCategory> = new Set(["output", "reasoning", "output_image", "output_audio"]);

/**
 * The exact per-category rates and the output amount of a priced request,
 * for {@link AttributeOptions}.
 */
export function ratesOf(cost: RequestCost): { rates: CategoryRates; outputUsdAtto: Atto | null } {
  const rates: CategoryRates = {};
  let outputUsdAtto: Atto | null = 0n;
  for (const line of cost.lines) {
    const price = line.pricePico ?? undefined;
    if (line.category === "input") rates.input = price;
    else if (line.category === "cache_read") rates.cacheRead = price;
    else if (line.category === "cache_write_5m") rates.cacheWrite5m = price;
    else if (line.category === "cache_write_1h") rates.cacheWrite1h = price;
    if (line.category === "output") rates.output = price;
    if (OUTPUT_CATEGORIES.has(line.category)) outputUsdAtto = line.usdAtto === null || outputUsdAtto === null ? null : outputUsdAtto + line.usdAtto;
  }
  if (!cost.lines.some((l) => l.category === "output")) outputUsdAtto = null;
  return { rates, outputUsdAtto };
}

/**
 * Keeps one session's chain and its cumulative token estimates across
 * requests, so each request is attributed incrementally.
 */
export class ChainMeter {
  private links: ChainLink[] = [];
  /** cum[i] = estimated tokens of links [0, i). */
  private cum: number[] = [0];

  /**
   * Attributes one request. `chain` is the request's full chain in cache
   * order; the part shared with the previous request (equal cumulative
   * prefix hashes) is not walked again.
   */
  attribute(chain: readonly ChainLink[], usage: Usage, options: AttributeOptions = {}): RequestAttribution {
    this.sync(chain);
    return attributeOver(this.links, this.cum, chain.length, usage, options);
  }

  private sync(chain: readonly ChainLink[]): void {
    const known = this.links.length;
    let shared = 0;
    if (known > 0 && chain.length >= known && chain[known - 1]!.prefix === this.links[known - 1]!.prefix) {
      shared = known;
    } else {
      // Equal prefix hashes at i imply equal at every j < i: binary search the longest shared prefix.
      let lo = 0;
      let hi = Math.min(known, chain.length);
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (chain[mid - 1]!.prefix === this.links[mid - 1]!.prefix) lo = mid;
        else hi = mid - 1;
      }
      shared = lo;
      // Fresh arrays: earlier attributions keep reading the old ones.
      this.links = this.links.slice(0, shared);
      this.cum = this.cum.slice(0, shared + 1);
    }
    for (let i = shared; i < chain.length; i++) {
      const link = chain[i]!;
      this.links.push(link);
      this.cum.push(this.cum[i]! + Math.max(0, link.tokens));
    }
  }
}

/** Attributes one request without keeping state (O(nodes)). */
export function attributeRequest(chain: readonly ChainLink[], usage: Usage, options: AttributeOptions = {}): RequestAttribution {
  return new ChainMeter().attribute(chain, usage, options);
}

function attributeOver(links: readonly ChainLink[], cum: readonly number[], n: number, usage: Usage, options: AttributeOptions): RequestAttribution {
  const read = usage.cacheRead ?? 0;
  const write1h = usage.cacheWrite1h ?? 0;
  const write5m = usage.cacheWrite5m ?? 0;
  const input = usage.input ?? 0;
  const billed = read + write1h + write5m + input;
  const estimated = cum[n]!;
  const endRead = read;
  const end1h = endRead + write1h;
  const end5m = end1h + write5m;
  const rates = options.rates ?? {};

  const position = (j: number): number => {
    if (j >= n) return billed;
    if (estimated === 0) return scale(j, billed, n);
    return scale(cum[j]!, billed, estimated);
  };

  const node = (index: number): NodeCost => {
    if (index < 0 || index >= n) throw new RangeError(`node ${index} outside the chain of ${n}`);
    const link = links[index]!;
    const a = position(index);
    const b = position(index + 1);
    const cacheRead = overlap(a, b, 0, endRead);
    const cacheWrite1h = overlap(a, b, endRead, end1h);
    const cacheWrite5m = overlap(a, b, end1h, end5m);
    const uncached = overlap(a, b, end5m, billed);
    const parts: Array<[number, PicoPerMillion | undefined]> = [
      [cacheRead, rates.cacheRead],
      [cacheWrite1h, rates.cacheWrite1h],
      [cacheWrite5m, rates.cacheWrite5m],
      [uncached, rates.input],
    ];
    let usdAtto: Atto | null = options.rates ? 0n : null;
    for (const [tokens, rate] of parts) {
      if (usdAtto === null || tokens === 0) continue;
      usdAtto = rate === undefined ? null : usdAtto + costOf(tokens, rate);
    }
    return {
      index,
      nodeId: link.nodeId,
      kind: link.kind,
      tokens: b - a,
      cacheRead,
      cacheWrite1h,
      cacheWrite5m,
      input: uncached,
      status: statusOf(b - a, cacheRead, cacheWrite1h, cacheWrite5m, uncached),
      usdAtto,
      usd: usdAtto === null ? null : toUsd(usdAtto),
    };
  };

  // Leading nodes entirely inside the read region: positions are monotone, so binary search.
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (position(mid) <= endRead) lo = mid;
    else hi = mid - 1;
  }

  const outputTokens = usage.output;
  const outputUsdAtto =
    options.outputUsdAtto !== undefined ? options.outputUsdAtto : outputTokens !== undefined && rates.output !== undefined ? costOf(outputTokens, rates.output) : null;
  return {
    nodeCount: n,
    billedPrompt: billed,
    estimatedPrompt: estimated,
    readNodes: lo,
    node,
    nodes: () => Array.from({ length: n }, (_, i) => node(i)),
    output: { messageId: options.messageId ?? null, tokens: outputTokens, usdAtto: outputUsdAtto, usd: outputUsdAtto === null ? null : toUsd(outputUsdAtto) },
  };
}

/** ⌊value · numerator / denominator⌋, exact (bigint when the product leaves the safe-integer range). */
function scale(value: number, numerator: number, denominator: number): number {
  const product = value * numerator;
  if (product <= Number.MAX_SAFE_INTEGER) {
    // The float quotient can round up across an integer; correct it with exact integer products.
    let q = Math.floor(product / denominator);
    if (q * denominator > product) q--;
    else if ((q + 1) * denominator <= product) q++;
    return q;
  }
  return Number((BigInt(value) * BigInt(numerator)) / BigInt(denominator));
}

function overlap(a: number, b: number, from: number, to: number): number {
  return Math.max(0, Math.min(b, to) - Math.max(a, from));
}

function statusOf(tokens: number, read: number, write1h: number, write5m: number, input: number): NodeCacheStatus {
  if (tokens === 0) return "empty";
  if (read === tokens) return "read";
  if (write1h === tokens) return "write-1h";
  if (write5m === tokens) return "write-5m";
  if (input === tokens) return "uncached";
  return "mixed";
}
