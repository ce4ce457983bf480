/**
 * Prices one request's normalized usage, exactly:
 * cost = input·p_in + cacheRead·p_read + cacheWrite5m·p_write + cacheWrite1h·p_write1h + output·p_out.
 *
 * A long-context tier is chosen per request on the whole prompt (input +
 * cache reads + cache writes) and applies to every category, output
 * included. A needed price the catalog lacks makes the cost unknown (null,
 * with a reason), never free; so does an unknown model.
 * @see https://docs.claude.com/en/docs/about-claude/pricing (long context: whole request, threshold on input incl. cache)
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (1h write = 2x base input)
 */
import type { Config } from "../config.ts";
import { promptTokens, type ModalityTokens, type ServerTool, type ServerToolCalls, type Usage, type UsageReport } from "../plugin/usage.ts";
import { findModel, splitModelId, type Catalog, type CatalogCost } from "./catalog.ts";
import { costOf, formatUsd, priceFromNumber, priceToNumber, toUsd, type Atto, type PicoPerMillion } from "./money.ts";
import { derivedCacheShare, implicitReadShare, percentOf, scale, serviceTierRule, type Ratio } from "./price-rules.ts";

/** A billing category of a request (the `lines` of a price). */
export type CostCategory =
  | "input"
  | "input_image"
  | "input_audio"
  | "cache_read"
  | "cache_write_5m"
  | "cache_write_1h"
  | "output"
  | "output_image"
  | "output_audio"
  | "reasoning"
  | "server_tool"
  | "router_fee";

/** One category of a priced request. */
export interface CostLine {
  category: CostCategory;
  /** Tokens; for a `server_tool` line, calls; for a `router_fee` line, 1 (the request). */
  tokens: number;
  /** The server tool of a `server_tool` line. */
  tool?: ServerTool;
  /** "calls" on a `server_tool` line (its price is USD per million calls); "request" on a `router_fee` line (USD per million requests). */
  unit?: "calls" | "request";
  /** USD per million tokens applied (tiers included); null when the catalog lacks it. */
  pricePerMillion: number | null;
  /** tokens × price, USD; null when the price is missing and tokens > 0. */
  usd: number | null;
  /** The same amount as an exact decimal string. */
  usdExact: string | null;
  /** The exact price applied, pico-USD per million tokens (for per-node attribution). */
  pricePico: PicoPerMillion | null;
  /** The exact amount, atto-USD. */
  usdAtto: Atto | null;
  /** Set when the price is not the catalog's but derived from the input price by a documented rule: the rule and its source. */
  derived?: string;
}

/** The tier a request was priced at. */
export interface AppliedTier {
  /** Tier threshold: the prompt had more tokens than this. */
  size: number;
  /** Prompt tokens the choice was made on (input + cache reads + cache writes). */
  promptTokens: number;
}

/** A priced request. */
export interface RequestCost {
  /** `provider/model`. */
  model: string;
  /** Computed cost in USD (nearest double to the exact value); null when unknown. */
  costUsd: number | null;
  /** Exact computed cost as a decimal string, null when unknown. */
  costExact: string | null;
  /** Exact computed cost in atto-USD (1e-18), for exact sums; null when unknown. */
  costAtto: Atto | null;
  /** Why the cost is unknown; null when known. */
  unknownReason: string | null;
  /** The normalized counts priced. */
  usage: Usage;
  lines: CostLine[];
  /** The long-context tier applied, or null for base prices. */
  tier: AppliedTier | null;
  /** Cost the provider reported itself, kept beside the computed one. */
  providerCostUsd?: number;
  /** Why the figure is an estimate (usage mapping notes, prices the catalog lacks, a cut stream); empty when exact. */
  estimates: string[];
  /**
   * The notes of `estimates` about counts the provider reported inconsistently with each other (reasoning tokens
   * exceeding the output they are part of): the turn that records the request says each on stderr once; every
   * later pricing of the row keeps them only as estimates.
   */
  warnings: string[];
  /** True when the true cost is at least this (a cut stream, a server-tool call without a fee price). */
  lowerBound: boolean;
  /** The service tier priced (lower case), when the provider said one. */
  serviceTier?: string;
}

/** A model's price table: models.dev `cost` plus cachet's extensions (see catalog.ts). USD per million tokens. */
export type ModelPrice = CatalogCost;

/** A resolved price: the table and whether the Anthropic 1h-write rule applies. */
export interface ResolvedPrice {
  price: ModelPrice;
  /**
   * True for Anthropic-protocol (Claude) models: models.dev has no 1-hour
   * write price, so it is 2x the (tier's) input price unless configured.
   */
  anthropicWriteRule: boolean;
}

/**
 * The price of `provider/model` from the catalog with config overrides on
 * top (`[prices."provider/model"]`, USD per million). Undefined when neither
 * the catalog nor the overrides price the model.
 * @throws CachetError UNKNOWN_MODEL when the id is not `provider/model`.
 */
export function resolvePrice(catalog: Catalog, modelId: string, overrides: Config["prices"] = {}): ResolvedPrice | undefined {
  const { provider, model } = splitModelId(modelId);
  const base = findModel(catalog, modelId)?.cost;
  const override = Object.hasOwn(overrides, modelId) ? overrides[modelId] : undefined;
  if (base === undefined && override === undefined) return undefined;
  const price: ModelPrice = { ...(base ?? {}) };
  for (const [key, value] of Object.entries(override ?? {})) if (value !== undefined) (price as Record<string, unknown>)[key] = value;
  return { price, anthropicWriteRule: provider === "anthropic" || /(^|\/)anthropic\/|claude/.test(model) };
}

/**
 * What a usage report says beside the counts, and what the caller knows
 * (a cut stream): everything that changes the price or flags it.
 */
export interface PriceExtras {
  /** Notes from the usage mapping on counts that are estimates. */
  estimates?: readonly string[];
  /** The tier the provider says it served (see {@link UsageReport.serviceTier}). */
  serviceTier?: string | undefined;
  serverToolCalls?: ServerToolCalls | undefined;
  modalities?: ModalityTokens | undefined;
  cacheMode?: "explicit" | "implicit" | undefined;
  /** True when the counts are what a cut stream reported before it ended: the cost is a lower bound. */
  partial?: boolean;
  /** A router's fee reported in USD (see {@link UsageReport.routerFeeUsd}), added as a `router_fee` line. */
  routerFeeUsd?: number | undefined;
}

/** The extras of a usage report. */
export function extrasOf(report: UsageReport): PriceExtras {
  return {
    estimates: report.estimates ?? [],
    serviceTier: report.serviceTier,
    serverToolCalls: report.serverToolCalls,
    modalities: report.modalities,
    cacheMode: report.cacheMode,
    routerFeeUsd: report.routerFeeUsd,
  };
}

/**
 * Prices a normalized usage with a price table. Pure.
 * - input or output unknown → cost unknown;
 * - cache counts unknown → 0 (the provider reported no cache activity);
 * - a category with tokens > 0 and no price → cost unknown, naming the price;
 * - reasoning is part of output; it gets its own line only when the table
 *   has a distinct `reasoning` price; reasoning reported above the output
 *   it is part of is counted as at most the output, noted in `estimates`
 *   and `warnings` with both figures;
 * - image and audio parts get their own line at their own price
 *   (`input_image`, `input_audio`, `output_image`, `output_audio`); without
 *   one they are priced at the text rate, flagged (input images excepted:
 *   they are billed as input tokens);
 * - the served service tier scales every token price (price-rules.ts), or
 *   uses the model's own `service_tiers` prices; an unknown tier is priced
 *   at standard rates and flagged;
 * - server-tool calls cost `server_tools[tool]` USD per 1,000 calls; a call
 *   without a fee price is left out and flagged (a lower bound);
 * - the cache-read price follows the cache mode where it depends on it;
 * - a cache read or write price the catalog lacks is derived from the input
 *   price where the provider documents the share (price-rules.ts), marked
 *   `derived` on its line and flagged;
 * - a router's fee the usage reports in USD (OpenRouter BYOK) is a
 *   `router_fee` line on top of the tokens.
 * Anything not priced exactly lands in `estimates`, never silently.
 */
export function priceUsage(usage: Usage, resolved: ResolvedPrice, modelId: string, extras: PriceExtras = {}): RequestCost {
  const notes = [...(extras.estimates ?? [])];
  const provider = splitModelId(modelId).provider;
  const cacheRead = usage.cacheRead ?? 0;
  const write5m = usage.cacheWrite5m ?? 0;
  const write1h = usage.cacheWrite1h ?? 0;
  const prompt = usage.input === undefined ? undefined : usage.input + cacheRead + write5m + write1h;
  const served = servedTable(resolved.price, extras.serviceTier, provider, modelId, notes);
  const tierEntry = prompt === undefined ? undefined : chooseTier(served.table, prompt);
  const table: ModelPrice = tierEntry ? { ...tierEntry.table } : served.table;
  const tier = tierEntry && prompt !== undefined ? { size: tierEntry.size, promptTokens: prompt } : null;
  const tokenPrice = (value: number | undefined): PicoPerMillion | undefined => {
    const price = optionalPrice(value);
    return price === undefined || served.ratio === undefined ? price : scale(price, served.ratio);
  };

  let oneHour = tokenPrice(table.cache_write_1h);
  if (oneHour === undefined && resolved.anthropicWriteRule && table.input !== undefined && write1h > 0) {
    oneHour = tokenPrice(table.input)! * 2n;
    notes.push("1h cache write priced at 2x input (the catalog has no 1h write price)");
  }
  const inputPrice = tokenPrice(table.input);
  let readPrice = tokenPrice(table.cache_read);
  const readShare = implicitReadShare(provider, extras.cacheMode);
  if (readShare && inputPrice !== undefined) readPrice = scale(inputPrice, readShare);
  const derived = new Map<CostCategory, string>();
  // A cache price the catalog lacks, derived from the input price by the provider's documented rule (never for a
  // model without an input price), flagged like the 1h rule above.
  const derive = (own: PicoPerMillion | undefined, category: CostCategory, priceName: "cache_read" | "cache_write", tokens: number): PicoPerMillion | undefined => {
    if (own !== undefined || inputPrice === undefined || tokens === 0) return own;
    const share = derivedCacheShare(provider, priceName, extras.cacheMode);
    if (share === undefined) return undefined;
    const rule = `${percentOf(share)} of input, derived by ${share.source}`;
    derived.set(category, rule);
    notes.push(`${category} priced at ${rule}: the catalog has no ${priceName} price for ${modelId}`);
    return scale(inputPrice, share);
  };
  readPrice = derive(readPrice, "cache_read", "cache_read", cacheRead);
  const writePrice = derive(tokenPrice(table.cache_write), "cache_write_5m", "cache_write", write5m);

  const reasoningPrice = tokenPrice(table.reasoning);
  const outputPrice = tokenPrice(table.output);
  const warnings: string[] = [];
  // Reasoning is a part of the billed output (providers.md §1): a larger count is the provider's inconsistency, not
  // tokens to add. The output is what is billed, so reasoning counts as at most it, and the note names both figures.
  if (usage.output !== undefined && (usage.reasoning ?? 0) > usage.output) {
    warnings.push(`the provider reported ${usage.reasoning} reasoning tokens but only ${usage.output} output tokens, which include them: the cost counts reasoning as at most the output (${usage.output})`);
  }
  notes.push(...warnings);
  const splitReasoning = reasoningPrice !== undefined && reasoningPrice !== outputPrice && (usage.reasoning ?? 0) > 0 && usage.output !== undefined;
  const reasoning = splitReasoning ? Math.min(usage.reasoning!, usage.output!) : 0;
  const m = extras.modalities ?? {};
  const part = (value: number | undefined, of: number | undefined): number => (value && of !== undefined ? Math.min(value, of) : 0);
  const inImage = part(m.input?.image, usage.input);
  const inAudio = part(m.input?.audio, (usage.input ?? 0) - inImage);
  const outImage = part(m.output?.image, (usage.output ?? 0) - reasoning);
  const outAudio = part(m.output?.audio, (usage.output ?? 0) - reasoning - outImage);
  const modalityPrice = (own: number | undefined, fallback: PicoPerMillion | undefined, tokens: number, what: string, flag: boolean): PicoPerMillion | undefined => {
    if (own !== undefined) return tokenPrice(own);
    if (tokens > 0 && flag && fallback !== undefined) notes.push(`${tokens} ${what} tokens priced at the text rate (no ${what.replace(" ", "_")} price for ${modelId})`);
    return fallback;
  };

  const wanted: Array<[CostCategory, number | undefined, PicoPerMillion | undefined, string]> = [
    ["input", usage.input === undefined ? undefined : usage.input - inImage - inAudio, inputPrice, "input"],
  ];
  if (inImage > 0) wanted.push(["input_image", inImage, modalityPrice(table.input_image, inputPrice, inImage, "input image", false), "input_image"]);
  if (inAudio > 0) wanted.push(["input_audio", inAudio, modalityPrice(table.input_audio, inputPrice, inAudio, "input audio", true), "input_audio"]);
  wanted.push(
    ["cache_read", cacheRead, readPrice, "cache_read"],
    ["cache_write_5m", write5m, writePrice, "cache_write"],
    ["cache_write_1h", write1h, oneHour, "cache_write_1h"],
    ["output", usage.output === undefined ? undefined : usage.output - reasoning - outImage - outAudio, outputPrice, "output"],
  );
  if (outImage > 0) wanted.push(["output_image", outImage, modalityPrice(table.output_image, outputPrice, outImage, "output image", true), "output_image"]);
  if (outAudio > 0) wanted.push(["output_audio", outAudio, modalityPrice(table.output_audio, outputPrice, outAudio, "output audio", true), "output_audio"]);
  if (splitReasoning) wanted.push(["reasoning", reasoning, reasoningPrice, "reasoning"]);

  const lines: CostLine[] = [];
  let total: Atto = 0n;
  let unknownReason: string | null = null;
  let lowerBound = extras.partial === true;
  for (const [category, tokens, price, priceName] of wanted) {
    if (tokens === undefined) {
      unknownReason ??= `usage did not report ${category} tokens`;
      continue;
    }
    const amount = price === undefined ? (tokens === 0 ? 0n : undefined) : costOf(tokens, price);
    if (amount === undefined) unknownReason ??= `no ${priceName} price for ${modelId}${tier ? ` above ${tier.size} tokens` : ""} and ${tokens} ${category} tokens`;
    else total += amount;
    const line = lineOf(category, tokens, price ?? null, amount ?? null);
    const rule = derived.get(category);
    lines.push(rule === undefined ? line : { ...line, derived: rule });
  }
  for (const [tool, calls] of Object.entries(extras.serverToolCalls ?? {}) as Array<[ServerTool, number]>) {
    if (!calls) continue;
    const per1k = resolved.price.server_tools?.[tool];
    if (per1k === undefined) {
      notes.push(`${calls} ${tool} calls have no fee price for ${modelId}: left out, the cost is a lower bound`);
      lowerBound = true;
      continue;
    }
    // USD per 1,000 calls is USD per million calls × 1,000: one line unit for tokens and calls.
    const price = priceFromNumber(per1k) * 1000n;
    const amount = costOf(calls, price);
    total += amount;
    lines.push({ ...lineOf("server_tool", calls, price, amount), tool, unit: "calls" });
  }
  if (extras.routerFeeUsd) {
    // The fee's decimal form read exactly (as a price per million), then one request of it.
    const price = priceFromNumber(extras.routerFeeUsd) * 1_000_000n;
    const amount = costOf(1, price);
    total += amount;
    lines.push({ ...lineOf("router_fee", 1, price, amount), unit: "request" });
  }
  if (extras.partial) notes.push("the stream was cut: the counts are what the provider reported before the cut, so the cost is a lower bound");
  const known = unknownReason === null;
  const cost: RequestCost = {
    model: modelId,
    costUsd: known ? toUsd(total) : null,
    costExact: known ? formatUsd(total) : null,
    costAtto: known ? total : null,
    unknownReason,
    usage,
    lines,
    tier,
    estimates: notes,
    warnings,
    lowerBound,
  };
  if (served.name) cost.serviceTier = served.name;
  return cost;
}

function lineOf(category: CostCategory, tokens: number, price: PicoPerMillion | null, amount: Atto | null): CostLine {
  return {
    category,
    tokens,
    pricePerMillion: price === null ? null : priceToNumber(price),
    usd: amount === null ? null : toUsd(amount),
    usdExact: amount === null ? null : formatUsd(amount),
    pricePico: price,
    usdAtto: amount,
  };
}

/**
 * The price table of the tier served: the model's own `service_tiers[tier]`
 * prices over its standard ones, else the provider's multiplier, else the
 * standard table with a note.
 */
function servedTable(price: ModelPrice, served: string | undefined, provider: string, modelId: string, notes: string[]): { table: ModelPrice; ratio?: Ratio; name?: string } {
  if (served === undefined) return { table: price };
  const name = served.toLowerCase();
  const own = price.service_tiers?.[name];
  if (own) return { table: { ...price, ...own, tiers: own.tiers ?? [] }, name };
  const rule = serviceTierRule(provider, name);
  if (rule.kind === "multiplier") return { table: price, ratio: rule.ratio, name };
  if (rule.kind === "unknown") notes.push(`service tier "${served}" has no price for ${modelId}: priced at standard rates`);
  return { table: price, name };
}

/**
 * Prices an adapter's usage report for `provider/model` — the call the turn
 * pipeline makes after each request. An unknown model gives cost null with
 * `unknownReason` (the caller prints it as a warning), never $0.
 * @throws CachetError UNKNOWN_MODEL when the id is not `provider/model`.
 */
export function priceUsageReport(report: UsageReport, modelId: string, catalog: Catalog, overrides: Config["prices"] = {}, partial = false): RequestCost {
  const resolved = resolvePrice(catalog, modelId, overrides);
  const cost: RequestCost = resolved
    ? priceUsage(report.usage, resolved, modelId, { ...extrasOf(report), partial })
    : {
        model: modelId,
        costUsd: null,
        costExact: null,
        costAtto: null,
        unknownReason: `unknown model ${modelId}: no price in the catalog or config`,
        usage: report.usage,
        lines: [],
        tier: null,
        estimates: [...(report.estimates ?? [])],
        warnings: [],
        lowerBound: false,
      };
  if (report.providerCostUsd !== undefined) cost.providerCostUsd = report.providerCostUsd;
  return cost;
}

/**
 * What the request would have cost with every prompt token at the input
 * price (the same tier, fees and modalities), USD: the yardstick of savings.
 * Null when the model, the price or the prompt is unknown.
 */
export function uncachedCost(report: UsageReport, modelId: string, catalog: Catalog, overrides: Config["prices"] = {}): number | null {
  const resolved = resolvePrice(catalog, modelId, overrides);
  const prompt = promptTokens(report.usage);
  if (!resolved || prompt === undefined) return null;
  const uncached: Usage = { ...report.usage, input: prompt, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0 };
  return priceUsage(uncached, resolved, modelId, extrasOf(report)).costUsd;
}

/** The highest tier whose size the prompt exceeds, with its prices (its own fields only: a price it lacks is unknown). */
function chooseTier(price: ModelPrice, prompt: number): { size: number; table: ModelPrice } | undefined {
  let best: { size: number; table: ModelPrice } | undefined;
  for (const t of price.tiers ?? []) {
    const size = t.tier.size;
    if (prompt > size && (best === undefined || size > best.size)) {
      const { tier: _tier, ...table } = t;
      best = { size, table: table as ModelPrice };
    }
  }
  return best;
}

function optionalPrice(value: number | undefined): PicoPerMillion | undefined {
  return value === undefined ? undefined : priceFromNumber(value);
}
