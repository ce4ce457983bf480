import { describe, expect, test } from "bun:test";
import { checkAnthropicCachePrices } from "./cache-price-check.ts";
import { embeddedCatalog } from "./catalog.ts";
import { priceUsage, resolvePrice } from "./pricing.ts";

/** An api.json-shaped catalog with these anthropic models (and one other provider's). */
function catalogOf(models: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
  return {
    anthropic: { id: "anthropic", models },
    openrouter: { id: "openrouter", models: { "anthropic/claude-3-sonnet": { cost: { input: 3, output: 15, cache_write: 0.3 } } } },
  };
}

const MULTIPLIERS = "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing";

describe("Anthropic cache prices against the documented multipliers (write 5m 1.25x, write 1h 2x, read 0.1x of input)", () => {
  test("a write price that is the read price (models.dev's Claude 3 Sonnet) is corrected to 1.25x input, with the reason on the entry", () => {
    const catalog = catalogOf({ "claude-3-sonnet-20240229": { cost: { input: 3, output: 15, cache_read: 0.3, cache_write: 0.3 } } });
    const findings = checkAnthropicCachePrices(catalog);
    expect(findings.map(({ model, table, price, found, expected, action }) => ({ model, table, price, found, expected, action }))).toEqual([
      { model: "anthropic/claude-3-sonnet-20240229", table: "cost", price: "cache_write", found: 0.3, expected: 3.75, action: "corrected" },
    ]);
    const entry = (catalog.anthropic!.models as Record<string, Record<string, any>>)["claude-3-sonnet-20240229"]!;
    expect(entry.cost).toEqual({ input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });
    expect(entry.price_corrections).toHaveLength(1);
    expect(entry.price_corrections[0]).toMatchObject({ price: "cost.cache_write", from: 0.3, to: 3.75 });
    expect(entry.price_corrections[0].reason).toContain("125% of input 3");
    expect(entry.price_corrections[0].reason).toContain(MULTIPLIERS);
    // Only Anthropic's own prices are held to Anthropic's rule.
    expect((catalog.openrouter!.models as Record<string, Record<string, any>>)["anthropic/claude-3-sonnet"]!.cost.cache_write).toBe(0.3);
  });

  test("every cache price and every table of a model is checked; consistent ones and absent ones are left as they are", () => {
    const catalog = catalogOf({
      "claude-x-1": {
        cost: { input: 5, output: 25, cache_read: 5, cache_write: 6.25, cache_write_1h: 6.25, tiers: [{ tier: { type: "context", size: 200000 }, input: 10, output: 37.5, cache_read: 1, cache_write: 10 }] },
        experimental: { modes: { fast: { cost: { input: 10, output: 50, cache_read: 1, cache_write: 12.5 } } } },
      },
      "claude-sonnet-4-6": { cost: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6 } },
      "claude-y-1": { cost: { input: 2, output: 10 } },
    });
    const findings = checkAnthropicCachePrices(catalog);
    expect(findings.map((f) => [f.model, f.table, f.price, f.found, f.expected, f.action])).toEqual([
      ["anthropic/claude-x-1", "cost", "cache_write_1h", 6.25, 10, "corrected"],
      ["anthropic/claude-x-1", "cost", "cache_read", 5, 0.5, "corrected"],
      ["anthropic/claude-x-1", "cost.tiers[0]", "cache_write", 10, 12.5, "corrected"],
    ]);
    const models = catalog.anthropic!.models as Record<string, Record<string, any>>;
    expect(models["claude-x-1"]!.cost).toMatchObject({ input: 5, cache_read: 0.5, cache_write: 6.25, cache_write_1h: 10 });
    expect(models["claude-x-1"]!.cost.tiers[0]).toMatchObject({ input: 10, cache_read: 1, cache_write: 12.5 });
    expect(models["claude-x-1"]!.price_corrections.map((c: { price: string }) => c.price)).toEqual(["cost.cache_write_1h", "cost.cache_read", "cost.tiers[0].cache_write"]);
    expect(models["claude-sonnet-4-6"]!.price_corrections).toBeUndefined();
    expect(models["claude-y-1"]!.cost).toEqual({ input: 2, output: 10 });
  });

  test("a model Anthropic prices apart from the multipliers keeps its published prices, and is held to them", () => {
    const catalog = catalogOf({
      // Claude Haiku 3's published row is rounded: $0.30 5m write (not 0.3125), $0.03 read (not 0.025).
      "claude-3-haiku-20240307": { cost: { input: 0.25, output: 1.25, cache_read: 0.03, cache_write: 0.3, cache_write_1h: 0.5 } },
      // Claude Opus 5.5 reads at $0.20 (0.05x input); a source with the usual 0.1x is wrong for it.
      "claude-opus-5-5": { cost: { input: 4, output: 20, cache_read: 0.4, cache_write: 5 } },
    });
    const findings = checkAnthropicCachePrices(catalog);
    expect(findings.map((f) => [f.model, f.price, f.found, f.multiplier, f.expected, f.action])).toEqual([
      ["anthropic/claude-3-haiku-20240307", "cache_write", 0.3, 0.3125, 0.3, "published"],
      ["anthropic/claude-3-haiku-20240307", "cache_read", 0.03, 0.025, 0.03, "published"],
      ["anthropic/claude-opus-5-5", "cache_read", 0.4, 0.4, 0.2, "corrected"],
    ]);
    const models = catalog.anthropic!.models as Record<string, Record<string, any>>;
    expect(models["claude-3-haiku-20240307"]!.cost).toEqual({ input: 0.25, output: 1.25, cache_read: 0.03, cache_write: 0.3, cache_write_1h: 0.5 });
    expect(models["claude-3-haiku-20240307"]!.price_corrections).toBeUndefined();
    expect(models["claude-opus-5-5"]!.cost).toEqual({ input: 4, output: 20, cache_read: 0.2, cache_write: 5 });
    expect(models["claude-opus-5-5"]!.price_corrections[0].reason).toContain("Anthropic publishes 0.2 for this model, not 10% of input");
  });
});

describe("the embedded catalog (build/catalog.ts runs the check)", () => {
  test("Claude 3 Sonnet's 5-minute write is 1.25x its $3 input, recorded as corrected from models.dev's 0.3", () => {
    const entry = embeddedCatalog().anthropic!.models["claude-3-sonnet-20240229"] as Record<string, any>;
    expect(entry.cost.cache_write).toBe(3.75);
    expect(entry.price_corrections).toEqual([
      {
        price: "cost.cache_write",
        from: 0.3,
        to: 3.75,
        reason: `the source's cache_write 0.3 contradicts the documented price; 125% of input 3: ${MULTIPLIERS} (5-minute cache writes: 1.25x base input)`,
      },
    ]);
    // 100,000 tokens written for 5 minutes: 100,000 × $3.75 per million.
    const cost = priceUsage({ input: 0, cacheRead: 0, cacheWrite5m: 100_000, cacheWrite1h: 0, output: 0 }, resolvePrice(embeddedCatalog(), "anthropic/claude-3-sonnet-20240229")!, "anthropic/claude-3-sonnet-20240229");
    expect(cost.costExact).toBe("0.375");
  });

  test("nothing is left to correct: every remaining contradiction of the multipliers is a price Anthropic publishes", () => {
    const findings = checkAnthropicCachePrices(structuredClone(embeddedCatalog()) as Record<string, Record<string, unknown>>);
    expect(findings.filter((f) => f.action === "corrected")).toEqual([]);
    expect([...new Set(findings.map((f) => f.model))]).toEqual(["anthropic/claude-3-haiku-20240307", "anthropic/claude-3-haiku", "anthropic/claude-fable-5-1", "anthropic/claude-opus-5-5"]);
  });
});
