/**
 * Documented price rules that are not per-model numbers: the multiplier of a
 * service tier the provider says it served, and the cache-read price of a
 * cache mode. Keyed by catalog provider id (models.dev). A model's own
 * `service_tiers` table in the catalog wins over these rules.
 */

/** An exact multiplier: price × numerator / denominator. */
export interface Ratio {
  numerator: bigint;
  denominator: bigint;
  /** Where the rule is written. */
  source: string;
}

const HALF = (source: string): Ratio => ({ numerator: 1n, denominator: 2n, source });

/**
 * Token-price multipliers per served tier. Fees of server tools are not
 * discounted. A tier named here applies to every model of the provider
 * unless the model has its own `service_tiers` prices.
 */
const SERVICE_TIER_MULTIPLIERS: Record<string, Record<string, Ratio>> = {
  openai: {
    flex: HALF("https://platform.openai.com/docs/guides/flex-processing (Flex is billed at Batch API rates)"),
    batch: HALF("https://platform.openai.com/docs/guides/batch (50% lower costs)"),
  },
  anthropic: {
    batch: HALF("https://docs.claude.com/en/docs/build-with-claude/batch-processing (50% of standard prices)"),
  },
  google: {
    batch: HALF("https://ai.google.dev/gemini-api/docs/batch-mode (50% of the standard cost)"),
  },
};

/** Tier names that mean "standard prices" as providers write them. */
const STANDARD_TIERS = new Set(["standard", "default", "auto", "on_demand", "on-demand"]);

/** How a served tier is priced: standard, a multiplier, or unknown (then priced standard and flagged). */
export type ServiceTierRule = { kind: "standard" } | { kind: "multiplier"; ratio: Ratio } | { kind: "unknown" };

/**
 * The rule for `tier` (as the provider wrote it) at `provider`. A model's own
 * tier prices are looked up by the caller first.
 */
export function serviceTierRule(provider: string, tier: string | undefined): ServiceTierRule {
  if (tier === undefined || STANDARD_TIERS.has(tier.toLowerCase())) return { kind: "standard" };
  const ratio = SERVICE_TIER_MULTIPLIERS[provider]?.[tier.toLowerCase()];
  return ratio ? { kind: "multiplier", ratio } : { kind: "unknown" };
}

/**
 * Cache-read price of a mode, as a share of the input price, where a
 * provider prices reads by cache mode and the catalog has one read price
 * (the explicit one). Undefined: the catalog's `cache_read` applies.
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache (explicit hit 10% of input, implicit hit 20%)
 */
export function implicitReadShare(provider: string, mode: "explicit" | "implicit" | undefined): Ratio | undefined {
  if (provider === "alibaba" && mode === "implicit") {
    return { numerator: 1n, denominator: 5n, source: "https://www.alibabacloud.com/help/en/model-studio/context-cache (implicit cache hit: 20% of input)" };
  }
  return undefined;
}

const QWEN_CACHE_DOC = "https://www.alibabacloud.com/help/en/model-studio/context-cache";

/**
 * Cache prices a provider documents as a share of the input price, for a
 * model whose catalog entry lacks them (models.dev gives most Alibaba models
 * an input price and no cache prices, though they cache). Keyed by catalog
 * provider id, then by the catalog price the rule stands in for.
 * Writes are reported only in explicit mode (an implicit-cache creation is
 * billed as plain input), so a write price needs no mode; an implicit hit is
 * priced by {@link implicitReadShare} whatever the catalog says.
 */
const DERIVED_CACHE_SHARES: Record<string, { cache_read: Ratio; cache_write: Ratio }> = {
  alibaba: {
    cache_read: { numerator: 1n, denominator: 10n, source: `${QWEN_CACHE_DOC} (explicit cache hit)` },
    cache_write: { numerator: 5n, denominator: 4n, source: `${QWEN_CACHE_DOC} (explicit cache creation)` },
  },
};

/**
 * The share of the input price that stands in for a missing catalog cache
 * price (`cache_read` or `cache_write`, 5-minute writes) under a provider's
 * documented rule. Undefined where the provider documents none, and for a
 * read not reported as explicit (an implicit hit has its own rule; an
 * unreported mode has no single rule).
 * The caller applies it only where the catalog lacks the price and has an
 * input price: a rule never prices a model the catalog does not.
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache (explicit: creation 125% of input, hit 10%)
 */
export function derivedCacheShare(provider: string, price: "cache_read" | "cache_write", mode: "explicit" | "implicit" | undefined): Ratio | undefined {
  const shares = Object.hasOwn(DERIVED_CACHE_SHARES, provider) ? DERIVED_CACHE_SHARES[provider] : undefined;
  if (!shares) return undefined;
  if (price === "cache_read") return mode === "explicit" ? shares.cache_read : undefined;
  return shares.cache_write;
}

/** A ratio as a percentage for messages ("125%", "12.5%"). */
export function percentOf(ratio: Ratio): string {
  return `${Number((ratio.numerator * 1000n) / ratio.denominator) / 10}%`;
}

/** price × ratio, exact to the pico (rounded half up). */
export function scale(price: bigint, ratio: Ratio): bigint {
  return (price * ratio.numerator * 2n + ratio.denominator) / (2n * ratio.denominator);
}
