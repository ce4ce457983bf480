/**
 * Meter benchmark (run: `bun test/bench/meter.ts`). Prints medians and the ratio.
 *
 * 1. Pricing and attributing a 1,000-turn session whose last request is ~2
 *    million prompt tokens: every request priced (exact decimal, tier check)
 *    and attributed to its nodes (incremental ChainMeter, output to its
 *    message). Printed for reference (it was ≤ 50 ms on the reference machine).
 * 2. Metering one turn at turn 1,000 vs one at turn 10 (same per-turn work,
 *    longer history): the ratio (test/bench/ratios.ts), target ≤ 1.5.
 * 3. For reference: materializing every node of every request (`cost --tree`
 *    over the whole session), which is O(total nodes) by nature.
 */
import type { Usage } from "../../src/plugin/usage.ts";
import type { ChainLink } from "../../src/session/types.ts";
import { chainHash, hashText } from "../../src/wire/hash.ts";
import { ChainMeter, ratesOf } from "../../src/meter/attribute.ts";
import { priceUsage, type ResolvedPrice } from "../../src/meter/pricing.ts";
import { median, ratio } from "./ratios.ts";

const TURNS = 1000;
const PREFIX_NODES = 6;
const TOKENS_PER_MESSAGE = 1000;
const price: ResolvedPrice = { price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 }, anthropicWriteRule: true };

/** Chain of request t (1-based): stable prefix + 2t−1 messages (t user, t−1 assistant). */
function buildChains(turns: number): ChainLink[][] {
  const links: ChainLink[] = [];
  let prefix: string | undefined;
  const push = (nodeId: string, kind: string, tokens: number): void => {
    const content = hashText(nodeId);
    prefix = chainHash(prefix, content);
    links.push({ nodeId, kind, content, prefix, tokens });
  };
  for (let i = 0; i < PREFIX_NODES; i++) push(`p${i}`, i === 0 ? "system" : "tool", 500);
  const chains: ChainLink[][] = [];
  for (let t = 1; t <= turns; t++) {
    if (t > 1) push(`a${t - 1}`, "message", TOKENS_PER_MESSAGE);
    push(`u${t}`, "message", TOKENS_PER_MESSAGE);
    links[links.length - 1]!.breakpoint = "5m";
    chains.push(links.slice());
  }
  return chains;
}

function usageOf(chains: ChainLink[][], t: number): Usage {
  const total = (c: ChainLink[]): number => c.reduce((s, l) => s + l.tokens, 0);
  const prompt = total(chains[t - 1]!);
  const read = t === 1 ? 0 : total(chains[t - 2]!);
  return { input: 3, cacheRead: read, cacheWrite5m: prompt - read - 3, cacheWrite1h: 0, output: TOKENS_PER_MESSAGE, reasoning: undefined };
}

function meterTurn(meter: ChainMeter, chain: ChainLink[], usage: Usage, t: number): bigint {
  const cost = priceUsage(usage, price, "anthropic/claude-sonnet-4-5");
  const { rates, outputUsdAtto } = ratesOf(cost);
  const a = meter.attribute(chain, usage, { rates, outputUsdAtto, messageId: `a${t}` });
  // What the pipeline reads per turn: the new nodes' figures and the output.
  let sum = a.output.usdAtto ?? 0n;
  for (let i = Math.max(0, a.nodeCount - 2); i < a.nodeCount; i++) sum += a.node(i).usdAtto ?? 0n;
  return sum;
}

const chains = buildChains(TURNS);
const usages = chains.map((_, i) => usageOf(chains, i + 1));
const lastPrompt = chains.at(-1)!.reduce((s, l) => s + l.tokens, 0);

// 1. Whole session.
const sessionTimes: number[] = [];
for (let run = 0; run < 15; run++) {
  const meter = new ChainMeter();
  const start = performance.now();
  for (let t = 1; t <= TURNS; t++) meterTurn(meter, chains[t - 1]!, usages[t - 1]!, t);
  sessionTimes.push(performance.now() - start);
}

// 2. One turn at turn k: many meters primed with turn k−1 (untimed), then each meters turn k once.
function oneTurn(k: number, reps: number): number {
  const times: number[] = [];
  for (let r = 0; r < reps; r++) {
    const meters = Array.from({ length: 100 }, () => {
      const meter = new ChainMeter();
      meter.attribute(chains[k - 2]!, usages[k - 2]!);
      return meter;
    });
    const start = performance.now();
    for (const meter of meters) meterTurn(meter, chains[k - 1]!, usages[k - 1]!, k);
    times.push((performance.now() - start) / meters.length);
  }
  return median(times);
}
for (let warm = 0; warm < 3; warm++) oneTurn(10, 50), oneTurn(1000, 50);
const at10 = oneTurn(10, 300);
const at1000 = oneTurn(1000, 300);

// 3. Materialize every node of every request.
const treeStart = performance.now();
{
  const meter = new ChainMeter();
  let nodes = 0;
  for (let t = 1; t <= TURNS; t++) nodes += meter.attribute(chains[t - 1]!, usages[t - 1]!).nodes().length;
  process.stdout.write(`(materialized ${nodes} node figures)\n`);
}
const treeMs = performance.now() - treeStart;

const sessionMs = median(sessionTimes);
process.stdout.write(
  [
    `meter: ${TURNS} turns, last prompt ${lastPrompt} tokens, ${chains.at(-1)!.length} nodes`,
    `  price + attribute whole session: median ${sessionMs.toFixed(2)} ms`,
    `  one turn at turn 10:   median ${(at10 * 1000).toFixed(2)} µs `,
    `  one turn at turn 1000: median ${(at1000 * 1000).toFixed(2)} µs`,
    `  reference: every node of every request materialized: ${treeMs.toFixed(1)} ms`,
    "",
  ].join("\n"),
);
ratio("meter.1000_vs_10", at1000 / at10, 1.5);
