/**
 * Cross-check of cachet's meter against `@pydantic/genai-prices` (an
 * independent, MIT-licensed price database and calculator): every usage of
 * the corpus (the cost cases of shared/cases/CASES.md and the recorded wire
 * fixtures) is priced by both, under every model of its provider that both
 * know (genai-prices' own match rules decide "knows"), with cachet's
 * embedded catalog. They must agree to 1e-9 USD; each disagreement must fall
 * under one of the explanations below, each with its source.
 *
 * The usage given to genai-prices is cachet's normalized reading of the raw
 * usage (in genai-prices' field names), so the check compares prices and
 * price rules, not the two usage readers; the readers are covered by the
 * cases themselves.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { calcPrice, findProvider, type Usage as GenaiUsage } from "@pydantic/genai-prices";
import { GENAI_PROVIDERS, genaiModel } from "../../build/genai-prices.ts";
import { embeddedCatalog } from "../../src/meter/catalog.ts";
import { extrasOf, priceUsage, resolvePrice, type RequestCost } from "../../src/meter/pricing.ts";
import { parseConfig } from "../../src/config.ts";
import { loadModelHost, resolveModel } from "../../src/run/model-resolution.ts";
import type { UsageReport } from "../../src/plugin/usage.ts";
import { COST_CASES } from "../fixtures/meter/cases.ts";

const WIRE = join(import.meta.dir, "..", "fixtures", "wire");

/** One usage of the corpus: where it comes from, its provider and the raw object. */
interface CorpusItem {
  name: string;
  provider: string;
  raw: unknown;
  serviceTier?: string;
  partial?: boolean;
}

function corpus(): CorpusItem[] {
  const items: CorpusItem[] = COST_CASES.map((c) => {
    const wrapped = c.usage as Record<string, unknown>;
    const isResponse = typeof wrapped.usage === "object" && typeof wrapped.service_tier === "string";
    const item: CorpusItem = { name: `case ${c.name}`, provider: c.model.split("/")[0]!, raw: isResponse ? wrapped.usage : c.usage };
    if (isResponse) item.serviceTier = wrapped.service_tier as string;
    if (c.partial) item.partial = true;
    return item;
  });
  const wire = (file: string, provider: string, key: string): CorpusItem => ({ name: `wire ${file}`, provider, raw: JSON.parse(readFileSync(join(WIRE, file), "utf8"))[key] });
  items.push(wire("anthropic-message.json", "anthropic", "usage"), wire("gemini-response.json", "google", "usageMetadata"), wire("openai-chat-completion.json", "openai", "usage"), wire("openai-response.json", "openai", "usage"));
  return items;
}

/** cachet's normalized usage in genai-prices' names (its input total includes cache reads and writes). */
function genaiUsage(report: UsageReport): GenaiUsage {
  const u = report.usage;
  const read = u.cacheRead ?? 0;
  const written = (u.cacheWrite5m ?? 0) + (u.cacheWrite1h ?? 0);
  const usage: GenaiUsage = { input_tokens: (u.input ?? 0) + read + written, cache_read_tokens: read, cache_write_tokens: written, output_tokens: u.output ?? 0 };
  if (u.cacheWrite1h) usage.cache_write_1h_tokens = u.cacheWrite1h;
  const m = report.modalities;
  if (m?.input?.audio) usage.input_audio_tokens = m.input.audio;
  if (m?.input?.image) usage.input_image_tokens = m.input.image;
  if (m?.output?.audio) usage.output_audio_tokens = m.output.audio;
  if (m?.output?.image) usage.output_image_tokens = m.output.image;
  if (report.serverToolCalls?.web_search) usage.web_searches = report.serverToolCalls.web_search;
  return usage;
}

/** A disagreement and what it is about. */
interface Disagreement {
  item: CorpusItem;
  model: string;
  genaiModelId: string;
  ours: RequestCost;
  theirs: number;
}

/** Why the two differ, with the source that settles it. Every disagreement must match one. */
const EXPLAINED: Array<{ why: string; source: string; applies: (d: Disagreement) => boolean }> = [
  {
    why: "the provider served a service tier: cachet prices flex and batch at half the standard rates; genai-prices has no service tiers",
    source: "https://platform.openai.com/docs/guides/flex-processing (Flex is billed at Batch API rates, 50% off)",
    applies: (d) => d.ours.serviceTier === "flex" || d.ours.serviceTier === "batch",
  },
  {
    why: "a prompt over 200k tokens on Claude Sonnet 4.5: models.dev prices it flat, genai-prices keeps the retired 1M-context beta's 2x tier (such requests now fail)",
    source: "https://platform.claude.com/docs/en/release-notes/overview (1M context beta for Sonnet 4.5 retired 2026-04-30); providers.md §9",
    applies: (d) => d.item.provider === "anthropic" && /sonnet-4-5/.test(d.model) && (d.ours.tier === null) && promptOf(d.ours) > 200_000,
  },
  {
    why: "gpt-3.5-turbo has no prompt caching, so it never reports cached tokens; models.dev gives it a cache-read price of 0, genai-prices none (cached tokens at the input price). Only a usage of another model reaches this",
    source: "https://platform.openai.com/docs/guides/prompt-caching (caching is enabled for gpt-4o and newer models)",
    applies: (d) => d.model === "openai/gpt-3.5-turbo" && (d.ours.usage.cacheRead ?? 0) > 0,
  },
  {
    why: "OpenRouter re-prices models with their upstreams; the two snapshots were taken on different dates (models.dev f3fc6922, 2026-07-02; genai-prices 0.1.8)",
    source: "https://openrouter.ai/docs/api-reference/list-available-models (prices are live and change over time)",
    applies: (d) => d.item.provider === "openrouter",
  },
];

function promptOf(cost: RequestCost): number {
  const u = cost.usage;
  return (u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite5m ?? 0) + (u.cacheWrite1h ?? 0);
}

const host = await loadModelHost(parseConfig({}, "test"), {});

function crossCheck(): { agreed: number; compared: number; disagreements: Disagreement[] } {
  const catalog = embeddedCatalog();
  const genaiOf = Object.fromEntries(Object.entries(GENAI_PROVIDERS).map(([genai, ours]) => [ours, genai]));
  let agreed = 0;
  let compared = 0;
  const disagreements: Disagreement[] = [];
  for (const item of corpus()) {
    const genaiId = genaiOf[item.provider];
    const provider = genaiId === undefined ? undefined : findProvider({ providerId: genaiId });
    if (!provider) continue;
    // Read by the provider's own mapping, as `run` and `cachet price` read it.
    const report = resolveModel(host, `${item.provider}/any`).usage(item.raw).report;
    if (item.serviceTier) report.serviceTier = item.serviceTier;
    for (const [id, entry] of Object.entries(catalog[item.provider]?.models ?? {})) {
      if (!entry.cost) continue;
      const model = genaiModel(provider, id);
      if (!model) continue;
      const modelId = `${item.provider}/${id}`;
      const ours = priceUsage(report.usage, resolvePrice(catalog, modelId)!, modelId, { ...extrasOf(report), partial: item.partial === true });
      const theirs = calcPrice(genaiUsage(report), id, { provider });
      if (ours.costUsd === null || theirs === null) continue;
      compared++;
      if (Math.abs(ours.costUsd - theirs.total_price) <= 1e-9) agreed++;
      else disagreements.push({ item, model: modelId, genaiModelId: theirs.model.id, ours, theirs: theirs.total_price });
    }
  }
  return { agreed, compared, disagreements };
}

describe("cachet's meter against @pydantic/genai-prices over the usage corpus", () => {
  const result = crossCheck();

  test("the corpus is priced by both on many models", () => {
    console.log(`genai-prices cross-check: ${result.agreed} of ${result.compared} priced (usage, model) pairs agree to 1e-9; ${result.disagreements.length} explained`);
    expect(result.compared).toBeGreaterThan(1000);
    expect(result.agreed / result.compared).toBeGreaterThan(0.9);
  });

  test("every disagreement has a cited explanation", () => {
    const unexplained = result.disagreements.filter((d) => !EXPLAINED.some((e) => e.applies(d)));
    const show = unexplained.slice(0, 20).map((d) => `${d.item.name} on ${d.model} (genai ${d.genaiModelId}): cachet ${d.ours.costExact}, genai-prices ${d.theirs}`);
    expect(show).toEqual([]);
  });

  test("every explanation is used and cites a source", () => {
    for (const e of EXPLAINED) expect(e.source).toMatch(/https:\/\//);
    expect(EXPLAINED.filter((e) => !result.disagreements.some((d) => e.applies(d))).map((e) => e.why)).toEqual([]);
  });
});
