import { describe, expect, test } from "bun:test";
import type { Usage } from "../plugin/usage.ts";
import type { ChainLink, LedgerRow } from "../session/types.ts";
import { chainHash, hashText } from "../wire/hash.ts";
import type { Catalog } from "./catalog.ts";
import { formatSessionCost, sessionCost } from "./session-cost.ts";
import { cacheableTokens, formatCostLine, formatStats, ledgerStats, ledgerTotal, parseSince } from "./stats.ts";

const catalog: Catalog = { anthropic: { models: { "claude-x": { cost: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } } } } };

function links(ids: string[], tokens: number): ChainLink[] {
  let prefix: string | undefined;
  return ids.map((nodeId) => {
    const content = hashText(nodeId);
    prefix = chainHash(prefix, content);
    return { nodeId, kind: nodeId.includes("#") ? "text" : nodeId === "sys" ? "system" : "tool", content, prefix, tokens };
  });
}

function row(id: string, partial: Partial<LedgerRow> & { usage: Usage }): LedgerRow {
  return {
    id, sessionId: "s1", prefixVersion: 1, role: "main", provider: "anthropic", model: "claude-x", protocol: "anthropic-messages",
    startedAt: 0, firstTokenAt: null, finishedAt: null, latencyMs: null, ttftMs: null, outputTps: null, rawUsage: {},
    costUsd: null, providerCostUsd: null, providerRequestId: null, affinityKey: null, cacheMode: "auto", cacheTtl: "5m",
    chain: [], expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId: null, ...partial,
  };
}

const u = (input: number, cacheRead: number, cacheWrite5m: number, output: number): Usage => ({ input, cacheRead, cacheWrite5m, cacheWrite1h: 0, output, reasoning: undefined });

// Three turns of one session: each chain extends the previous one by two message blocks.
const chain1 = links(["sys", "tool:a", "m1#0"], 1000);
const chain2 = links(["sys", "tool:a", "m1#0", "m2#0", "m3#0"], 1000);
const chain3 = links(["sys", "tool:a", "m1#0", "m2#0", "m3#0", "m4#0", "m5#0"], 1000);
const rows: LedgerRow[] = [
  row("r1", { startedAt: Date.UTC(2026, 0, 1, 10), chain: chain1, usage: u(0, 0, 3000, 100), costUsd: 0.01275, messageId: "m2", firstTokenAt: Date.UTC(2026, 0, 1, 10) + 500, finishedAt: Date.UTC(2026, 0, 1, 10) + 1500 }),
  row("r2", { startedAt: Date.UTC(2026, 0, 1, 11), chain: chain2, cacheableMax: 3000, usage: u(0, 3000, 2000, 100), costUsd: 0.0099, messageId: "m4", role: "title" }),
  // The third request misses the cache entirely although 5,000 tokens were cacheable.
  row("r3", { startedAt: Date.UTC(2026, 0, 2, 9), chain: chain3, cacheableMax: 5000, usage: u(7000, 0, 0, 100), costUsd: null, messageId: "m6" }),
];

describe("ledger stats", () => {
  test("cacheable maximum is what the pipeline recorded on each row (0 when unknown)", () => {
    expect([...cacheableTokens(rows)]).toEqual([["r1", 0], ["r2", 3000], ["r3", 5000]]);
  });

  test("a read beyond the recorded cacheable maximum (an entry no recorded request wrote) counts whole as cacheable: efficiency never above 100%", () => {
    const warmed = [
      // A new session's first request read 4,545 tokens another client had cached: nothing recorded explains it.
      row("w1", { chain: chain1, usage: u(40, 4545, 0, 10) }),
      // Read 3,200 where recorded entries could serve 3,000; then read 1,000 of 3,000.
      row("w2", { chain: chain2, cacheableMax: 3000, usage: u(40, 3200, 0, 10) }),
      row("w3", { chain: chain3, cacheableMax: 3000, usage: u(2040, 1000, 0, 10) }),
    ];
    expect([...cacheableTokens(warmed)]).toEqual([["w1", 4545], ["w2", 3200], ["w3", 3000]]);
    const byRequest = ledgerStats(warmed, { by: "request" });
    expect(byRequest.map((g) => g.cacheEfficiency)).toEqual([1, 1, 1000 / 3000]);
    const t = ledgerTotal(warmed);
    expect(t.cacheableTokens).toBe(10745);
    expect(t.cacheEfficiency).toBe(8745 / 10745);
  });

  test("totals: tokens, hit rate, cacheable maximum, efficiency, cost, savings, tokens/s", () => {
    const t = ledgerTotal(rows, { catalog });
    expect(t.tokens).toEqual({ input: 7000, cacheRead: 3000, cacheWrite5m: 5000, cacheWrite1h: 0, output: 300, reasoning: 0 });
    expect(t.promptTokens).toBe(15000);
    expect(t.hitRate).toBe(3000 / 15000);
    expect(t.cacheableShare).toBe(8000 / 15000);
    expect(t.cacheEfficiency).toBe(3000 / 8000);
    expect(t.costExact).toBe("0.02265");
    expect(t.unpricedRequests).toBe(1);
    // Savings over the priced requests r1, r2 (r3 is unpriced and left out): no caching 3000·3 + 100·15 = 0.0105
    // and 5000·3 + 100·15 = 0.0165, together 0.027; actual 0.01275 + 0.0099 = 0.02265; savings 0.00435.
    expect(t.noCacheCostUsd).toBe(0.027);
    expect(t.savingsUsd).toBe(0.00435);
    expect(t.savingsLeftOut).toBe(1);
    expect(t.outputTps).toBe(100);
  });

  test("grouping by role and by day", () => {
    expect(ledgerStats(rows, { by: "role" }).map((g) => [g.key, g.requests])).toEqual([["main", 2], ["title", 1]]);
    expect(ledgerStats(rows, { by: "day" }).map((g) => [g.key, g.requests])).toEqual([["2026-01-01", 2], ["2026-01-02", 1]]);
    expect(ledgerStats(rows, { by: "request" }).map((g) => g.key)).toEqual(["r1", "r2", "r3"]);
    const second = ledgerStats(rows, { by: "request" })[1]!;
    expect(second.cacheEfficiency).toBe(1);
  });

  test("without a catalog, rows recorded without their uncached cost are left out of savings (null when none is known), not 0", () => {
    expect(ledgerTotal(rows).savingsUsd).toBeNull();
    expect(ledgerTotal(rows).savingsLeftOut).toBe(3);
  });

  test("the uncached cost stored when recorded is used; a negative saving prints -$", () => {
    const stored = [row("r1", { usage: u(0, 0, 3000, 100), costUsd: 0.01275, noCacheCostUsd: 0.0105 })];
    const t = ledgerTotal(stored);
    expect(t.savingsExact).toBe("-0.00225");
    expect(formatStats([], t)).toContain("-$0.00225");
  });

  test("parseSince", () => {
    const now = Date.UTC(2026, 5, 10);
    expect(parseSince("7d", now)).toBe(now - 7 * 86_400_000);
    expect(parseSince("90m", now)).toBe(now - 90 * 60_000);
    expect(parseSince("2026-01-31", now)).toBe(Date.UTC(2026, 0, 31));
    expect(parseSince("soon", now)).toBeUndefined();
    expect(parseSince("0s", now)).toBe(now);
    expect(parseSince("30s", now)).toBe(now - 30_000);
    // One duration parser with scenarios (src/duration.ts): sums and weeks.
    expect(parseSince("1h30m", now)).toBe(now - 90 * 60_000);
    expect(parseSince("2w", now)).toBe(now - 14 * 86_400_000);
    // Impossible dates are refused, not rolled over (Date.parse reads 2026-02-30 as March 2).
    expect(parseSince("2026-02-30", now)).toBeUndefined();
    expect(parseSince("2026-13-01", now)).toBeUndefined();
    expect(parseSince("2026-01-31T25:00Z", now)).toBeUndefined();
    expect(parseSince("2028-02-29", now)).toBe(Date.UTC(2028, 1, 29));
    expect(parseSince("2026-01-31T12:30:00Z", now)).toBe(Date.UTC(2026, 0, 31, 12, 30));
  });

  test("formatCostLine", () => {
    expect(formatCostLine({ usage: u(86, 1920, 0, 300), costUsd: 0.005615, providerCostUsd: null })).toBe("cost $0.005615 · in 86 · cache read 1,920 (96% hit) · write 0 · out 300");
    expect(formatCostLine({ usage: { ...u(28, 0, 0, 38), cacheRead: undefined }, costUsd: null, providerCostUsd: 0.000071 })).toBe("cost unknown · in 28 · cache read ? · write 0 · out 38 · provider says $0.000071");
    // Below a millionth String() writes an exponent: money is printed with its digits.
    expect(formatCostLine({ usage: u(1, 0, 0, 1), costUsd: 3.75e-7, providerCostUsd: 7.5e-8 })).toBe("cost $0.000000375 · in 1 · cache read 0 (0% hit) · write 0 · out 1 · provider says $0.000000075");
  });
});

describe("session cost tree", () => {
  test("node sums equal each request's billed totals; blocks group under their message", () => {
    const views = sessionCost(rows, catalog);
    for (const v of views) expect(v.nodeTokens).toBe(v.billedPrompt);
    const second = views[1]!;
    expect(second.estimatedPrompt).toBe(5000);
    expect(second.tree.map((n) => [n.id, n.status])).toEqual([["sys", "read"], ["tool:a", "read"], ["m1", "read"], ["m2", "write-5m"], ["m3", "write-5m"]]);
    expect(second.tree[2]!.children!.map((c) => c.id)).toEqual(["m1#0"]);
    // 3000 read at 0.3 + 2000 written at 3.75 = 0.0009 + 0.0075; output 100 at 15 = 0.0015.
    const promptUsd = second.tree.reduce((s, n) => s + Number(n.usdExact), 0);
    expect(promptUsd).toBeCloseTo(0.0084, 12);
    expect(second.output).toEqual({ messageId: "m4", tokens: 100, usd: 0.0015, usdExact: "0.0015", parts: [{ category: "output", tokens: 100, usd: 0.0015, usdExact: "0.0015" }] });
    expect(second.charges).toEqual([]);
  });

  test("a flagged estimate's request line is marked ~, as `cost` without --tree marks it", () => {
    const [view] = sessionCost([row("r1", { chain: links(["sys"], 100), usage: u(100, 0, 0, 10), costUsd: 0.00045, costEstimate: "the stream was cut", messageId: "m2" })], catalog);
    expect(view!.costEstimate).toBe("the stream was cut");
    expect(formatSessionCost([view!], false)).toBe("r1  main  anthropic/claude-x  ~$0.00045  in 100 · read 0 · write 0 · out 10\n");
  });

  test("text lists the nodes given billed tokens and counts, not lists, those given none; --json keeps every node", () => {
    // Estimates 1000, 1, 1, 1000 scaled to 100 billed: the second 1-token node's share rounds to no token at all.
    const sized = links(["sys", "tool:a", "tool:b", "m1#0"], 1).map((link, i) => ({ ...link, tokens: [1000, 1, 1, 1000][i]! }));
    const [view] = sessionCost([row("r1", { chain: sized, usage: u(100, 0, 0, 10), costUsd: 0.00045, messageId: "m2" })], catalog);
    expect(view!.tree.map((n) => [n.id, n.tokens, n.status])).toEqual([["sys", 49, "uncached"], ["tool:a", 1, "uncached"], ["tool:b", 0, "empty"], ["m1", 50, "uncached"]]);
    expect(formatSessionCost([view!], true)).toBe(
      [
        "r1  main  anthropic/claude-x  $0.00045  in 100 · read 0 · write 0 · out 10",
        "  nodes: estimated 2002 tokens scaled ×0.0500 to the 100 billed",
        "  system      sys                            49  uncached  $0.000147",
        "  tool        tool:a                          1  uncached  $0.000003",
        "  message     m1                             50  uncached  $0.00015",
        "    text        m1#0                           50  uncached  $0.00015",
        "  (1 node given no billed token not listed; --json lists every node)",
        "  output      m2                             10            $0.00015",
        "",
      ].join("\n"),
    );
  });

  test("a request with no prompt count reported is not attributed: no nodes, one line saying why, never a column of zeros", () => {
    const refused = row("r1", { chain: links(["sys", "m1#0"], 40), usage: { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined }, costUsd: 0, status: "error" });
    const lost = { ...refused, id: "r2", costUsd: null, status: "lost" as const };
    const views = sessionCost([refused, lost], catalog);
    expect(views.map((v) => [v.attributed, v.tree, v.nodeTokens])).toEqual([[false, [], 0], [false, [], 0]]);
    expect(formatSessionCost(views, true)).toBe(
      [
        "r1  main  anthropic/claude-x  $0  in ? · read ? · write ? · out ?  (status error)",
        "  nodes: estimated 80 tokens, not attributed: the provider reported no usage (nothing was billed)",
        "r2  main  anthropic/claude-x  cost unknown  in ? · read ? · write ? · out ?  (status lost)",
        "  nodes: estimated 80 tokens, not attributed: the provider reported no usage",
        "",
      ].join("\n"),
    );
  });
});
