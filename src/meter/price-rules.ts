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

/** price × ratio, exact to the pico (rounded half up). */
export function scale(price: bigint, ratio: Ratio): bigint {
  return (price * ratio.numerator * 2n + ratio.denominator) / (2n * ratio.denominator);
}
