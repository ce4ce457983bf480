import { describe, expect, test } from "bun:test";
import { invalidTokenCount, storableRaw } from "./raw-token-counts.ts";

describe("raw usage token counts", () => {
  test("the first field named like a count that holds no whole number ≥ 0 is named with its path and what is wrong", () => {
    expect(invalidTokenCount(JSON.parse('{"usage":{"prompt_tokens":12,"completion_tokens":1e400}}'))).toEqual({ path: "usage.completion_tokens", problem: "beyond 1.8e308, a number too large to be a count" });
    expect(invalidTokenCount(JSON.parse('{"promptTokensDetails":[{"modality":"TEXT","tokenCount":-1e400}]}'))).toEqual({ path: "promptTokensDetails[0].tokenCount", problem: "beyond -1.8e308, a number too large to be a count" });
    expect(invalidTokenCount({ input_tokens: -3 })).toEqual({ path: "input_tokens", problem: "-3, negative" });
    expect(invalidTokenCount({ input_tokens: 2.5 })).toEqual({ path: "input_tokens", problem: "2.5, not a whole number" });
    expect(invalidTokenCount({ input_tokens: 2 ** 53 })).toEqual({ path: "input_tokens", problem: "above 9007199254740991, too large to count exactly" });
    expect(invalidTokenCount({ input_tokens: "12" })).toEqual({ path: "input_tokens", problem: '"12", a string' });
    expect(invalidTokenCount({ input_tokens: Number.NaN })).toEqual({ path: "input_tokens", problem: "not a number" });
  });

  test("whole counts, unreported (null) counts and fields not named like counts pass", () => {
    expect(invalidTokenCount({ input_tokens: 0, output_tokens: 2 ** 53 - 1, reasoning_tokens: null, cost: 0.25, service_tier: "flex", cache_creation: { ephemeral_5m_input_tokens: 4 } })).toBeUndefined();
  });

  test("numbers JSON cannot hold are stored as strings saying what they were; a raw without them is returned as it is", () => {
    const raw = JSON.parse('{"prompt_tokens":1e400,"details":[{"tokens":-1e400},{"tokens":3}],"total_tokens":11}');
    expect(JSON.stringify(storableRaw(raw))).toBe('{"prompt_tokens":"beyond 1.8e308","details":[{"tokens":"beyond -1.8e308"},{"tokens":3}],"total_tokens":11}');
    const clean = { prompt_tokens: 5, details: [{ tokens: 3 }] };
    expect(storableRaw(clean)).toBe(clean);
  });
});
