/**
 * Generates the embedded price catalog: reads the models.dev TOML data copied
 * into src/meter/models-dev, fills what it lacks from `@pydantic/genai-prices`
 * (build/genai-prices.ts: xAI, 1h writes, modality prices, server-tool fees), checks the Anthropic cache prices of
 * both against Anthropic's documented multipliers and corrects the ones that contradict them
 * (src/meter/cache-price-check.ts; each correction recorded on its entry as `price_corrections`), and writes
 * `src/meter/catalog.generated.txt` in the shape of models.dev's `api.json` (provider → models → cost, limit, …), one
 * model per line (src/meter/catalog-layout.ts). It reads no network: the sources are the copied data and the pinned package.
 *
 * The build calls {@link generateCatalog} before compiling; `bun build/catalog.ts`
 * runs it alone; test/setup.ts runs it when the snapshot is missing.
 * @see https://github.com/anomalyco/models.dev (data layout and api.json shape)
 */
import { readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { checkAnthropicCachePrices, type CachePriceFinding } from "../src/meter/cache-price-check.ts";
import { layOutCatalog } from "../src/meter/catalog-layout.ts";
import { supplementCatalog } from "./genai-prices.ts";

const ROOT = join(import.meta.dir, "..");
/** The copied models.dev data (MIT, see its LICENSE and README). */
export const CATALOG_SOURCE = join(ROOT, "src", "meter", "models-dev");
/** The generated snapshot, imported statically by src/meter/catalog.ts (gitignored). */
export const CATALOG_OUTPUT = join(ROOT, "src", "meter", "catalog.generated.txt");

/** Fields of a model TOML that do not go into the snapshot (bulky, not used by cachet). */
const DROPPED_FIELDS = new Set(["benchmarks", "base_model", "base_model_omit"]);

/**
 * Writes the snapshot, laid out one model per line (layOutCatalog), and returns its path with the cache prices the
 * check found contradicting Anthropic's multipliers (corrected or published by Anthropic as they are).
 * @param source folder with `providers/` and `models/` (models.dev layout)
 * @param output JSON file to write (atomically: temp file, then rename)
 * @throws Error when a TOML file does not parse (names the file)
 */
export async function generateCatalog(source: string = CATALOG_SOURCE, output: string = CATALOG_OUTPUT): Promise<{ path: string; cacheFindings: CachePriceFinding[] }> {
  const catalog = supplementCatalog(buildCatalog(source));
  const cacheFindings = checkAnthropicCachePrices(catalog);
  writeAtomically(output, layOutCatalog(catalog));
  return { path: output, cacheFindings };
}

/** One line for the build's log: how many models' cache prices contradicted the multipliers, and what became of them. */
export function cacheFindingsSummary(findings: readonly CachePriceFinding[]): string {
  const models = (action: CachePriceFinding["action"]): string[] => [...new Set(findings.filter((f) => f.action === action).map((f) => f.model))];
  const corrected = models("corrected");
  const published = models("published");
  const all = new Set(findings.map((f) => f.model)).size;
  return `Anthropic cache prices: ${all} model(s) differ from the documented multipliers (write 5m 1.25x, 1h 2x, read 0.1x of input); corrected ${corrected.length} (${corrected.join(", ") || "none"}); kept ${published.length} whose prices Anthropic publishes so (${published.join(", ") || "none"})`;
}

function writeAtomically(path: string, text: string): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}

/**
 * Builds the api.json-shaped object from a models.dev data folder: each
 * provider's `provider.toml` plus its `models/**.toml` (ids with `/` come from
 * subfolders), merged over the provider-agnostic metadata named by
 * `base_model` (cost is never inherited), with tiers normalised to
 * `{ tier: { type: "context", size } }`.
 */
export function buildCatalog(source: string): Record<string, Record<string, unknown>> {
  const providersDir = join(source, "providers");
  const out: Record<string, Record<string, unknown>> = {};
  for (const providerId of readdirSync(providersDir).sort()) {
    const provider = parseToml(join(providersDir, providerId, "provider.toml"));
    const models: Record<string, unknown> = {};
    const modelsDir = join(providersDir, providerId, "models");
    for (const file of listToml(modelsDir)) {
      const id = relative(modelsDir, file).slice(0, -".toml".length).split(sep).join("/");
      models[id] = modelEntry(id, parseToml(file), source);
    }
    out[providerId] = { id: providerId, ...provider, models };
  }
  return out;
}

function modelEntry(id: string, own: Record<string, unknown>, source: string): Record<string, unknown> {
  let merged: Record<string, unknown> = { ...own };
  if (typeof own.base_model === "string") {
    const base = parseToml(join(source, "models", `${own.base_model}.toml`));
    delete base.cost;
    for (const path of Array.isArray(own.base_model_omit) ? own.base_model_omit : []) omit(base, String(path));
    merged = deepMerge(base, own);
  }
  for (const key of DROPPED_FIELDS) delete merged[key];
  const cost = merged.cost as Record<string, unknown> | undefined;
  if (cost && Array.isArray(cost.tiers)) {
    cost.tiers = cost.tiers.map((t: Record<string, unknown>) => {
      const tier = t.tier as { type?: string; size: number };
      return { ...t, tier: { type: tier.type ?? "context", size: tier.size } };
    });
  }
  return { id, ...merged };
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key];
    out[key] = isPlainObject(prior) && isPlainObject(value) ? deepMerge(prior, value) : value;
  }
  return out;
}

function omit(target: Record<string, unknown>, dotPath: string): void {
  const parts = dotPath.split(".");
  let node: unknown = target;
  for (const part of parts.slice(0, -1)) node = isPlainObject(node) ? node[part] : undefined;
  if (isPlainObject(node)) delete node[parts.at(-1)!];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function listToml(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listToml(path));
    else if (entry.name.endsWith(".toml")) files.push(path);
  }
  return files;
}

function parseToml(file: string): Record<string, unknown> {
  try {
    return Bun.TOML.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch (cause) {
    throw new Error(`cannot parse ${file}: ${(cause as Error).message}`, { cause });
  }
}

if (import.meta.main) {
  const { path, cacheFindings } = await generateCatalog();
  process.stderr.write(`catalog written to ${relative(process.cwd(), path)}\n${cacheFindingsSummary(cacheFindings)}\n`);
}
