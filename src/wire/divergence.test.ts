import { describe, expect, test } from "bun:test";
import type { CacheRules } from "../plugin/provider.ts";
import type { Usage } from "../plugin/usage.ts";
import type { ChainLink } from "../session/types.ts";
import { cacheableMaximum, explain, liveCacheableMaximum, otherSessionsSince, type ComparedRow } from "./divergence.ts";
import { chainHash, hashText } from "./hash.ts";

const anthropic: CacheRules = { mode: "breakpoints", minimumTokens: 1_024, granularity: 1, lookback: 20, ttlMs: { "5m": 300_000, "1h": 3_600_000 } };
const openai: CacheRules = { mode: "prefix", minimumTokens: 1_024, granularity: 128 };

/**
 * A chain of nodes `[id, kind, tokens, breakpoint?]`, hashed from their ids
 * (same id = same bytes); `rendering` names another protocol's or model's
 * rendering of the same nodes (same ids, other bytes).
 */
function chain(nodes: [string, string, number, ("5m" | "1h")?][], rendering = ""): ChainLink[] {
  let prefix: string | undefined;
  return nodes.map(([nodeId, kind, tokens, breakpoint]) => {
    const content = hashText(rendering + nodeId);
    prefix = chainHash(prefix, content);
    return { nodeId, kind, content, prefix, tokens, ...(breakpoint ? { breakpoint } : {}) };
  });
}

const usage = (input: number, cacheRead: number, cacheWrite5m: number): Usage => ({ input, cacheRead, cacheWrite5m, cacheWrite1h: 0, output: 10, reasoning: undefined });

function row(links: ChainLink[], u: Usage, extra: Partial<ComparedRow> = {}): ComparedRow {
  return { chain: links, usage: u, startedAt: 0, affinityKey: "s_1", cacheMode: "auto", cacheTtl: "5m", provider: "anthropic", model: "claude-sonnet-4-6", prefixVersion: 1, ...extra };
}

describe("cacheable maximum", () => {
  const turn1 = chain([["sys", "system", 2_000, "5m"], ["u1", "text", 50, "5m"]]);
  const turn2 = chain([["sys", "system", 2_000, "5m"], ["u1", "text", 50], ["a1", "text", 30], ["u2", "text", 40, "5m"]]);

  test("breakpoints: the previous request's billed reads + writes, exactly, when this one extends it", () => {
    // The provider counted 2,107 tokens up to the previous tail breakpoint (our estimate said 2,050).
    expect(cacheableMaximum(row(turn1, usage(3, 0, 2_107)), row(turn2, usage(3, 2_107, 70)), anthropic)).toBe(2_107);
  });

  test("breakpoints: a divergence before the previous tail leaves only the deepest earlier entry, apportioned", () => {
    const rewritten = chain([["sys", "system", 2_000, "5m"], ["u1-edited", "text", 50], ["u2", "text", 40, "5m"]]);
    // Only the system entry (2,000 of 2,050 estimated tokens) is readable: 2,107 · 2000/2050.
    expect(cacheableMaximum(row(turn1, usage(3, 0, 2_107)), row(rewritten, usage(3, 0, 0)), anthropic)).toBe(Math.floor((2_107 * 2_000) / 2_050));
  });

  test("breakpoints: a previous request below the minimum wrote nothing, so nothing is cacheable", () => {
    const small1 = chain([["sys", "system", 200, "5m"], ["u1", "text", 50, "5m"]]);
    const small2 = chain([["sys", "system", 200, "5m"], ["u1", "text", 50], ["a1", "text", 30], ["u2", "text", 40, "5m"]]);
    expect(cacheableMaximum(row(small1, usage(260, 0, 0)), row(small2, usage(330, 0, 0)), anthropic)).toBe(0);
  });

  test("breakpoints: without any breakpoint the previous request left no entry", () => {
    const bare1 = chain([["sys", "system", 2_000], ["u1", "text", 50]]);
    const bare2 = chain([["sys", "system", 2_000], ["u1", "text", 50], ["a1", "text", 30], ["u2", "text", 40]]);
    expect(cacheableMaximum(row(bare1, usage(2_050, 0, 0)), row(bare2, usage(2_120, 0, 0)), anthropic)).toBe(0);
  });

  test("prefix caching with the answer cached (DeepSeek): the previous prompt plus its answer, when this request re-sends it next", () => {
    const deepseek: CacheRules = { mode: "prefix", minimumTokens: 64, granularity: 1, answerCached: true };
    const d1 = chain([["sys", "system", 1_500], ["u1#0", "text", 50]]);
    const d2 = chain([["sys", "system", 1_500], ["u1#0", "text", 50], ["a1", "message", 30], ["u2#0", "text", 40]]);
    const previous = row(d1, { ...usage(1_545, 0, 0), output: 20 }, { provider: "deepseek", model: "deepseek-chat", messageId: "a1" });
    const current = { provider: "deepseek", model: "deepseek-chat" };
    // 1,545 billed prompt + 20 billed answer tokens.
    expect(cacheableMaximum(previous, row(d2, usage(40, 1_565, 0), current), deepseek)).toBe(1_565);
    // The same when the answer is rendered block by block (`id#k` nodes).
    const blocks = chain([["sys", "system", 1_500], ["u1#0", "text", 50], ["a1#0", "text", 30], ["u2#0", "text", 40]]);
    expect(cacheableMaximum(previous, row(blocks, usage(40, 1_565, 0), current), deepseek)).toBe(1_565);
    // An overlay closed the previous prompt: the answer unit starts with bytes this request does not send.
    const withOverlay = row(chain([["sys", "system", 1_500], ["u1#0", "text", 50], ["ov", "overlay", 8]]), { ...usage(1_553, 0, 0), output: 20 }, { ...current, messageId: "a1" });
    expect(cacheableMaximum(withOverlay, row(d2, usage(40, 0, 0), current), deepseek)).toBe(1_545);
    // Reasoning is part of the answer unit but not re-sent: only the prompt counts.
    const reasoned = row(d1, { ...usage(1_545, 0, 0), output: 20, reasoning: 12 }, { ...current, messageId: "a1" });
    expect(cacheableMaximum(reasoned, row(d2, usage(40, 0, 0), current), deepseek)).toBe(1_545);
    // Without the rule (OpenAI-style prefix caching) the answer is not counted.
    expect(cacheableMaximum(previous, row(d2, usage(40, 0, 0), current), { ...deepseek, answerCached: undefined })).toBe(1_545);
  });

  test("prefix caching: the previous billed prompt, minus its volatile overlay, rounded down to 128", () => {
    const p1 = chain([["sys", "system", 1_500], ["u1", "text", 50], ["ov1", "overlay", 8]]);
    const p2 = chain([["sys", "system", 1_500], ["u1", "text", 50], ["a1", "text", 30], ["u2", "text", 40], ["ov2", "overlay", 8]]);
    const previous = row(p1, usage(1_571, 0, 0), { provider: "openai", model: "gpt-5" });
    // 1,571 billed − 8 overlay = 1,563 → 1,536.
    expect(cacheableMaximum(previous, row(p2, usage(100, 1_536, 0), { provider: "openai", model: "gpt-5" }), openai)).toBe(1_536);
  });

  test("a first request, or another model, has nothing cacheable", () => {
    expect(cacheableMaximum(null, row(turn1, usage(3, 0, 2_107)), anthropic)).toBe(0);
    expect(cacheableMaximum(row(turn1, usage(3, 0, 2_107)), row(turn2, usage(3, 0, 0), { model: "claude-opus-4-8" }), anthropic)).toBe(0);
  });
});

describe("explain", () => {
  const base = chain([["tool:a", "tool", 300, "5m"], ["tool:b", "tool", 300], ["sys", "system", 1_500, "5m"], ["u1", "text", 50, "5m"]]);
  const previous = row(base, usage(3, 0, 2_150), { startedAt: 1_000 });

  test("the system changed: named, with the divergent node", () => {
    const next = chain([["tool:a", "tool", 300, "5m"], ["tool:b", "tool", 300], ["sys-new-date", "system", 1_500, "5m"], ["u1", "text", 50], ["a1", "text", 20], ["u2", "text", 30, "5m"]]);
    const e = explain(previous, row(next, usage(1_900, 0, 0), { startedAt: 2_000 }), anthropic);
    expect(e.divergence).toEqual({ index: 2, nodeId: "sys-new-date", kind: "system", previousNodeId: "sys" });
    expect(e.causes[0]).toBe("system changed");
  });

  test("tools reordered versus tools changed", () => {
    const reordered = chain([["tool:b", "tool", 300, "5m"], ["tool:a", "tool", 300], ["sys", "system", 1_500, "5m"], ["u1", "text", 50, "5m"]]);
    expect(explain(previous, row(reordered, usage(2_150, 0, 0)), anthropic).causes[0]).toBe("tools reordered");
    const changed = chain([["tool:a2", "tool", 300, "5m"], ["tool:b", "tool", 300], ["sys", "system", 1_500, "5m"], ["u1", "text", 50, "5m"]]);
    expect(explain(previous, row(changed, usage(2_150, 0, 0)), anthropic).causes[0]).toBe("tools changed");
  });

  test("history rewritten at a node", () => {
    const next = chain([["tool:a", "tool", 300, "5m"], ["tool:b", "tool", 300], ["sys", "system", 1_500, "5m"], ["u1-edited", "text", 50, "5m"]]);
    expect(explain(previous, row(next, usage(53, 2_100, 0)), anthropic).causes[0]).toBe("history rewritten at node 3 (u1-edited)");
  });

  test("TTL expired and a different affinity key are named; a full read is no miss", () => {
    const next = chain([["tool:a", "tool", 300, "5m"], ["tool:b", "tool", 300], ["sys", "system", 1_500, "5m"], ["u1", "text", 50], ["a1", "text", 20], ["u2", "text", 30, "5m"]]);
    const late = explain(previous, row(next, usage(3, 0, 2_200), { startedAt: 1_000 + 6 * 60_000, affinityKey: "s_2" }), anthropic);
    expect(late.causes).toEqual(["different affinity key", "TTL expired (6m since the previous request > 5m)"]);
    const ok = explain(previous, row(next, usage(3, 2_150, 50), { startedAt: 61_000 }), anthropic);
    expect(ok.expectedCacheRead).toBe(2_150);
    expect(ok.causes).toEqual(["no miss: the request read everything the previous one cached"]);
  });
});

describe("live entries older than the previous request (issue 11)", () => {
  // Stage A and stage B alternate their schema; each stage's entry stays live while the other stage runs.
  const stage = (schema: string, turn: string) => chain([["sys", "system", 1_200], ["tools", "tool", 800], [schema, "schema", 300, "5m"], [turn, "text", 40, "5m"]]);
  const a1 = row(stage("schema-a", "u1"), usage(0, 0, 2_340), { id: "r_a1", provider: "openai", model: "gpt-5", startedAt: 0 });
  const b1 = row(stage("schema-b", "u2"), usage(2_340, 0, 0), { id: "r_b1", provider: "openai", model: "gpt-5", startedAt: 1_000 });
  const a2 = row(stage("schema-a", "u3"), usage(40, 2_300, 0), { id: "r_a2", provider: "openai", model: "gpt-5", startedAt: 2_000 });

  test("the maximum is the longest prefix any live entry serves: stage A's entry, not only stage B's", () => {
    const prefix: CacheRules = { mode: "prefix", minimumTokens: 1_024, granularity: 1 };
    expect(cacheableMaximum(b1, a2, prefix)).toBe(2_000);
    const live = liveCacheableMaximum([a1, b1], a2, prefix);
    expect(live.from).toBe(a1);
    expect(live.tokens).toBe(2_300);
    const e = explain(b1, a2, prefix, [a1, b1]);
    expect(e.expectedCacheRead).toBe(2_300);
    expect(e.causes).toContain("an older live entry can serve 2,300 tokens: the one written by request r_a1");
  });

  test("an entry past its TTL, never repeated since, is not live", () => {
    const late = { ...a2, startedAt: 10 * 60_000 };
    expect(liveCacheableMaximum([{ ...a1, provider: "anthropic" }], { ...late, provider: "anthropic" }, anthropic).tokens).toBe(0);
  });

  test("'below the minimum' only for a prompt below it; a short shared prefix is named as such", () => {
    const big = chain([["sys-2", "system", 7_000, "5m"], ["u9", "text", 660, "5m"]]);
    const previousBig = row(chain([["sys", "system", 200, "5m"], ["u1", "text", 50, "5m"]]), usage(250, 0, 0));
    const causes = explain(previousBig, row(big, usage(7_660, 0, 0)), anthropic).causes;
    expect(causes.some((c) => c.startsWith("below the minimum"))).toBe(false);
    const tiny = chain([["sys", "system", 200, "5m"], ["u1", "text", 50], ["u2", "text", 40, "5m"]]);
    expect(explain(previousBig, row(tiny, usage(290, 0, 0)), anthropic).causes).toContain("below the minimum cacheable length (1024 tokens)");
  });

  test("the same model on another protocol: 'protocol changed', not 'tools changed'", () => {
    const nodes: [string, string, number][] = [["system:0:5f3a9c01", "system", 1_500], ["tool:a", "tool", 300], ["u1", "text", 50]];
    const chat = row(chain(nodes, "chat:"), usage(1_850, 0, 0), { provider: "openai", model: "gpt-5" });
    const responses = row(chain(nodes, "responses:"), usage(1_850, 0, 0), { provider: "openai-responses", model: "gpt-5" });
    const explained = explain(chat, responses, openai);
    expect(explained.divergence).toEqual({ index: 0, nodeId: "system:0:5f3a9c01", kind: "system", previousNodeId: "system:0:5f3a9c01" });
    expect(explained.causes).toEqual(["protocol changed (openai → openai-responses): the same model's request renders to other bytes"]);
  });

  test("another model (another provider's bytes, same nodes): the model is the cause named first and no unchanged node is called changed", () => {
    const nodes: [string, string, number, ("5m" | "1h")?][] = [["system:0:5f3a9c01", "system", 1_500, "5m"], ["tool:a", "tool", 300], ["u1", "text", 50, "5m"]];
    const claude = row(chain(nodes, "anthropic:"), usage(3, 0, 1_850));
    const gpt = row(chain([...nodes, ["a1", "message", 20], ["u2", "text", 40]], "openai:"), usage(1_910, 0, 0), { provider: "openai", model: "gpt-4o", startedAt: 1_000 });
    const explained = explain(claude, gpt, openai);
    expect(explained.divergence).toEqual({ index: 0, nodeId: "system:0:5f3a9c01", kind: "system", previousNodeId: "system:0:5f3a9c01" });
    expect(explained.expectedCacheRead).toBe(0);
    expect(explained.causes).toEqual(["different model (anthropic/claude-sonnet-4-6 → openai/gpt-4o): a provider caches per model, so nothing the previous request cached can be read"]);
  });

  test("another model and a new system prompt and tool: the model first, then the head changes its node ids show", () => {
    const claude = row(chain([["system:0:5f3a9c01", "system", 1_500, "5m"], ["tool:a", "tool", 300], ["u1", "text", 50, "5m"]], "anthropic:"), usage(3, 0, 1_850));
    const gpt = row(chain([["system:0:0b7e42d8", "system", 1_500], ["tool:a", "tool", 300], ["tool:b", "tool", 200], ["u1", "text", 50]], "openai:"), usage(2_050, 0, 0), { provider: "openai", model: "gpt-4o" });
    const explained = explain(claude, gpt, openai);
    expect(explained.divergence).toEqual({ index: 0, nodeId: "system:0:0b7e42d8", kind: "system", previousNodeId: "system:0:5f3a9c01" });
    expect(explained.causes).toEqual([
      "different model (anthropic/claude-sonnet-4-6 → openai/gpt-4o): a provider caches per model, so nothing the previous request cached can be read",
      "system changed",
      "tools changed",
    ]);
  });
});

describe("cacheable maximum of long chains", () => {
  test("an unbilled previous request's estimate is the sum of the shared links wherever the requests diverge (near the start, the middle, the end of 300 links)", () => {
    const nodes = Array.from({ length: 300 }, (_, i): [string, string, number] => [`n${i}`, "text", 10 + (i % 7)]);
    const noUsage: Usage = { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined };
    const rules: CacheRules = { mode: "prefix", minimumTokens: 0, granularity: 1 };
    for (const divergence of [0, 5, 60, 64, 65, 150, 236, 237, 250, 299, 300]) {
      const current = chain([...nodes.slice(0, divergence), ["other", "text", 5], ...nodes.slice(divergence + 1)]);
      const expected = nodes.slice(0, divergence).reduce((n, [, , tokens]) => n + tokens, 0);
      // A fresh chain object each time, so no sums of an earlier case are reused.
      expect({ divergence, tokens: cacheableMaximum(row(chain(nodes), noUsage), row(current, noUsage), rules) }).toEqual({ divergence, tokens: expected });
    }
  });
});

describe("entries other sessions wrote (the provider's cache is shared by every session of a model)", () => {
  // Session A sent a 4,500-token system prompt and its question, with breakpoints after both; session B sends the same system prompt.
  const a1 = row(chain([["sys", "system", 4_500, "5m"], ["ua", "text", 45, "5m"]]), usage(0, 0, 4_545), { id: "r_a1", sessionId: "s_a", startedAt: 0 });
  const b1 = row(chain([["sys", "system", 4_500, "5m"], ["ub", "text", 40, "5m"]]), usage(40, 4_500, 0), { id: "r_b1", sessionId: "s_b", startedAt: 60_000 });

  test("a new session's first request can read the system prompt another session's request cached", () => {
    const live = liveCacheableMaximum([], b1, anthropic, [a1]);
    expect(live.from).toBe(a1);
    // A's billed write (4,545) apportioned to the shared system prompt (4,500 of its 4,545 estimated tokens).
    expect(live.tokens).toBe(4_500);
    const e = explain(null, b1, anthropic, [], [a1]);
    expect(e.expectedCacheRead).toBe(4_500);
    expect(e.causes).toEqual([
      "first request of the session: a live entry can serve 4,500 tokens: the one written by request r_a1 of session s_a (the provider's cache is shared by every session of the same model)",
    ]);
  });

  test("another model's, or an expired, entry serves nothing", () => {
    expect(liveCacheableMaximum([], b1, anthropic, [{ ...a1, model: "claude-opus-4-6" }]).tokens).toBe(0);
    expect(liveCacheableMaximum([], { ...b1, startedAt: 6 * 60_000 }, anthropic, [a1]).tokens).toBe(0);
    expect(explain(null, { ...b1, startedAt: 6 * 60_000 }, anthropic, [], [a1]).causes[0]).toBe("first request of the session: nothing cached yet");
  });

  test("a later request of the session: another session's longer entry beats the session's own", () => {
    // B's first request went out with another system prompt; its second returns to A's and finds A's entry.
    const own = row(chain([["sys-other", "system", 2_000, "5m"], ["ub", "text", 40, "5m"]]), usage(0, 0, 2_040), { id: "r_b0", sessionId: "s_b", startedAt: 30_000 });
    const e = explain(own, b1, anthropic, [own], [a1]);
    expect(e.expectedCacheRead).toBe(4_500);
    expect(e.causes).toContain("a live entry can serve 4,500 tokens: the one written by request r_a1 of session s_a (the provider's cache is shared by every session of the same model)");
  });

  test("a read beyond every recorded entry is named as written by someone else", () => {
    const e = explain(null, row(b1.chain, usage(40, 4_500, 0), { sessionId: "s_b", startedAt: 60_000 }), anthropic, [], []);
    expect(e.expectedCacheRead).toBe(0);
    expect(e.causes).toEqual([
      "first request of the session: nothing cached yet",
      "read 4,500 tokens, 4,500 more than any recorded earlier request could have cached: another client or an unrecorded request wrote that entry (the statistics count the whole read as cacheable)",
    ]);
  });

  test("other sessions are looked for within the provider's longest TTL, or a day when it declares none", () => {
    expect(otherSessionsSince({ startedAt: 10_000_000 }, anthropic)).toBe(10_000_000 - 3_600_000);
    expect(otherSessionsSince({ startedAt: 100_000_000 }, openai)).toBe(100_000_000 - 86_400_000);
  });
});
