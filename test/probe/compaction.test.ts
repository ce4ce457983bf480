/**
 * Compaction that keeps the cache (issue 15), measured on the emulator for
 * every provider: test/scenarios/long-session.compaction.json (32 turns of a
 * request, a tool call, its ~2,600-token result and an answer: 64 main calls)
 * with `compaction.trigger_tokens = 32000`, run with compaction on and off.
 *
 * Per provider: at least two compactions, never two in one turn; every main
 * call that does not follow a compaction reads ≥ 99% of its cacheable maximum;
 * the first call after each compaction reads ≥ 95% of its cacheable maximum
 * (Z0 + the summary zone as cached before); the whole session, compaction
 * calls included, reads ≥ 90% of all prompt tokens from cache. The figures
 * table is printed for the closing note.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMPACTION_ROLE } from "../../src/run/stages/compact.ts";
import { promptTokens } from "../../src/plugin/usage.ts";
import { runProbe, type ProbeVariantRun } from "../../src/probe/run-probe.ts";
import { loadScenario } from "../../src/probe/scenario.ts";

const SCENARIO = loadScenario(join(import.meta.dir, "..", "scenarios", "long-session.compaction.json"));
const TRIGGER = 32_000;
const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

async function run(model: string, compaction: boolean): Promise<ProbeVariantRun> {
  const home = mkdtempSync(join(tmpdir(), "cachet-compaction-"));
  homes.push(home);
  writeFileSync(join(home, "config.toml"), `[compaction]\ntrigger_tokens = ${TRIGGER}\nenabled = ${compaction}\n`);
  const [variant] = await runProbe(SCENARIO, { emulate: true, models: [model], env: { ...process.env, CACHET_HOME: home } });
  return variant!;
}

interface Figures {
  model: string;
  turns: number;
  compactions: number;
  summaryCalls: number;
  mainEfficiency: number;
  sessionHitRate: number;
  firstAfter: (number | null)[];
  costUsd: number;
  costWithoutUsd: number;
  hitRateWithout: number;
}

const table: Figures[] = [];
afterAll(() => {
  const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
  const lines = ["| provider/model | main calls | compactions | summary calls | main-chain efficiency | whole-session hit rate | first call after compaction (read/max) | cost with | cost without (hit rate) |", "|---|---|---|---|---|---|---|---|---|"];
  for (const f of table) {
    lines.push(`| ${f.model} | ${f.turns} | ${f.compactions} | ${f.summaryCalls} | ${pct(f.mainEfficiency)} | ${pct(f.sessionHitRate)} | ${f.firstAfter.map((x) => (x === null ? "n/a (max 0)" : pct(x))).join(", ")} | $${f.costUsd.toFixed(4)} | $${f.costWithoutUsd.toFixed(4)} (${pct(f.hitRateWithout)}) |`);
  }
  console.log(lines.join("\n"));
});

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe.each(SCENARIO.models)("%s", (model) => {
  test("≥ 2 compactions; ≥ 99% of the cacheable maximum between them, ≥ 95% right after; ≥ 90% of the whole session from cache", async () => {
    const on = await run(model, true);
    const off = await run(model, false);
    const main = on.rows.filter((r) => r.row.role !== COMPACTION_ROLE);
    const summaries = on.rows.filter((r) => r.row.role === COMPACTION_ROLE);
    const after = main.filter((r) => r.change?.includes("compacted"));
    expect(main).toHaveLength(64);
    expect(on.rows.every((r) => r.row.status === "ok")).toBe(true);
    expect(after.length).toBeGreaterThanOrEqual(2);
    // Never two compactions in one turn: each turn's calls hold at most one summary call and one post-compaction call.
    on.rows.forEach((r, i) => {
      if (r.row.role === COMPACTION_ROLE) expect({ call: i + 1, next: on.rows[i + 1]?.row.role }).toEqual({ call: i + 1, next: "probe" });
    });

    const steady = main.filter((r) => r.change === null && (r.row.cacheableMax ?? 0) > 0);
    for (const { row } of steady) expect({ id: row.id, efficient: (row.usage.cacheRead ?? 0) >= 0.99 * row.cacheableMax! }).toEqual({ id: row.id, efficient: true });
    // null: nothing was cacheable by the provider's rules (Gemini's implicit cache below its minimum).
    const firstAfter = after.map(({ row }) => (row.cacheableMax ? (row.usage.cacheRead ?? 0) / row.cacheableMax : null));
    firstAfter.forEach((ratio, k) => {
      if (ratio === null) return;
      // DeepSeek stores a prefix unit only at request ends and where two requests were seen to diverge
      // (src/emulator/cache/deepseek.ts): before the first compaction no request ended or diverged at Z0.
      if (model.startsWith("deepseek/") && k === 0) return;
      expect({ compaction: k + 1, ratio: ratio >= 0.95 }).toEqual({ compaction: k + 1, ratio: true });
    });
    const read = sum(on.rows.map((r) => r.row.usage.cacheRead ?? 0));
    const prompt = sum(on.rows.map((r) => promptTokens(r.row.usage) ?? 0));
    expect(read / prompt).toBeGreaterThanOrEqual(0.9);

    table.push({
      model,
      turns: main.length,
      compactions: after.length,
      summaryCalls: summaries.length,
      mainEfficiency: sum(main.map((r) => r.row.usage.cacheRead ?? 0)) / sum(main.map((r) => r.row.cacheableMax ?? 0)),
      sessionHitRate: read / prompt,
      firstAfter,
      costUsd: sum(on.rows.map((r) => r.row.costUsd ?? 0)),
      costWithoutUsd: sum(off.rows.map((r) => r.row.costUsd ?? 0)),
      hitRateWithout: sum(off.rows.map((r) => r.row.usage.cacheRead ?? 0)) / sum(off.rows.map((r) => promptTokens(r.row.usage) ?? 0)),
    });
    expect(off.rows.some((r) => r.row.role === COMPACTION_ROLE || r.change?.includes("compacted"))).toBe(false);
  }, 300_000);
});
