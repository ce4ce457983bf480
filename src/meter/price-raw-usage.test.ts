import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { CASE_PRICES_FILE, COST_CASES } from "../../test/fixtures/meter/cases.ts";
import { parseConfig } from "../config.ts";
import type { CachetError } from "../errors.ts";
import { loadModelHost, resolveModel } from "../run/model-resolution.ts";
import { embeddedCatalog } from "./catalog.ts";
import { formatPriceTable, priceRawUsage } from "./price-raw-usage.ts";
import { derivedCacheShare } from "./price-rules.ts";

const pricesText = readFileSync(CASE_PRICES_FILE, "utf8");
const host = await loadModelHost(parseConfig({}, "test"), {});

/** The model as `cachet price` resolves it (the provider's own usage mapping and catalog id). */
function resolved(model: string) {
  const r = resolveModel(host, model);
  return { model, catalogRef: r.catalogRef, read: r.usage };
}

function price(model: string, usage: unknown, extra: { overrides?: Record<string, Record<string, number>>; partial?: boolean } = {}) {
  return priceRawUsage({ ...resolved(model), usageText: JSON.stringify(usage), usageOrigin: "test", catalog: embeddedCatalog(), pricesText, pricesOrigin: CASE_PRICES_FILE, ...extra });
}

describe("cost cases through the price command's library function", () => {
  for (const c of COST_CASES) {
    test(c.name, () => {
      const { output } = price(c.model, c.usage, c.partial ? { partial: true } : {});
      expect(output.cost_usd_exact).toBe(c.expected);
      expect(output.lower_bound).toBe(c.partial === true);
      if (c.partial) expect(output.estimates.join("\n")).toContain("lower bound");
      if (c.providerCost !== undefined) expect(output.provider_cost_usd).toBe(c.providerCost);
      if (c.serviceTier !== undefined) expect(output.service_tier).toBe(c.serviceTier);
      expect(Math.abs(output.cost_usd! - Number(c.expected))).toBeLessThan(1e-9);
      if (c.buggy) expect(output.cost_usd_exact).not.toBe(c.buggy);
      if (c.tier !== undefined) expect(output.tier?.size ?? null).toBe(c.tier);
      const lineSum = output.lines.reduce((s, l) => s + l.usd!, 0);
      expect(Math.abs(lineSum - output.cost_usd!)).toBeLessThan(1e-9);
    });
  }
});

describe("price output details", () => {
  test("case 01 tokens and lines", () => {
    const { output } = price("openai/gpt-4o", COST_CASES[0]!.usage);
    expect(output.tokens).toEqual({ input: 86, cacheRead: 1920, cacheWrite5m: 0, cacheWrite1h: 0, output: 300, reasoning: 0 });
    expect(output.lines.find((l) => l.category === "cache_read")).toEqual({ category: "cache_read", tokens: 1920, price_per_million: 1.25, usd: 0.0024 });
    expect(output.tier).toBeNull();
    expect(output.model).toBe("openai/gpt-4o");
  });

  test("case 08 without the TTL split falls back to 5m and says it is an estimate", () => {
    const { output } = price("anthropic/claude-opus-4-5", { input_tokens: 0, cache_creation_input_tokens: 100000, cache_read_input_tokens: 0, output_tokens: 0 });
    expect(output.cost_usd_exact).toBe("0.625");
    expect(output.estimates).toContain("cache write TTL split missing: priced as 5m");
  });

  test("case 08 notes the 2x-input rule for the 1h write price", () => {
    const { output } = price("anthropic/claude-opus-4-5", COST_CASES.find((c) => c.name.startsWith("08"))!.usage);
    expect(output.lines.find((l) => l.category === "cache_write_1h")?.price_per_million).toBe(10);
    expect(output.estimates.join(" ")).toContain("2x input");
  });

  test("a configured cache_write_1h price wins over the 2x rule", () => {
    const { output } = price("anthropic/claude-opus-4-5", { input_tokens: 0, cache_creation_input_tokens: 1000, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 1000 }, output_tokens: 0 }, {
      overrides: { "anthropic/claude-opus-4-5": { cache_write_1h: 12 } },
    });
    expect(output.cost_usd_exact).toBe("0.012");
  });

  test("case 04: the AI SDK v6 cache-inclusive object is refused as Anthropic usage, not mis-priced", () => {
    expect(() => price("anthropic/claude-sonnet-4-5", { inputTokens: 4740, inputTokenDetails: { noCacheTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 4735 }, outputTokens: 255 })).toThrow(
      /usage object of provider anthropic/,
    );
  });

  test("case 21: OpenRouter's own cost is kept beside the computed one", () => {
    const { output } = price("openrouter/openai/gpt-4o-mini", { prompt_tokens: 28, completion_tokens: 38, total_tokens: 66, cost: 7.1e-5, prompt_tokens_details: { cached_tokens: 0 } });
    expect(output.provider_cost_usd).toBe(0.000071);
    expect(output.cost_usd_exact).toBe("0.000027");
  });

  test("case 35 past the free BYOK requests: OpenRouter's fee (cost) is a router_fee line on top of the tokens billed to the user's key", () => {
    // 9171×3 + 113×15 = 29208 micro-$ upstream; OpenRouter's 5% fee of it, 0.0014604, is what `cost` says.
    const usage = { prompt_tokens: 9171, completion_tokens: 113, total_tokens: 9284, cost: 0.0014604, is_byok: true, prompt_tokens_details: { cached_tokens: 0 }, cost_details: { upstream_inference_cost: 0.029208 } };
    const { output, cost } = price("openrouter/anthropic/claude-sonnet-4.5", usage);
    expect(output.cost_usd_exact).toBe("0.0306684");
    expect(output.provider_cost_usd).toBe(0.0306684);
    expect(output.lines.at(-1)).toEqual({ category: "router_fee", unit: "request", tokens: 1, price_per_million: 1460.4, usd: 0.0014604 });
    expect(formatPriceTable(cost)).toContain("router_fee (request)");
  });

  test("a missing cache_read price makes the cost unknown, not free", () => {
    const { output } = priceRawUsage({
      ...resolved("openai-compatible/model-x"),
      usageText: JSON.stringify({ prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 50 } }),
      usageOrigin: "test",
      catalog: { "openai-compatible": { models: { "model-x": { cost: { input: 1, output: 2 } } } } },
    });
    expect(output.cost_usd).toBeNull();
    expect(output.unknown_reason).toBe("no cache_read price for openai-compatible/model-x and 50 cache_read tokens");
  });

  test("a missing cache price with zero tokens in that category does not block the cost", () => {
    const { output } = priceRawUsage({
      ...resolved("openai-compatible/model-x"),
      usageText: JSON.stringify({ prompt_tokens: 100, completion_tokens: 10 }),
      usageOrigin: "test",
      catalog: { "openai-compatible": { models: { "model-x": { cost: { input: 1, output: 2 } } } } },
    });
    expect(output.cost_usd_exact).toBe("0.00012");
  });

  test("bad input: malformed JSON, wrong shape, unknown model, bad --prices", () => {
    const base = { ...resolved("openai/gpt-4o"), usageOrigin: "u.json", catalog: embeddedCatalog() };
    expect(() => priceRawUsage({ ...base, usageText: "{nope" })).toThrow(/malformed JSON in usage u.json/);
    expect(() => priceRawUsage({ ...base, usageText: "[1,2]" })).toThrow(/usage object of provider openai/);
    expect(() => priceRawUsage({ ...base, usageText: '{"foo":1}' })).toThrow(/no input or output token counts/);
    expect(() => priceRawUsage({ ...base, ...resolved("openai/no-such-model"), usageText: '{"prompt_tokens":1,"completion_tokens":1}' })).toThrow(/unknown model openai\/no-such-model/);
    expect(() => resolveModel(host, "gpt-4o")).toThrow(/provider\/model/);
    expect(() => priceRawUsage({ ...base, usageText: '{"prompt_tokens":1,"completion_tokens":1}', pricesText: '{"openai":{"models":{"gpt-4o":{"cost":{"input":"cheap"}}}}}', pricesOrigin: "p.json" })).toThrow(
      /invalid price catalog p.json at "openai.models.gpt-4o.cost.input"/,
    );
  });

  test("a token count that is negative, fractional or not a number is refused, naming the field (not read as unreported)", () => {
    const base = { ...resolved("openai/gpt-4o"), usageOrigin: "u.json", catalog: embeddedCatalog() };
    const refused = (usage: unknown) => {
      try {
        priceRawUsage({ ...base, usageText: JSON.stringify(usage) });
      } catch (error) {
        return { code: (error as CachetError).code, exit: (error as CachetError).exitCode, message: (error as Error).message };
      }
      throw new Error("not refused");
    };
    expect(refused({ prompt_tokens: -5, completion_tokens: 3 })).toEqual({ code: "INPUT_INVALID", exit: 3, message: "usage u.json: prompt_tokens is -5, negative: a token count is a whole number ≥ 0" });
    expect(refused({ prompt_tokens: 10, completion_tokens: 2.5 }).message).toBe("usage u.json: completion_tokens is 2.5, not a whole number: a token count is a whole number ≥ 0");
    expect(refused({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: "4" } }).message).toBe('usage u.json: prompt_tokens_details.cached_tokens is "4", a string: a token count is a whole number ≥ 0');
    expect(refused({ usage: { prompt_tokens: 10, completion_tokens: -1 }, service_tier: "flex" }).message).toStartWith("usage u.json: usage.completion_tokens is -1, negative");
    const gemini = { ...resolved("google/gemini-2.5-flash"), usageOrigin: "g.json", catalog: embeddedCatalog() };
    expect(() => priceRawUsage({ ...gemini, usageText: JSON.stringify({ promptTokenCount: 10, candidatesTokenCount: 2, promptTokensDetails: [{ modality: "TEXT", tokenCount: -10 }] }) })).toThrow(
      "usage g.json: promptTokensDetails[0].tokenCount is -10, negative",
    );
    // null is a count the provider left unreported, as OpenAI sends some details.
    expect(priceRawUsage({ ...base, usageText: JSON.stringify({ prompt_tokens: 10, completion_tokens: 3, completion_tokens_details: { audio_tokens: null } }) }).output.cost_usd).not.toBeNull();
  });

  test("the embedded catalog prices a real model", () => {
    const { output } = priceRawUsage({ ...resolved("anthropic/claude-sonnet-4-5"), usageText: '{"input_tokens":1000000,"output_tokens":0}', usageOrigin: "t", catalog: embeddedCatalog() });
    expect(output.cost_usd_exact).toBe("3");
  });

  test("human table lists each category and the total", () => {
    const { cost } = price("openai/gpt-4o", COST_CASES[0]!.usage);
    const table = formatPriceTable(cost);
    expect(table).toContain("openai/gpt-4o  base prices");
    expect(table).toMatch(/input\s+86\s+2\.5\s+0\.000215/);
    expect(table).toMatch(/total\s+0\.005615/);
  });
});

describe("Alibaba cache prices the catalog lacks, derived from the input price (explicit hit 10%, creation 125%)", () => {
  const DOC = "https://www.alibabacloud.com/help/en/model-studio/context-cache";
  const explicit = { prompt_tokens: 3100, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 3000, cache_creation_input_tokens: 50, cache_type: "ephemeral" } };
  const alibaba = (cost: Record<string, unknown>) => ({ alibaba: { models: { "qwen-x": { cost } } } }) as Parameters<typeof priceRawUsage>[0]["catalog"];
  const priceWith = (catalog: Parameters<typeof priceRawUsage>[0]["catalog"], usage: unknown, model = "alibaba/qwen-x") =>
    priceRawUsage({ ...resolved(model), usageText: JSON.stringify(usage), usageOrigin: "test", catalog });

  test("qwen-plus from the embedded catalog (input 0.4, no cache prices): read 0.04, write 0.5 $/M, each line marked derived", () => {
    const { output, cost } = priceWith(embeddedCatalog(), explicit, "alibaba/qwen-plus");
    // 50 input x 0.4 + 3000 read x 0.04 + 50 write x 0.5 + 20 output x 1.2, per million.
    expect(output.cost_usd_exact).toBe("0.000189");
    expect(output.lines.find((l) => l.category === "cache_read")).toEqual({ category: "cache_read", tokens: 3000, price_per_million: 0.04, usd: 0.00012, derived: `10% of input, derived by ${DOC} (explicit cache hit)` });
    expect(output.lines.find((l) => l.category === "cache_write_5m")).toEqual({ category: "cache_write_5m", tokens: 50, price_per_million: 0.5, usd: 0.000025, derived: `125% of input, derived by ${DOC} (explicit cache creation)` });
    expect(output.lines.find((l) => l.category === "input")!.derived).toBeUndefined();
    expect(output.estimates).toEqual([
      `cache_read priced at 10% of input, derived by ${DOC} (explicit cache hit): the catalog has no cache_read price for alibaba/qwen-plus`,
      `cache_write_5m priced at 125% of input, derived by ${DOC} (explicit cache creation): the catalog has no cache_write price for alibaba/qwen-plus`,
    ]);
    const table = formatPriceTable(cost);
    expect(table).toMatch(/cache_read\s+3000\s+0\.04 \(derived\)\s+0\.00012/);
    expect(table).toMatch(/cache_write_5m\s+50\s+0\.5 \(derived\)\s+0\.000025/);
    expect(table).toMatch(/total\s+0\.000189 \(estimate\)/);
  });

  test("the catalog's own cache prices win over the rule", () => {
    const { output } = priceWith(alibaba({ input: 1, output: 2, cache_read: 0.3, cache_write: 1.1 }), explicit);
    expect(output.lines.filter((l) => l.derived)).toEqual([]);
    expect(output.estimates).toEqual([]);
    expect(output.lines.find((l) => l.category === "cache_read")!.price_per_million).toBe(0.3);
    expect(output.lines.find((l) => l.category === "cache_write_5m")!.price_per_million).toBe(1.1);
  });

  test("no input price: nothing is derived, the cost stays unknown", () => {
    const { output } = priceWith(alibaba({ output: 2 }), { prompt_tokens: 3000, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 3000, cache_type: "ephemeral" } });
    expect(output.cost_usd).toBeNull();
    expect(output.unknown_reason).toBe("no cache_read price for alibaba/qwen-x and 3000 cache_read tokens");
    expect(output.lines.filter((l) => l.derived)).toEqual([]);
  });

  test("above a long-context tier without cache prices, the rule applies to the tier's input price", () => {
    const { output } = priceWith(alibaba({ input: 1, output: 2, tiers: [{ tier: { size: 1000 }, input: 4, output: 8 }] }), explicit);
    expect(output.tier).toEqual({ size: 1000, prompt_tokens: 3100 });
    expect(output.lines.find((l) => l.category === "cache_read")!.price_per_million).toBe(0.4);
    expect(output.lines.find((l) => l.category === "cache_write_5m")!.price_per_million).toBe(5);
  });

  test("an implicit hit keeps its own rule (20% of input), not marked derived", () => {
    const { output } = priceWith(alibaba({ input: 1, output: 2 }), { prompt_tokens: 1000, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 600 } });
    expect(output.lines.find((l) => l.category === "cache_read")).toMatchObject({ price_per_million: 0.2, usd: 0.00012 });
    expect(output.lines.find((l) => l.category === "cache_read")!.derived).toBeUndefined();
  });

  test("the rule is Alibaba's: another provider's missing cache price still makes the cost unknown; a read of unreported mode has no rule", () => {
    expect(derivedCacheShare("openai", "cache_read", "explicit")).toBeUndefined();
    expect(derivedCacheShare("alibaba", "cache_read", undefined)).toBeUndefined();
    expect(derivedCacheShare("alibaba", "cache_write", undefined)).toMatchObject({ numerator: 5n, denominator: 4n });
  });
});
