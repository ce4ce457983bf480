import { expect, test } from "bun:test";
import { anthropicUsage } from "./usage.ts";

const table: Array<[string, unknown, Record<string, number | undefined>, string[]?]> = [
  ["disjoint counts with the TTL split", { input_tokens: 12, cache_read_input_tokens: 300, cache_creation_input_tokens: 50, cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 }, output_tokens: 40, output_tokens_details: { thinking_tokens: 25 } },
    { input: 12, cacheRead: 300, cacheWrite5m: 20, cacheWrite1h: 30, output: 40, reasoning: 25 }],
  ["aggregate write only: 5m with an estimate", { input_tokens: 1, cache_creation_input_tokens: 100, cache_read_input_tokens: 0, output_tokens: 2 },
    { input: 1, cacheRead: 0, cacheWrite5m: 100, cacheWrite1h: 0, output: 2, reasoning: undefined }, ["cache write TTL split missing: priced as 5m"]],
  ["stream-merged usage of case 19 (cumulative, not added)", { input_tokens: 9, cache_read_input_tokens: 1, output_tokens: 16 },
    { input: 9, cacheRead: 1, cacheWrite5m: undefined, cacheWrite1h: undefined, output: 16 }],
  ["null cache fields stay unknown", { input_tokens: 5, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 3 },
    { input: 5, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: 3 }],
  ["split smaller than the aggregate: the rest is 5m, flagged", { input_tokens: 0, cache_creation_input_tokens: 100, cache_creation: { ephemeral_1h_input_tokens: 70 }, output_tokens: 0 },
    { input: 0, cacheWrite5m: 30, cacheWrite1h: 70 }],
  ["garbage is unknown, never NaN", { input_tokens: "12", output_tokens: Number.NaN, cache_read_input_tokens: -1 },
    { input: undefined, cacheRead: undefined, output: undefined }],
];

for (const [name, raw, expected, estimates] of table) {
  test(`anthropicUsage: ${name}`, () => {
    const report = anthropicUsage(raw);
    expect(report.raw).toBe(raw);
    for (const [key, value] of Object.entries(expected)) expect(report.usage[key as keyof typeof report.usage]).toBe(value);
    if (estimates) expect(report.estimates).toEqual(estimates);
  });
}

test("anthropicUsage: a non-object gives all-unknown usage", () => {
  expect(anthropicUsage(null).usage).toEqual({ input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined });
});

test("anthropicUsage: server-side compaction: the top-level counts are the answer's pass; each compaction iteration is a pass of role server_compaction", () => {
  const compactionPass = { type: "compaction", input_tokens: 180000, cache_read_input_tokens: 4000, cache_creation_input_tokens: 0, output_tokens: 3500 };
  const raw = { input_tokens: 45000, cache_read_input_tokens: 4000, output_tokens: 1234, iterations: [compactionPass, { type: "message", input_tokens: 23000, output_tokens: 1000 }] };
  const report = anthropicUsage(raw);
  expect(report.usage).toMatchObject({ input: 45000, cacheRead: 4000, output: 1234 });
  expect(report.passes).toEqual([{ role: "server_compaction", usage: { input: 180000, cacheRead: 4000, cacheWrite5m: 0, cacheWrite1h: 0, output: 3500, reasoning: undefined }, raw: compactionPass }]);
  // Re-applying an earlier compaction block bills no new pass: no iterations, no passes.
  expect(anthropicUsage({ input_tokens: 10, output_tokens: 2 }).passes).toBeUndefined();
});
