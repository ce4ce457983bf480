import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ledgerStats, ledgerTotal, statsOf, totalOf } from "../meter/stats.ts";
import type { Usage } from "../plugin/usage.ts";
import { openStore } from "./store.ts";
import type { LedgerRow } from "./types.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-figures-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function row(id: string, sessionId: string, startedAt: number, partial: Partial<LedgerRow> & { usage: Usage }): LedgerRow {
  return {
    id, sessionId, prefixVersion: 1, role: "main", provider: "anthropic", model: "claude-x", protocol: "anthropic-messages",
    startedAt, firstTokenAt: null, finishedAt: null, latencyMs: null, ttftMs: null, outputTps: null, rawUsage: {},
    costUsd: null, providerCostUsd: null, providerRequestId: null, affinityKey: null, cacheMode: "auto", cacheTtl: "5m",
    chain: [], expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId: null, ...partial,
  };
}

const u = (input: number, cacheRead: number, cacheWrite5m: number, output: number): Usage => ({ input, cacheRead, cacheWrite5m, cacheWrite1h: 0, output, reasoning: 7 });

describe("ledger figures summed in SQL", () => {
  const store = openStore(join(dir, "store.db"));
  const a = store.createSession({ model: "anthropic/claude-x" });
  const b = store.createSession({ model: "openai/gpt-5" });
  const day = 86_400_000;
  const rows: LedgerRow[] = [
    row("r1", a.id, Date.UTC(2026, 0, 1, 10), { usage: u(0, 0, 3000, 100), costUsd: 0.01275, noCacheCostUsd: 0.0105, firstTokenAt: Date.UTC(2026, 0, 1, 10) + 500, finishedAt: Date.UTC(2026, 0, 1, 10) + 1500 }),
    row("r2", a.id, Date.UTC(2026, 0, 1, 11), { usage: u(0, 3000, 2000, 100), costUsd: 0.0099, noCacheCostUsd: 0.0165, role: "title", cacheableMax: 3000, costEstimate: "1h cache write priced at 2x input" }),
    row("r3", b.id, Date.UTC(2026, 0, 1, 11) + day, { usage: u(7000, 0, 0, 100), costUsd: null, noCacheCostUsd: null, provider: "openai", model: "gpt-5", cacheableMax: 5000 }),
    row("r4", b.id, Date.UTC(2026, 0, 1, 12) + day, { usage: u(10, 990, 0, 5), costUsd: 0.0001, noCacheCostUsd: 0.0011, provider: "openai", model: "gpt-5" }),
  ];
  for (const r of rows) store.recordRequest(r);

  for (const by of ["session", "model", "role", "day", "request"] as const) {
    test(`by ${by}: the same groups and figures as the in-memory computation`, () => {
      const sql = store.figures().sums(by).map(statsOf);
      expect(sql).toEqual(ledgerStats(rows, { by }));
    });
  }

  test("a read beyond the recorded cacheable maximum counts whole as cacheable in SQL too", () => {
    const byRequest = new Map(store.figures().sums("request").map((g) => [g.key, g.cacheable]));
    // r4 read 990 with no recorded maximum; r3 read nothing of its 5,000; r1 has neither.
    expect([...byRequest]).toEqual([["r1", 0], ["r2", 3000], ["r3", 5000], ["r4", 990]]);
  });

  test("the total and a session filter", () => {
    const figures = store.figures();
    const total = statsOf(totalOf(figures.sums("session")));
    expect(total).toEqual({ ...ledgerTotal(rows), key: "total" });
    expect(total.costExact).toBe("0.02275");
    expect(total.savingsExact).toBe("0.00535");
    expect(total.savingsLeftOut).toBe(1);
    expect(total.estimatedRequests).toBe(1);
    const onlyB = figures.sums("session", { sessionId: b.id });
    expect(onlyB.map((g) => [g.key, g.requests])).toEqual([[b.id, 2]]);
    expect(figures.requests(b.id).map((r) => [r.id, r.costUsd])).toEqual([["r3", null], ["r4", 0.0001]]);
  });

  test("rows recorded before figures were stored are priced once by backfill", () => {
    const old = row("r5", a.id, Date.UTC(2026, 0, 3), { usage: u(100, 0, 0, 10), costUsd: 0.00045 });
    store.recordRequest(old);
    const figures = store.figures();
    expect(figures.pending()).toBe(true);
    expect(figures.backfill(() => 0.00045)).toBe(1);
    expect(figures.pending()).toBe(false);
    expect(store.request("r5").noCacheCostUsd).toBe(0.00045);
  });
});
