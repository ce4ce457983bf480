/**
 * `cachet models`: the catalog's models with prices, tiers and limits, as
 * rows (for --json) and as a text table.
 */
import type { Catalog } from "./catalog.ts";

/** One model of the listing. Prices in USD per million tokens, null when the catalog has none. */
export interface ModelRow {
  /** `provider/model`. */
  id: string;
  name: string | null;
  input: number | null;
  output: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
  /** Long-context tiers: above `size` prompt tokens, these prices apply to the whole request. */
  tiers: Array<{ size: number; input: number | null; output: number | null; cacheRead: number | null; cacheWrite: number | null }>;
  context: number | null;
  maxOutput: number | null;
}

/** The models of `catalog` (of one catalog provider with `provider`, ids shown under `shownAs` when given), sorted by id. */
export function listModels(catalog: Catalog, provider?: string, shownAs?: string): ModelRow[] {
  const rows: ModelRow[] = [];
  for (const [providerId, p] of Object.entries(catalog)) {
    if (provider !== undefined && providerId !== provider) continue;
    for (const [modelId, m] of Object.entries(p.models)) {
      const c = m.cost;
      rows.push({
        id: `${shownAs ?? providerId}/${modelId}`,
        name: m.name ?? null,
        input: c?.input ?? null,
        output: c?.output ?? null,
        cacheRead: c?.cache_read ?? null,
        cacheWrite: c?.cache_write ?? null,
        tiers: (c?.tiers ?? []).map((t) => ({ size: t.tier.size, input: t.input ?? null, output: t.output ?? null, cacheRead: t.cache_read ?? null, cacheWrite: t.cache_write ?? null })),
        context: m.limit?.context ?? null,
        maxOutput: m.limit?.output ?? null,
      });
    }
  }
  return rows.sort((a, b) => a.id.localeCompare(b.id));
}

/** A text table of {@link listModels} rows: id, in/out/read/write $/M, context and output limits (tokens), tiers. */
export function formatModels(rows: readonly ModelRow[]): string {
  const known = (v: number | null): string => (v === null ? "-" : String(v));
  const table = [["model", "in $/M", "out $/M", "read $/M", "write $/M", "context", "max out", "tiers"]];
  for (const r of rows) {
    const tiers = r.tiers.map((t) => `>${t.size}: ${known(t.input)}/${known(t.output)}`).join(", ");
    table.push([r.id, known(r.input), known(r.output), known(r.cacheRead), known(r.cacheWrite), known(r.context), known(r.maxOutput), tiers]);
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  const last = table[0]!.length - 1;
  // Names and tiers read left to right; figures line up on their last digit.
  return `${table.map((row) => row.map((cell, i) => (i === 0 || i === last ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ").trimEnd()).join("\n")}\n`;
}
