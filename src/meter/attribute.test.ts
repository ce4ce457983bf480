import { describe, expect, test } from "bun:test";
import type { Usage } from "../plugin/usage.ts";
import type { ChainLink } from "../session/types.ts";
import { chainHash, hashText } from "../wire/hash.ts";
import { ChainMeter, attributeRequest, ratesOf } from "./attribute.ts";
import { formatUsd } from "./money.ts";
import { priceUsage } from "./pricing.ts";

function chain(sizes: number[], breakpoints: Record<number, "5m" | "1h"> = {}, salt = ""): ChainLink[] {
  let prefix: string | undefined;
  return sizes.map((tokens, i) => {
    const content = hashText(`${salt}${i}:${tokens}`);
    prefix = chainHash(prefix, content);
    const link: ChainLink = { nodeId: `n${i}`, kind: i === 0 ? "system" : "message", content, prefix, tokens };
    const bp = breakpoints[i];
    if (bp) link.breakpoint = bp;
    return link;
  });
}

function usage(partial: Partial<Usage>): Usage {
  return { input: 0, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 0, reasoning: undefined, ...partial };
}

function sums(nodes: ReturnType<ReturnType<typeof attributeRequest>["nodes"]>) {
  return nodes.reduce((s, n) => ({ cacheRead: s.cacheRead + n.cacheRead, cacheWrite1h: s.cacheWrite1h + n.cacheWrite1h, cacheWrite5m: s.cacheWrite5m + n.cacheWrite5m, input: s.input + n.input }), {
    cacheRead: 0, cacheWrite1h: 0, cacheWrite5m: 0, input: 0,
  });
}

describe("attribution", () => {
  test("node sums equal billed totals exactly, per category, in prefix order", () => {
    const links = chain([1000, 333, 777, 12, 4096, 5, 901]);
    const u = usage({ cacheRead: 2200, cacheWrite1h: 100, cacheWrite5m: 4678, input: 1100, output: 55 });
    const a = attributeRequest(links, u, { messageId: "m7" });
    const nodes = a.nodes();
    expect(sums(nodes)).toEqual({ cacheRead: 2200, cacheWrite1h: 100, cacheWrite5m: 4678, input: 1100 });
    expect(nodes.reduce((s, n) => s + n.tokens, 0)).toBe(a.billedPrompt);
    expect(nodes[0]!.status).toBe("read");
    expect(nodes.at(-1)!.status).toBe("uncached");
    // Prefix order: once a later category starts, no earlier one appears again.
    const firstWrite = nodes.findIndex((n) => n.cacheWrite1h + n.cacheWrite5m > 0);
    expect(nodes.slice(firstWrite + 1).every((n) => n.cacheRead === 0)).toBe(true);
    expect(a.output).toMatchObject({ messageId: "m7", tokens: 55 });
  });

  test("estimates above the billed total are scaled down, each node within one token of its share", () => {
    const links = chain([300, 300, 300, 100]);
    const a = attributeRequest(links, usage({ input: 500 }));
    const tokens = a.nodes().map((n) => n.tokens);
    expect(tokens.reduce((x, y) => x + y, 0)).toBe(500);
    for (const [i, t] of tokens.entries()) expect(Math.abs(t - (links[i]!.tokens * 500) / 1000)).toBeLessThan(1);
  });

  test("USD per node plus output sums to the request cost exactly", () => {
    const u = usage({ cacheRead: 150000, cacheWrite1h: 20000, cacheWrite5m: 30001, input: 1234, output: 999 });
    const cost = priceUsage(u, { price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 }, anthropicWriteRule: true }, "anthropic/x");
    const { rates, outputUsdAtto } = ratesOf(cost);
    const a = attributeRequest(chain([50000, 50000, 50000, 30000, 20000, 1500]), u, { rates, outputUsdAtto });
    const total = a.nodes().reduce((s, n) => s + n.usdAtto!, 0n) + a.output.usdAtto!;
    expect(formatUsd(total)).toBe(cost.costExact!);
  });

  test("empty estimates spread the billed tokens over the nodes", () => {
    const a = attributeRequest(chain([0, 0, 0]), usage({ input: 10 }));
    expect(a.nodes().map((n) => n.tokens)).toEqual([3, 3, 4]);
  });

  test("readNodes counts the leading nodes billed entirely from cache", () => {
    const a = attributeRequest(chain([100, 100, 100, 100]), usage({ cacheRead: 250, input: 150 }));
    expect(a.readNodes).toBe(2);
    expect(a.node(2).status).toBe("mixed");
  });

  test("huge counts stay exact (bigint path)", () => {
    const a = attributeRequest(chain([3e9, 1e9 + 7]), usage({ cacheRead: 3_000_000_001, input: 999_999_999 }));
    expect(sums(a.nodes())).toEqual({ cacheRead: 3_000_000_001, cacheWrite1h: 0, cacheWrite5m: 0, input: 999_999_999 });
  });
});

describe("ChainMeter (incremental)", () => {
  test("matches stateless attribution as the chain grows, diverges and grows again", () => {
    const meter = new ChainMeter();
    const base = chain([500, 200, 300, 400, 250, 600, 50]);
    // A diverged request: the first 4 nodes shared, then new nodes (prefix hashes continue from base[3]).
    let prefix = base[3]!.prefix;
    const diverged: ChainLink[] = [...base.slice(0, 4), ...[70, 80, 90].map((tokens, i) => {
      const content = hashText(`new${i}`);
      prefix = chainHash(prefix, content);
      return { nodeId: `x${i}`, kind: "message", content, prefix, tokens };
    })];
    const steps: ChainLink[][] = [base.slice(0, 3), base.slice(0, 5), base, diverged, [...diverged, ...base.slice(0, 1)]];
    for (const links of steps) {
      const u = usage({ cacheRead: 400, cacheWrite5m: 300, input: links.reduce((s, l) => s + l.tokens, 0) - 700 });
      const incremental = meter.attribute(links, u).nodes();
      const fresh = attributeRequest(links, u).nodes();
      expect(incremental).toEqual(fresh);
    }
  });

  test("an earlier attribution stays valid after the meter moves on", () => {
    const meter = new ChainMeter();
    const links = chain([100, 100, 100]);
    const first = meter.attribute(links.slice(0, 2), usage({ input: 200 }));
    meter.attribute(chain([5, 5], {}, "other"), usage({ input: 10 }));
    expect(first.nodes().map((n) => n.nodeId)).toEqual(["n0", "n1"]);
    expect(first.node(1).tokens).toBe(100);
  });
});
