import { describe, expect, test } from "bun:test";
import type { RequestFigures } from "../session/ledger-figures.ts";
import { formatRequestFigures } from "./session-cost.ts";

describe("formatRequestFigures (`cachet cost`)", () => {
  const row = (usage: Partial<RequestFigures>): RequestFigures => ({
    id: "r_1", role: "main", provider: "acme", model: "m1", startedAt: 0,
    input: null, cacheRead: null, cacheWrite5m: null, cacheWrite1h: null, output: null, costUsd: null, costEstimate: null, ...usage,
  });

  test("usage a plugin could not map prints every count as unknown, never a silent 0", () => {
    expect(formatRequestFigures([row({})])).toBe("r_1  main  acme/m1  cost unknown  in ? · read ? · write ? · out ?\n");
  });

  test("known counts print as numbers; one known write TTL is the writes' sum", () => {
    expect(formatRequestFigures([row({ input: 5, cacheRead: 0, cacheWrite5m: 7, output: 3, costUsd: 0.1 })])).toBe("r_1  main  acme/m1  $0.1  in 5 · read 0 · write 7 · out 3\n");
  });
});
