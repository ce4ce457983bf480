/**
 * The price catalog, in models.dev's `api.json` shape (provider → models →
 * cost, limit, …). The loaded catalog is the one `cachet prices update`
 * stored in the data directory if there is one, else the snapshot embedded
 * at build time (build/catalog.ts).
 * @see https://models.dev/api.json
 */
import { dirname } from "node:path";
import * as v from "valibot";
import { nearestName } from "../cli/near-name.ts";
import { once } from "../deferred-schema.ts";
import { CachetError, isCachetError } from "../errors.ts";
import { statePaths, storedCatalogFile, type StatePaths } from "../paths.ts";
import { makePrivateDir } from "../private-files.ts";
import { DEFAULT_MODEL } from "../run/resolve-provider.ts";
import { catalogText, providerRanges, providerSlice, type ProviderRange } from "./catalog-layout.ts";
import type { CachePriceFinding } from "./cache-price-check.ts";
// Embedded as a file and read on demand, laid out one model per line (catalog-layout.ts): as a JS object literal it
// would be compiled into the binary's bytecode, several times larger.
import embeddedPath from "./catalog.generated.txt" with { type: "file" };

// Valibot schema of an api.json-shaped catalog (unknown metadata is kept, costs must be non-negative numbers), built on
// the first parse of a stored or given catalog: pricing with the embedded one needs none.
const schemas = once(() => {
  const Price = v.pipe(v.number(), v.finite(), v.minValue(0));
  /** Token prices (USD per million) a cost table, a long-context tier or a service tier may carry. */
  const TOKEN_PRICES = {
    input: v.optional(Price),
    output: v.optional(Price),
    cache_read: v.optional(Price),
    cache_write: v.optional(Price),
    /** cachet extension (models.dev has none): 1-hour cache write. */
    cache_write_1h: v.optional(Price),
    reasoning: v.optional(Price),
    input_audio: v.optional(Price),
    output_audio: v.optional(Price),
    /** cachet extension: image tokens in and out. */
    input_image: v.optional(Price),
    output_image: v.optional(Price),
  };
  const TierSchema = v.looseObject({
    tier: v.looseObject({ type: v.optional(v.string()), size: v.pipe(v.number(), v.integer(), v.minValue(0)) }),
    ...TOKEN_PRICES,
  });
  const ServiceTierSchema = v.looseObject({ ...TOKEN_PRICES, tiers: v.optional(v.array(TierSchema)) });
  const cost = v.looseObject({
    ...TOKEN_PRICES,
    tiers: v.optional(v.array(TierSchema)),
    /** cachet extension: fees of server-side tools, USD per 1,000 calls (web_search, web_fetch, code_execution, grounding). */
    server_tools: v.optional(v.record(v.string(), Price)),
    /** cachet extension: prices of a served service tier (flex, priority, batch), over the standard ones. */
    service_tiers: v.optional(v.record(v.string(), ServiceTierSchema)),
  });
  const model = v.looseObject({
    id: v.optional(v.string()),
    name: v.optional(v.string()),
    cost: v.optional(cost),
    limit: v.optional(v.looseObject({ context: v.optional(v.number()), input: v.optional(v.number()), output: v.optional(v.number()) })),
  });
  const provider = v.looseObject({
    id: v.optional(v.string()),
    name: v.optional(v.string()),
    models: v.record(v.string(), model),
  });
  return { catalog: v.record(v.string(), provider), model, cost };
});

type Schemas = ReturnType<typeof schemas>;

/** A catalog: provider id → provider with its models. Costs in USD per million tokens. */
export type Catalog = v.InferOutput<Schemas["catalog"]>;
/** One model's entry. */
export type CatalogModel = v.InferOutput<Schemas["model"]>;
/** One model's `cost` table (USD per million tokens), with optional long-context `tiers`. */
export type CatalogCost = v.InferOutput<Schemas["cost"]>;

/** Where a catalog came from. */
export type CatalogSource = "embedded" | "updated" | "file";

// node:fs (Bun's JS builtin, ~2 ms to load) is loaded by the functions below that use it, none of which a run calls
// before its request: a run reads the embedded file through Bun.file.
function fs(): typeof import("node:fs") {
  return process.getBuiltinModule("node:fs");
}

/** The embedded snapshot (generated from src/meter/models-dev at build time), whole. */
export function embeddedCatalog(): Catalog {
  embedded ??= JSON.parse(catalogText(fs().readFileSync(embeddedPath as unknown as string, "utf8"))) as Catalog;
  return embedded;
}

let embedded: Catalog | undefined;
let ranges: Promise<Record<string, ProviderRange>> | undefined;
const embeddedSlices = new Map<string, Promise<Catalog>>();

/**
 * The part of the embedded snapshot that {@link findModel} needs for
 * `modelId`: it resolves the model exactly as in {@link embeddedCatalog}
 * (the provider with at most that model, or the provider a model id such as
 * `openai-compatible/deepseek/deepseek-chat` names; `{}` when neither is
 * listed), for a fraction of the cost: only the first line and the provider's
 * lines are read, as bytes, and only the model's line is parsed (catalog-layout.ts).
 * @throws CachetError UNKNOWN_MODEL (as the promise's rejection) when modelId is not provider/model.
 */
export function embeddedCatalogFor(modelId: string): Promise<Catalog> {
  let slice = embeddedSlices.get(modelId);
  if (slice === undefined) {
    slice = readSlice(modelId);
    embeddedSlices.set(modelId, slice);
  }
  return slice;
}

async function readSlice(modelId: string): Promise<Catalog> {
  const { provider, model } = splitModelId(modelId);
  const own = await embeddedLines(provider);
  if (own) return providerSlice(own, model);
  const slash = model.indexOf("/");
  if (slash <= 0 || slash === model.length - 1) return {};
  const named = await embeddedLines(model.slice(0, slash));
  return named ? providerSlice(named, model.slice(slash + 1)) : {};
}

/**
 * The bytes of a provider's lines in the embedded file; undefined when it does not list the provider.
 * In the compiled binary the file is in memory and each slice's read is already settled when it returns
 * (no pool thread); run from source, it is a real file's read.
 */
async function embeddedLines(provider: string): Promise<Buffer | undefined> {
  const file = Bun.file(embeddedPath as unknown as string);
  ranges ??= (async () => {
    // The first line holds the ranges (~200 bytes): read a little, more if it is longer.
    for (let size = 1024; ; size *= 8) {
      const head = asBuffer(await file.slice(0, size).bytes());
      const end = head.indexOf("\n");
      if (end >= 0) return providerRanges(head.toString("utf8", 0, end));
      if (head.length < size) throw new Error(`the embedded catalog ${file.name} has no line break`);
    }
  })();
  const all = await ranges;
  const range = Object.hasOwn(all, provider) ? all[provider] : undefined;
  return range && asBuffer(await file.slice(range[0], range[1]).bytes());
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export { storedCatalogFile } from "../paths.ts";

/**
 * The catalog in force: the stored update if present, else the embedded one.
 * @throws CachetError CATALOG_INVALID when the stored update is unreadable or invalid.
 */
export async function loadCatalog(paths: StatePaths = statePaths()): Promise<{ catalog: Catalog; source: CatalogSource }> {
  const stored = await storedCatalog(paths);
  return stored ? { catalog: stored, source: "updated" } : { catalog: embeddedCatalog(), source: "embedded" };
}

/**
 * The stored update (`cachet prices update`), parsed and validated; undefined
 * when there is none and the embedded catalog is in force.
 * @throws CachetError CATALOG_INVALID when it is unreadable or invalid.
 */
export async function storedCatalog(paths: StatePaths = statePaths()): Promise<Catalog | undefined> {
  const file = Bun.file(storedCatalogFile(paths));
  if (!(await file.exists())) return undefined;
  return parseCatalog(await file.text(), file.name!);
}

/**
 * Parses and validates an api.json-shaped catalog text.
 * @param origin file name or URL, named in errors
 * @throws CachetError CATALOG_INVALID naming the origin and the first wrong key.
 */
export function parseCatalog(text: string, origin: string): Catalog {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    throw new CachetError("CATALOG_INVALID", `malformed JSON in price catalog ${origin}: ${(cause as Error).message}`, {
      hint: "give a models.dev api.json-shaped file (provider → models → cost)",
      cause,
    });
  }
  const result = v.safeParse(schemas().catalog, data);
  if (!result.success) {
    const issue = result.issues[0]!;
    throw new CachetError("CATALOG_INVALID", `invalid price catalog ${origin} at "${v.getDotPath(issue) ?? "(top level)"}": ${issue.message}`, {
      hint: "give a models.dev api.json-shaped file (provider → models → cost)",
    });
  }
  return result.output;
}

/** One model whose price or limits an update changed. */
export interface PriceChange {
  /** `provider/model`. */
  model: string;
  /** "added": the catalog in force did not list it; "changed": its cost table or limits differ; "removed": only with `replace`. */
  kind: "added" | "changed" | "removed";
  /**
   * The fields that differ, before → after, `null` when absent: cost fields by their
   * name (USD per million), limits as `limit.context`, `limit.input`, `limit.output` (tokens).
   */
  fields: Record<string, { before: unknown; after: unknown }>;
}

/** Result of {@link updateCatalog}. */
export interface CatalogUpdate {
  /** Where the catalog was stored. */
  path: string;
  /** "merge": the file's models over the catalog in force; "replace": the file whole. */
  mode: "merge" | "replace";
  /** Providers and models of the stored catalog. */
  providers: number;
  models: number;
  /** Models of the file read. */
  read: number;
  /** Models whose price or limits were added, changed or (replace) removed; unchanged ones are not listed. */
  changes: PriceChange[];
  /**
   * Anthropic cache prices of the file read that contradicted Anthropic's documented price, stored corrected (as the
   * build corrects the embedded catalog; src/meter/cache-price-check.ts): a later update of the same source would
   * otherwise bring a wrong price back.
   */
  corrections: CachePriceFinding[];
}

/** Default source of `cachet prices update`. */
export const DEFAULT_CATALOG_URL = "https://models.dev/api.json";

/**
 * Fetches (http/https URL) or reads (file path) a catalog, validates it
 * whole, and stores it atomically (temp file + rename): merged over the
 * catalog in force by default (a model in the file replaces the same model;
 * every other model stays), or as it is with `replace`. The stored catalog is
 * either the old one or the new one, never a mix.
 * @throws CachetError CATALOG_INVALID (bad JSON or shape, nothing stored), INPUT_INVALID (unreadable source).
 */
export async function updateCatalog(from: string = DEFAULT_CATALOG_URL, paths: StatePaths = statePaths(), options: { replace?: boolean } = {}): Promise<CatalogUpdate> {
  let text: string;
  try {
    if (/^https?:\/\//.test(from)) {
      const response = await fetch(from);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      text = await response.text();
    } else {
      // The shared reader: a BOM dropped, invalid UTF-8 at its offset, a missing path or a directory named as such.
      const { readTextFile } = await import("../input/read-input.ts");
      text = await readTextFile(from, { label: `price catalog ${from}`, hint: "give a reachable URL or an existing file with --from" });
    }
  } catch (cause) {
    if (cause instanceof CachetError) throw cause;
    throw new CachetError("INPUT_INVALID", `cannot read price catalog ${from}: ${(cause as Error).message}`, {
      hint: "give a reachable URL or an existing file with --from",
      cause,
    });
  }
  const incoming = parseCatalog(text, from);
  if (Object.keys(incoming).length === 0) throw new CachetError("CATALOG_INVALID", `price catalog ${from} has no providers`, { hint: "give a models.dev api.json-shaped file" });
  const { checkAnthropicCachePrices } = await import("./cache-price-check.ts");
  const corrections = checkAnthropicCachePrices(incoming as Record<string, Record<string, unknown>>).filter((f) => f.action === "corrected");
  const { catalog: current } = await loadCatalog(paths);
  const next = options.replace ? incoming : overlayCatalog(current, incoming);
  const path = storedCatalogFile(paths);
  makePrivateDir(dirname(path));
  const temp = `${path}.${process.pid}.tmp`;
  fs().writeFileSync(temp, JSON.stringify(next));
  fs().renameSync(temp, path);
  return { path, mode: options.replace ? "replace" : "merge", providers: Object.keys(next).length, models: countModels(next), read: countModels(incoming), changes: priceChanges(current, next), corrections };
}

/**
 * Removes the stored update: the embedded catalog is in force again.
 * @returns whether there was one
 */
export function resetCatalog(paths: StatePaths = statePaths()): boolean {
  const path = storedCatalogFile(paths);
  if (!fs().existsSync(path)) return false;
  fs().rmSync(path);
  return true;
}

/** Models whose cost table or limits differ between two catalogs, sorted by id. */
export function priceChanges(before: Catalog, after: Catalog): PriceChange[] {
  const changes: PriceChange[] = [];
  const ids = new Set([...modelIds(before), ...modelIds(after)]);
  for (const id of [...ids].sort()) {
    const old = findModel(before, id);
    const now = findModel(after, id);
    if (!now) {
      changes.push({ model: id, kind: "removed", fields: {} });
      continue;
    }
    const fields: PriceChange["fields"] = {};
    // A limit in force is what `cachet models` shows and what the window check refuses by: a change to it is a change.
    for (const [prefix, a, b] of [["", old?.cost, now.cost], ["limit.", old?.limit, now.limit]] as const) {
      const before = (a ?? {}) as Record<string, unknown>;
      const after = (b ?? {}) as Record<string, unknown>;
      for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
        if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) fields[prefix + key] = { before: before[key] ?? null, after: after[key] ?? null };
      }
    }
    if (!old) changes.push({ model: id, kind: "added", fields });
    else if (Object.keys(fields).length > 0) changes.push({ model: id, kind: "changed", fields });
  }
  return changes;
}

function modelIds(catalog: Catalog): string[] {
  return Object.entries(catalog).flatMap(([provider, p]) => Object.keys(p.models).map((m) => `${provider}/${m}`));
}

function countModels(catalog: Catalog): number {
  return Object.values(catalog).reduce((n, p) => n + Object.keys(p.models).length, 0);
}

/** A `provider/model` id split at the first slash (model ids may contain more slashes). */
export function splitModelId(modelId: string): { provider: string; model: string } {
  const slash = modelId.indexOf("/");
  if (slash <= 0 || slash === modelId.length - 1) {
    throw new CachetError("UNKNOWN_MODEL", `model "${modelId}" is not of the form provider/model`, {
      hint: `write the model as provider/model, e.g. ${DEFAULT_MODEL} (see \`cachet models\`)`,
    });
  }
  return { provider: modelId.slice(0, slash), model: modelId.slice(slash + 1) };
}

/**
 * The catalog entry of `provider/model`, or undefined when the catalog does
 * not list it. A provider with no catalog of its own (`openai-compatible`, a
 * plugin's proxy) whose model id names a catalog model, as LiteLLM and vLLM
 * name served models (`openai-compatible/deepseek/deepseek-chat`), resolves
 * to that model: the server fronts it, so it is priced and limited as it.
 * @see https://docs.litellm.ai/docs/providers (model names `provider/model`)
 */
export function findModel(catalog: Catalog, modelId: string): CatalogModel | undefined {
  const { provider, model } = splitModelId(modelId);
  const models = catalog[provider]?.models;
  if (models) return Object.hasOwn(models, model) ? models[model] : undefined;
  return namedCatalogModel(catalog, model);
}

/**
 * The `provider/model` id the catalog lists for `modelId`'s provider that is a
 * typo away from it (src/cli/near-name.ts), for a "did you mean" on an unknown
 * model; undefined when the catalog has no such provider or no close id.
 * @throws CachetError UNKNOWN_MODEL when the id is not `provider/model`.
 */
export function nearModelId(catalog: Catalog, modelId: string): string | undefined {
  const { provider, model } = splitModelId(modelId);
  const models = catalog[provider]?.models;
  const near = models ? nearestName(model, Object.keys(models)) : undefined;
  return near === undefined ? undefined : `${provider}/${near}`;
}

/**
 * The `provider/model` id a provider-less or wrongly-providered `model`
 * (`claude-sonnet-4-6`, the model part of `gemini/gemini-2.5-flash`) most
 * likely means, for a "did you mean -m": the one of `providers` (catalog
 * provider ids) whose catalog models include `model`, else the one with an id
 * a typo away (src/cli/near-name.ts). Undefined when no provider, or more than
 * one, has it: a guess between providers would be a coin toss.
 */
export function modelHome(catalog: Catalog, model: string, providers: Iterable<string>): string | undefined {
  const listed = [...providers].filter((p) => catalog[p] !== undefined);
  const exact = listed.filter((p) => Object.hasOwn(catalog[p]!.models, model));
  if (exact.length > 0) return exact.length === 1 ? `${exact[0]}/${model}` : undefined;
  const near = listed.flatMap((p) => {
    const id = nearestName(model, Object.keys(catalog[p]!.models));
    return id === undefined ? [] : [`${p}/${id}`];
  });
  return near.length === 1 ? near[0] : undefined;
}

/** The catalog entry `model` names as `provider/model`, if it is one. */
function namedCatalogModel(catalog: Catalog, model: string): CatalogModel | undefined {
  const slash = model.indexOf("/");
  if (slash <= 0 || slash === model.length - 1) return undefined;
  const models = catalog[model.slice(0, slash)]?.models;
  const id = model.slice(slash + 1);
  return models && Object.hasOwn(models, id) ? models[id] : undefined;
}

/**
 * `overlay` over `base`, per provider and model: a model in `overlay`
 * replaces the same model in `base` (used by `cachet price --prices FILE`).
 */
export function overlayCatalog(base: Catalog, overlay: Catalog): Catalog {
  const out: Catalog = { ...base };
  for (const [id, provider] of Object.entries(overlay)) {
    out[id] = { ...(base[id] ?? {}), ...provider, models: { ...(base[id]?.models ?? {}), ...provider.models } };
  }
  return out;
}
