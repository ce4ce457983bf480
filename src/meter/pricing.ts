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
import type { Usage, UsageReport } from "../plugin/usage.ts";
import { findModel, splitModelId, type Catalog, type CatalogCost } from "./catalog.ts";
import { costOf, formatUsd, priceFromNumber, priceToNumber, toUsd, type Atto, type PicoPerMillion } from "./money.ts";

/** A billing category of a request (the `lines` of a price). */
export type CostCategory = "input" | "cache_read" | "cache_write_5m" | "cache_write_1h" | "output" | "reasoning";

/** One category of a priced request. */
export interface CostLine {
  category: CostCategory;
  tokens: number;
  /** USD per million tokens applied (tier included); null when the catalog lacks it. */
  pricePerMillion: number | null;
  /** tokens × price, USD; null when the price is missing and tokens > 0. */
  usd: number | null;
  /** The same amount as an exact decimal string. */
  usdExact: string | null;
  /** The exact price applied, pico-USD per million tokens (for per-node attribution). */
  pricePico: PicoPerMillion | null;
  /** The exact amount, atto-USD. */
  usdAtto: Atto | null;
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
  /** Notes on counts or prices that are estimates (from the usage mapping and the 1h-write rule). */
  estimates: string[];
}

/** A model's price table: models.dev `cost` plus cachet's `cache_write_1h` (USD per million). */
export type ModelPrice = CatalogCost & { cache_write_1h?: number };

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
 * Prices a normalized usage with a price table. Pure.
 * - input or output unknown → cost unknown;
 * - cache counts unknown → 0 (the provider reported no cache activity);
 * - a category with tokens > 0 and no price → cost unknown, naming the price;
 * - reasoning is part of output; it gets its own line only when the table
 *   has a distinct `reasoning` price.
 */
export function priceUsage(usage: Usage, resolved: ResolvedPrice, modelId: string, estimates: readonly string[] = []): RequestCost {
  const notes = [...estimates];
  const cacheRead = usage.cacheRead ?? 0;
  const write5m = usage.cacheWrite5m ?? 0;
  const write1h = usage.cacheWrite1h ?? 0;
  const prompt = usage.input === undefined ? undefined : usage.input + cacheRead + write5m + write1h;
  const tierEntry = prompt === undefined ? undefined : chooseTier(resolved.price, prompt);
  const table: ModelPrice = tierEntry ? { ...tierEntry.table } : resolved.price;
  const tier = tierEntry && prompt !== undefined ? { size: tierEntry.size, promptTokens: prompt } : null;

  let oneHour = optionalPrice(table.cache_write_1h);
  if (oneHour === undefined && resolved.anthropicWriteRule && table.input !== undefined && write1h > 0) {
    oneHour = priceFromNumber(table.input) * 2n;
    notes.push("1h cache write priced at 2x input (models.dev has no 1h write price)");
  }
  const reasoningPrice = optionalPrice(table.reasoning);
  const outputPrice = optionalPrice(table.output);
  const splitReasoning = reasoningPrice !== undefined && reasoningPrice !== outputPrice && (usage.reasoning ?? 0) > 0 && usage.output !== undefined;
  const reasoning = splitReasoning ? Math.min(usage.reasoning!, usage.output!) : 0;

  const wanted: Array<[CostCategory, number | undefined, PicoPerMillion | undefined, string]> = [
    ["input", usage.input, optionalPrice(table.input), "input"],
    ["cache_read", cacheRead, optionalPrice(table.cache_read), "cache_read"],
    ["cache_write_5m", write5m, optionalPrice(table.cache_write), "cache_write"],
    ["cache_write_1h", write1h, oneHour, "cache_write_1h"],
    ["output", usage.output === undefined ? undefined : usage.output - reasoning, outputPrice, "output"],
  ];
  if (splitReasoning) wanted.push(["reasoning", reasoning, reasoningPrice, "reasoning"]);

  const lines: CostLine[] = [];
  let total: Atto = 0n;
  let unknownReason: string | null = null;
  for (const [category, tokens, price, priceName] of wanted) {
    if (tokens === undefined) {
      unknownReason ??= `usage did not report ${category} tokens`;
      continue;
    }
    const amount = price === undefined ? (tokens === 0 ? 0n : undefined) : costOf(tokens, price);
    if (amount === undefined) unknownReason ??= `no ${priceName} price for ${modelId}${tier ? ` above ${tier.size} tokens` : ""} and ${tokens} ${category} tokens`;
    else total += amount;
    lines.push({
      category,
      tokens,
      pricePerMillion: price === undefined ? null : priceToNumber(price),
      usd: amount === undefined ? null : toUsd(amount),
      usdExact: amount === undefined ? null : formatUsd(amount),
      pricePico: price ?? null,
      usdAtto: amount ?? null,
    });
  }
  const known = unknownReason === null;
  return {
    model: modelId,
    costUsd: known ? toUsd(total) : null,
    costExact: known ? formatUsd(total) : null,
    costAtto: known ? total : null,
    unknownReason,
    usage,
    lines,
    tier,
    estimates: notes,
  };
}

/**
 * Prices an adapter's usage report for `provider/model` — the call the turn
 * pipeline makes after each request. An unknown model gives cost null with
 * `unknownReason` (the caller prints it as a warning), never $0.
 * @throws CachetError UNKNOWN_MODEL when the id is not `provider/model`.
 */
export function priceUsageReport(report: UsageReport, modelId: string, catalog: Catalog, overrides: Config["prices"] = {}): RequestCost {
  const resolved = resolvePrice(catalog, modelId, overrides);
  const cost: RequestCost = resolved
    ? priceUsage(report.usage, resolved, modelId, report.estimates)
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
      };
  if (report.providerCostUsd !== undefined) cost.providerCostUsd = report.providerCostUsd;
  return cost;
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
