/**
 * Two independent readings of the providers' cache documents must agree:
 * the emulator's facts table (src/emulator/facts/cache-facts.ts) and the
 * `cacheRules` the built-in plugins declare to the client. Every row of the
 * emulator's table is checked on its example models; a failure names the row.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { CACHE_FACTS, cacheFactsFor, type CacheFacts } from "../../src/emulator/facts/cache-facts.ts";
import { PluginHost } from "../../src/plugin/host.ts";
import type { CacheRules } from "../../src/plugin/index.ts";
import { builtinPlugins } from "../../plugins/index.ts";

let host: PluginHost;

beforeAll(async () => {
  host = new PluginHost();
  for (const [name, load] of Object.entries(builtinPlugins)) {
    const mod = (await load()) as { default: unknown };
    await host.load(mod.default, `builtin:${name}`);
  }
});

/** The emulator's facts as the client's `CacheRules` would state them. */
function asClientRules(facts: CacheFacts, declared: CacheRules): CacheRules {
  const rules: CacheRules = {
    mode: facts.kind === "breakpoints" ? "breakpoints" : "prefix",
    minimumTokens: facts.minTokens,
    granularity: facts.granularity,
  };
  if (facts.kind === "breakpoints") rules.lookback = facts.lookback;
  if (facts.kind === "breakpoints" && facts.maxBreakpoints !== undefined) rules.maxBreakpoints = facts.maxBreakpoints;
  if (facts.answerCached) rules.answerCached = true;
  // DeepSeek's prefix units: a hit matches a whole unit, stored at request ends and common prefixes.
  if (facts.kind === "prefix-units") rules.prefixUnits = true;
  // A TTL is compared where the plugin declares one (it uses TTLs for `why`); the emulator always has one.
  if (declared.ttlMs !== undefined && facts.ttlMs !== "retention") rules.ttlMs = facts.ttlMs;
  return rules;
}

/** Rows the client's cache strategies put requests in (Qwen: cachet always marks blocks, so the explicit mode). */
const clientRows = CACHE_FACTS.filter((row) => row.when !== "no-markers");

describe("emulator cache facts agree with the plugins' cacheRules", () => {
  test.each(clientRows.map((row) => [`${row.provider}: ${row.family}`, row] as const))("%s", (_name, row) => {
    for (const model of row.examples) {
      expect(cacheFactsFor(row.provider, model, row.when === "markers")).toBe(row);
      const declared = host.provider(row.provider).cacheRules?.(model);
      expect(declared, `${row.provider}/${model} declares no cacheRules`).toBeDefined();
      expect(asClientRules(row, declared!), `row "${row.provider}: ${row.family}" (${row.source}) vs the plugin, model ${model}`).toEqual(declared!);
    }
  });

  test.each([
    ["anthropic/claude-sonnet-4-5", "anthropic"],
    ["google/gemini-2.5-flash", "google"],
    ["deepseek/deepseek-chat", "deepseek"],
    ["qwen/qwen3.6-plus", "alibaba"],
    ["x-ai/grok-4.5", "xai"],
    ["openai/gpt-5", "openai"],
  ] as [string, string][])("openrouter %s: the upstream's row, on both sides", (model, upstream) => {
    const row = cacheFactsFor("openrouter", model, true);
    expect(row.provider as string).toBe(upstream);
    const declared = host.provider("openrouter").cacheRules!(model);
    expect(asClientRules(row, declared)).toEqual(declared);
  });

  test("every row cites its source and has an example", () => {
    for (const row of CACHE_FACTS) {
      expect(row.source.length).toBeGreaterThan(10);
      expect(row.examples.length).toBeGreaterThan(0);
    }
  });
});
