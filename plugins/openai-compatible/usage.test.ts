import { expect, test } from "bun:test";
import { deepseekUsage, moonshotUsage, openaiCompatibleUsage, openrouterUsage, qwenUsage, xaiUsage } from "./usage.ts";

test("deepseekUsage: hit is the cache read, miss the uncached input", () => {
  expect(deepseekUsage({ prompt_tokens: 1000, prompt_cache_hit_tokens: 768, prompt_cache_miss_tokens: 232, completion_tokens: 90, completion_tokens_details: { reasoning_tokens: 60 } }).usage).toEqual({
    input: 232, cacheRead: 768, cacheWrite5m: 0, cacheWrite1h: 0, output: 90, reasoning: 60,
  });
});

test("moonshotUsage: cached_tokens at top level", () => {
  expect(moonshotUsage({ prompt_tokens: 500, completion_tokens: 20, cached_tokens: 256 }).usage).toMatchObject({ input: 244, cacheRead: 256, output: 20 });
});

test("moonshotUsage: cached_tokens in prompt_tokens_details", () => {
  expect(moonshotUsage({ prompt_tokens: 500, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 128 } }).usage).toMatchObject({ input: 372, cacheRead: 128 });
});

test("moonshotUsage: usage inside choices[0] of the final chunk", () => {
  const chunk = { choices: [{ index: 0, delta: {}, finish_reason: "stop", usage: { prompt_tokens: 40, completion_tokens: 7, cached_tokens: 32 } }] };
  expect(moonshotUsage(chunk).usage).toMatchObject({ input: 8, cacheRead: 32, output: 7 });
});

test("qwenUsage: reads and explicit writes are both inside prompt_tokens", () => {
  expect(qwenUsage({ prompt_tokens: 3000, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 1024, cache_creation_input_tokens: 1500, cache_type: "ephemeral" } }).usage).toEqual({
    input: 476, cacheRead: 1024, cacheWrite5m: 1500, cacheWrite1h: 0, output: 10, reasoning: undefined,
  });
});

test("openrouterUsage: cost kept as providerCostUsd (case 21), writes and 1h split", () => {
  const report = openrouterUsage({ prompt_tokens: 28, completion_tokens: 38, total_tokens: 66, cost: 7.1e-5, prompt_tokens_details: { cached_tokens: 0 } });
  expect(report.providerCostUsd).toBe(0.000071);
  expect(report.usage).toMatchObject({ input: 28, cacheRead: 0, output: 38 });
  const split = openrouterUsage({ prompt_tokens: 5000, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 3000 }, cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 } });
  expect(split.usage).toMatchObject({ input: 1000, cacheRead: 1000, cacheWrite5m: 1000, cacheWrite1h: 2000 });
});

test("xaiUsage: reasoning is outside completion_tokens (12 + 1 + 228 = 241)", () => {
  expect(xaiUsage({ prompt_tokens: 12, completion_tokens: 1, total_tokens: 241, completion_tokens_details: { reasoning_tokens: 228 } }).usage).toMatchObject({ input: 12, output: 229, reasoning: 228 });
});

test("xaiUsage: cached above prompt_tokens means the prompt excluded them", () => {
  const report = xaiUsage({ prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 400 } });
  expect(report.usage).toMatchObject({ input: 100, cacheRead: 400 });
  expect(report.estimates?.[0]).toContain("exceeds prompt_tokens");
});

test("xaiUsage: Responses shape keeps reasoning inside output_tokens", () => {
  expect(xaiUsage({ input_tokens: 50, input_tokens_details: { cached_tokens: 10 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 20 } }).usage).toMatchObject({ input: 40, cacheRead: 10, output: 30, reasoning: 20 });
});

test("openaiCompatibleUsage: chat and responses shapes", () => {
  expect(openaiCompatibleUsage({ prompt_tokens: 9, completion_tokens: 2 }).usage).toMatchObject({ input: 9, output: 2 });
  expect(openaiCompatibleUsage({ input_tokens: 9, output_tokens: 2 }).usage).toMatchObject({ input: 9, output: 2 });
});
