/**
 * Fills the embedded catalog where models.dev lacks data, from
 * `@pydantic/genai-prices` (MIT, pinned in package.json): providers and
 * models models.dev's snapshot does not have (xAI), and on models both have
 * with the same input and output prices, the fields models.dev has no place
 * for (1-hour cache writes, image and audio token prices, server-tool fees).
 * models.dev stays the source of every price it has; a model whose base
 * prices differ between the two is left as models.dev has it (the
 * cross-check test in test/meter/genai-prices.test.ts lists each such case
 * with its source).
 * @see https://github.com/pydantic/genai-prices (data: prices/providers/*.yml)
 */
import { calcPrice, findProvider, type MatchLogic, type ModelInfo, type ModelPrice, type Provider, type TieredPrices } from "@pydantic/genai-prices";

/** genai-prices provider id → cachet's (models.dev) provider id. */
export const GENAI_PROVIDERS: Record<string, string> = {
  anthropic: "anthropic",
  openai: "openai",
  google: "google",
  "x-ai": "xai",
  deepseek: "deepseek",
  moonshotai: "moonshotai",
  openrouter: "openrouter",
};

/** genai-prices price keys (USD per million tokens) → catalog cost keys. */
const TOKEN_KEYS: Record<string, string> = {
  input_mtok: "input",
  output_mtok: "output",
  cache_read_mtok: "cache_read",
  cache_write_mtok: "cache_write",
  cache_write_1h_mtok: "cache_write_1h",
  input_audio_mtok: "input_audio",
  output_audio_mtok: "output_audio",
  input_image_mtok: "input_image",
  output_image_mtok: "output_image",
};

/** Keys filled into a models.dev model that lacks them (never a base price). */
const FILLED = ["cache_write_1h", "input_audio", "output_audio", "input_image", "output_image"];

type Cost = Record<string, unknown> & { tiers?: Array<Record<string, unknown>>; server_tools?: Record<string, number> };
type CatalogJson = Record<string, Record<string, unknown>>;

/**
 * Adds genai-prices data to an api.json-shaped catalog in place and returns
 * it. `today` (YYYY-MM-DD) picks the price in force among dated prices.
 */
export function supplementCatalog(catalog: CatalogJson, today: string = new Date().toISOString().slice(0, 10)): CatalogJson {
  for (const [genaiId, providerId] of Object.entries(GENAI_PROVIDERS)) {
    const provider = findProvider({ providerId: genaiId });
    if (!provider) continue;
    const entry = (catalog[providerId] ??= { id: providerId, name: provider.name, models: {} });
    const models = entry.models as Record<string, { id?: string; cost?: Cost } & Record<string, unknown>>;
    for (const model of provider.models) {
      // genai-prices' google provider also lists Vertex AI's Claude models, which the Gemini API (cachet's google) does not serve.
      if (genaiId === "google" && model.id.startsWith("claude")) continue;
      const cost = costOf(model, today);
      if (!cost) continue;
      for (const id of idsOf(model)) {
        if (!models[id]) models[id] = { id, name: model.name ?? model.id, cost: structuredClone(cost), ...(model.context_window ? { limit: { context: model.context_window } } : {}), source: "genai-prices" };
      }
    }
    for (const [id, known] of Object.entries(models)) {
      if (!known.cost || known.source === "genai-prices") continue;
      const model = genaiModel(provider, id);
      const cost = model && costOf(model, today);
      if (cost) fill(known.cost, cost);
    }
  }
  return catalog;
}

/** The model's id and every exact name its match rule accepts. */
function idsOf(model: ModelInfo): string[] {
  const ids = new Set([model.id]);
  const walk = (m: MatchLogic): void => {
    if ("equals" in m) ids.add(m.equals);
    else if ("or" in m) m.or.forEach(walk);
  };
  walk(model.match);
  return [...ids].filter((id) => !id.includes(" "));
}

/** The price in force on `today` in the catalog's shape; undefined when it has no token prices or varies by time of day. */
function costOf(model: ModelInfo, today: string): Cost | undefined {
  let prices: ModelPrice | undefined;
  if (Array.isArray(model.prices)) {
    if (model.prices.some((p) => p.constraint?.type === "time_of_date")) return undefined;
    for (const p of model.prices) if (!p.constraint || (p.constraint.type === "start_date" && p.constraint.start_date <= today)) prices = p.prices;
  } else prices = model.prices;
  if (!prices || prices.input_mtok === undefined || prices.output_mtok === undefined) return undefined;
  const cost: Cost = {};
  const tiers = new Map<number, Record<string, unknown>>();
  for (const [key, value] of Object.entries(prices)) {
    const name = TOKEN_KEYS[key];
    if (value === undefined) continue;
    if (key === "web_searches_kcount" && typeof value === "number") cost.server_tools = { web_search: value };
    if (!name) continue;
    if (typeof value === "number") cost[name] = value;
    else {
      const tiered = value as TieredPrices;
      cost[name] = tiered.base;
      for (const t of tiered.tiers) {
        const tier = tiers.get(t.start) ?? { tier: { type: "context", size: t.start } };
        tier[name] = t.price;
        tiers.set(t.start, tier);
      }
    }
  }
  if (tiers.size > 0) cost.tiers = [...tiers.values()];
  return cost;
}

/** The genai-prices model `id` resolves to by genai-prices' own match rules (starts_with, regex, ...). */
export function genaiModel(provider: Provider, id: string): ModelInfo | undefined {
  return calcPrice({ input_tokens: 0, output_tokens: 0 }, id, { provider })?.model;
}

/**
 * Fills a models.dev cost table from genai-prices' on the same model: only
 * when both give the same input price (the same price table), and only
 * fields models.dev lacks. One correction: where models.dev's `output`
 * equals genai-prices' `output_image`, models.dev lists the image-output
 * price as the output price; text output takes genai-prices' rate.
 * @see https://ai.google.dev/gemini-api/docs/pricing (image models: text output and image output priced apart)
 */
function fill(target: Cost, from: Cost): void {
  if (target.input !== from.input) return;
  if (from.output_image !== undefined && target.output === from.output_image && from.output !== target.output) {
    target.output = from.output;
    target.output_image = from.output_image;
  }
  if (target.output !== from.output) return;
  for (const key of FILLED) if (target[key] === undefined && from[key] !== undefined) target[key] = from[key];
  if (from.server_tools && !target.server_tools) target.server_tools = { ...from.server_tools };
}
