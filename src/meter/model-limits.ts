/**
 * A model's context and output limits and its temperature rule, as the price
 * catalog in force gives them, for the checks made before a request is sent.
 * With the embedded catalog they come from a small table generated with it at
 * build time (build/catalog.ts, limitsTable): parsing the whole catalog and
 * loading its schema cost more than the rest of a short run's way to its
 * first request byte. A stored catalog update (`cachet prices update`) is
 * read whole, since its limits may differ, once per process while the file
 * stays the same (a turn asks several times).
 */
import { readFileSync, statSync } from "node:fs";
import { storedCatalogFile, type StatePaths } from "../paths.ts";
import tablePath from "./limits.generated.json" with { type: "file" };

/** What the catalog says of one model; a field it does not give is absent. */
export interface ModelLimits {
  /** Context window and output limit, tokens. */
  limit?: { context?: number; output?: number };
  /** false when the model accepts only the default temperature (and top_p). */
  temperature?: boolean;
}

type Row = [context: number | null, output: number | null, defaultTemperatureOnly: 0 | 1];

let table: Record<string, Record<string, Row>> | undefined;

/** The stored catalog update last read, with what identifies its file's version. */
let stored: { file: string; version: string; catalog: import("./catalog.ts").Catalog } | undefined;

/**
 * The limits of `provider/model` in the catalog in force, resolved as
 * findModel (src/meter/catalog.ts) resolves a model; undefined when the catalog does not list it.
 * @throws CachetError UNKNOWN_MODEL when modelId is not provider/model; CATALOG_INVALID when a stored update is corrupt
 */
export async function modelLimits(modelId: string, paths: StatePaths): Promise<ModelLimits | undefined> {
  const file = storedCatalogFile(paths);
  const stat = statSync(file, { throwIfNoEntry: false });
  if (stat) {
    const { findModel, parseCatalog } = await import("./catalog.ts");
    // A replaced or rewritten file (an update in another process) differs in inode, size or modification time.
    const version = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    if (stored?.file !== file || stored.version !== version) stored = { file, version, catalog: parseCatalog(readFileSync(file, "utf8"), file) };
    return findModel(stored.catalog, modelId);
  }
  table ??= JSON.parse(readFileSync(tablePath as unknown as string, "utf8")) as Record<string, Record<string, Row>>;
  const slash = modelId.indexOf("/");
  // Not provider/model: catalog.ts names what is wrong (and loads only on this path).
  if (slash <= 0 || slash === modelId.length - 1) (await import("./catalog.ts")).splitModelId(modelId);
  const provider = modelId.slice(0, slash);
  const model = modelId.slice(slash + 1);
  const row = table[provider] ? own(table[provider], model) : namedModel(table, model);
  return row && fromRow(row);
}

/** A provider without a catalog of its own fronting a catalog model (`openai-compatible/deepseek/deepseek-chat`): as findModel. */
function namedModel(all: Record<string, Record<string, Row>>, model: string): Row | undefined {
  const slash = model.indexOf("/");
  if (slash <= 0 || slash === model.length - 1) return undefined;
  const models = all[model.slice(0, slash)];
  return models && own(models, model.slice(slash + 1));
}

function own(models: Record<string, Row>, id: string): Row | undefined {
  return Object.hasOwn(models, id) ? models[id] : undefined;
}

function fromRow([context, output, defaultOnly]: Row): ModelLimits {
  const limit = { ...(context !== null ? { context } : {}), ...(output !== null ? { output } : {}) };
  return { ...(context !== null || output !== null ? { limit } : {}), ...(defaultOnly ? { temperature: false } : {}) };
}
