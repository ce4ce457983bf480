/**
 * A model's context and output limits and its temperature rule, as the price
 * catalog in force gives them, for the checks made before a request is sent.
 * From the embedded catalog only the model's own line is parsed
 * (embeddedCatalogFor): parsing the whole catalog cost more than the rest of
 * a short run's way to its first request byte. A stored catalog update
 * (`cachet prices update`) is read whole, since its limits may differ, once
 * while the file stays the same (a turn asks several times; a resident
 * process runs many turns, and `cachet prices update` may replace it between two).
 * Files are read through Bun.file, not node:fs (Bun's JS builtin, ~2 ms to
 * load before a run's request).
 */
import { storedCatalogFile, type StatePaths } from "../paths.ts";
import { embeddedCatalogFor, findModel, parseCatalog, type Catalog } from "./catalog.ts";

/** What the catalog says of one model; a field it does not give is absent. */
export interface ModelLimits {
  /** Context window and output limit, tokens. */
  limit?: { context?: number; output?: number };
  /** false when the model accepts only the default temperature (and top_p). */
  temperature?: boolean;
}

/** The stored catalog update last read, with what identifies its file's version. */
let stored: { file: string; version: string; catalog: Catalog } | undefined;

/**
 * The limits of `provider/model` in the catalog in force, resolved as
 * findModel (src/meter/catalog.ts) resolves a model; undefined when the catalog does not list it.
 * @throws CachetError UNKNOWN_MODEL when modelId is not provider/model; CATALOG_INVALID when a stored update is corrupt
 */
export async function modelLimits(modelId: string, paths: StatePaths): Promise<ModelLimits | undefined> {
  return findModel((await storedUpdate(paths)) ?? (await embeddedCatalogFor(modelId)), modelId);
}

/**
 * The stored catalog update (`cachet prices update`) of `paths`, parsed again
 * only when its file changed; undefined when there is none and the embedded catalog is in force.
 * @throws CachetError CATALOG_INVALID when the stored update is corrupt
 */
export async function storedUpdate(paths: StatePaths): Promise<Catalog | undefined> {
  const file = storedCatalogFile(paths);
  const update = Bun.file(file);
  // exists() answers at once (no pool thread); it is what storedCatalog asks too (src/meter/catalog.ts).
  const stat = (await update.exists()) ? await update.stat().catch(() => undefined) : undefined;
  if (!stat) return undefined;
  // A replaced or rewritten file (an update in another process) differs in inode, size or modification time.
  const version = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  if (stored?.file !== file || stored.version !== version) stored = { file, version, catalog: parseCatalog(await update.text(), file) };
  return stored.catalog;
}
