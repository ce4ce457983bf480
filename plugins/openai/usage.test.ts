import { expect, test } from "bun:test";
import { chatUsage, responsesUsage } from "./usage.ts";

test("chatUsage: cached and written tokens come out of prompt_tokens; reasoning stays inside output", () => {
  const report = chatUsage({ prompt_tokens: 5000, completion_tokens: 700, prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 1200 }, completion_tokens_details: { reasoning_tokens: 500 } });
  expect(report.usage).toEqual({ input: 800, cacheRead: 3000, cacheWrite5m: 1200, cacheWrite1h: 0, output: 700, reasoning: 500 });
});

test("chatUsage: no details means no cache activity, not unknown input", () => {
  expect(chatUsage({ prompt_tokens: 28, completion_tokens: 38 }).usage).toEqual({ input: 28, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 38, reasoning: undefined });
});

test("chatUsage: usage that never arrived stays unknown (case 21)", () => {
  expect(chatUsage(null).usage).toEqual({ input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined });
});

test("chatUsage: cached above the prompt total makes input unknown, with a note", () => {
  const report = chatUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 20 } });
  expect(report.usage.input).toBeUndefined();
  expect(report.estimates?.[0]).toContain("smaller than its cached 20");
});

test("responsesUsage: input_tokens_details and output_tokens_details", () => {
  const report = responsesUsage({ input_tokens: 2000, input_tokens_details: { cached_tokens: 1536 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 128 }, total_tokens: 2300 });
  expect(report.usage).toEqual({ input: 464, cacheRead: 1536, cacheWrite5m: 0, cacheWrite1h: 0, output: 300, reasoning: 128 });
});

test("responsesUsage: the Codex CLI's flattened token_count record (case 07)", () => {
  const report = responsesUsage({ input_tokens: 16845360, cached_input_tokens: 16358912, output_tokens: 63820, reasoning_output_tokens: 24882, total_tokens: 16909180 });
  expect(report.usage).toEqual({ input: 486448, cacheRead: 16358912, cacheWrite5m: 0, cacheWrite1h: 0, output: 63820, reasoning: 24882 });
});
