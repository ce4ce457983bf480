import { describe, expect, test } from "bun:test";
import { parseConfig } from "../config.ts";
import { loadModelHost, resolveModel } from "../run/model-resolution.ts";
import { embeddedCatalog } from "./catalog.ts";
import { extrasOf, priceUsage, resolvePrice } from "./pricing.ts";

const host = await loadModelHost(parseConfig({}, "test"), {});

/** A raw usage read by the provider's own mapping and priced with the embedded catalog, as `run` prices it. */
function price(model: string, raw: unknown) {
  const r = resolveModel(host, model);
  const report = r.usage(raw).report;
  return priceUsage(report.usage, resolvePrice(embeddedCatalog(), r.catalogRef)!, r.catalogRef, extrasOf(report));
}

describe("reasoning reported above the output it is part of", () => {
  // OpenAI counts reasoning inside completion_tokens (providers.md §1), so 400 reasoning of 100 completion is inconsistent.
  const inconsistent = { prompt_tokens: 1000, completion_tokens: 100, completion_tokens_details: { reasoning_tokens: 400 } };
  const warning = "the provider reported 400 reasoning tokens but only 100 output tokens, which include them: the cost counts reasoning as at most the output (100)";

  test("without a reasoning price of its own (gpt-5: $1.25 in, $10 out): the output is billed, flagged with both figures", () => {
    const cost = price("openai/gpt-5", inconsistent);
    // 1000 × 1.25 + 100 × 10, per million.
    expect(cost.costExact).toBe("0.00225");
    expect(cost.warnings).toEqual([warning]);
    expect(cost.estimates).toEqual([warning]);
  });

  test("with a reasoning price of its own (qwen-plus: $0.4 in, $1.2 out, $4 reasoning): reasoning counts as the whole output", () => {
    const cost = price("alibaba/qwen-plus", inconsistent);
    // 1000 × 0.4 + 100 × 4 (reasoning, at most the output) + 0 × 1.2, per million.
    expect(cost.costExact).toBe("0.0008");
    expect(cost.lines.find((l) => l.category === "reasoning")?.tokens).toBe(100);
    expect(cost.lines.find((l) => l.category === "output")?.tokens).toBe(0);
    expect(cost.warnings).toEqual([warning]);
    expect(cost.estimates).toEqual([warning]);
  });

  test("consistent usage is priced as before, with no warning (reasoning below and equal to the output)", () => {
    const below = price("alibaba/qwen-plus", { prompt_tokens: 1000, completion_tokens: 100, completion_tokens_details: { reasoning_tokens: 60 } });
    // 1000 × 0.4 + 40 × 1.2 + 60 × 4, per million.
    expect(below.costExact).toBe("0.000688");
    const equal = price("alibaba/qwen-plus", { prompt_tokens: 1000, completion_tokens: 100, completion_tokens_details: { reasoning_tokens: 100 } });
    expect(equal.costExact).toBe("0.0008");
    const plain = price("openai/gpt-5", { prompt_tokens: 1000, completion_tokens: 100, completion_tokens_details: { reasoning_tokens: 100 } });
    expect(plain.costExact).toBe("0.00225");
    for (const cost of [below, equal, plain]) {
      expect(cost.warnings).toEqual([]);
      expect(cost.estimates).toEqual([]);
    }
  });

  test("Gemini reports thoughts beside the candidates: its mapping never gives reasoning above the output", () => {
    // gemini-2.5-flash: $0.30 in, $2.50 out; 918 thoughts + 12 candidates billed as 930 output tokens.
    const cost = price("google/gemini-2.5-flash", { promptTokenCount: 8, candidatesTokenCount: 12, thoughtsTokenCount: 918, totalTokenCount: 938 });
    expect(cost.usage.output).toBe(930);
    expect(cost.costExact).toBe("0.0023274");
    expect(cost.warnings).toEqual([]);
  });
});
