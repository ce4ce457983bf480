import { expect, test } from "bun:test";
import { geminiUsage } from "./usage.ts";

test("geminiUsage: thoughts are added to candidates (case 06)", () => {
  expect(geminiUsage({ promptTokenCount: 8, candidatesTokenCount: 12, thoughtsTokenCount: 918 }).usage).toEqual({
    input: 8, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 930, reasoning: 918,
  });
});

test("geminiUsage: cached content is inside promptTokenCount", () => {
  expect(geminiUsage({ promptTokenCount: 10000, cachedContentTokenCount: 8192, candidatesTokenCount: 50, totalTokenCount: 10050 }).usage).toEqual({
    input: 1808, cacheRead: 8192, cacheWrite5m: 0, cacheWrite1h: 0, output: 50, reasoning: 0,
  });
});

test("geminiUsage: reads usageMetadata from a whole response", () => {
  expect(geminiUsage({ candidates: [], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4 } }).usage.output).toBe(4);
});

test("geminiUsage: toolUsePromptTokenCount counted as input and flagged", () => {
  const report = geminiUsage({ promptTokenCount: 100, toolUsePromptTokenCount: 40, candidatesTokenCount: 5 });
  expect(report.usage.input).toBe(140);
  expect(report.estimates?.[0]).toContain("toolUsePromptTokenCount 40");
});

test("geminiUsage: no usageMetadata is unknown, never 0", () => {
  expect(geminiUsage({ candidates: [] }).usage).toEqual({ input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined });
});

test("geminiUsage: a totalTokenCount that leaves the thoughts out is flagged with the figures; thoughts stay output beside the candidates", () => {
  // The documented sum: 8 + 12 + 918 = 938 (wire fixture gemini-response.json); 20 says the thoughts are not in it.
  const report = geminiUsage({ promptTokenCount: 8, candidatesTokenCount: 12, thoughtsTokenCount: 918, totalTokenCount: 20 });
  expect(report.usage).toEqual({ input: 8, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 930, reasoning: 918 });
  expect(report.estimates).toEqual([
    "totalTokenCount 20 is not promptTokenCount + candidatesTokenCount + toolUsePromptTokenCount + thoughtsTokenCount (938): thoughtsTokenCount 918 counted as output beside candidatesTokenCount 12, as documented",
  ]);
});

test("geminiUsage: a totalTokenCount that is the documented sum, tool-use prompt included, flags nothing about thoughts", () => {
  const report = geminiUsage({ promptTokenCount: 50, cachedContentTokenCount: 20, candidatesTokenCount: 7, thoughtsTokenCount: 3, totalTokenCount: 60 });
  expect(report.estimates).toBeUndefined();
  const withTools = geminiUsage({ promptTokenCount: 100, toolUsePromptTokenCount: 40, candidatesTokenCount: 5, thoughtsTokenCount: 10, totalTokenCount: 155 });
  expect(withTools.estimates).toEqual(["toolUsePromptTokenCount 40 counted as input (billing not documented)"]);
});
