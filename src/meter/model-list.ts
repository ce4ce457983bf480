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

/** What `cachet models --provider P` says when the catalog in force lists no model under P's catalog id. */
export interface MissingModels {
  message: string;
  hint: string;
}

/**
 * Why the catalog in force (`inForce`) lists no model of `provider` (listed
 * under `catalogId`), and what to do: a provider the built-in catalog
 * (`builtIn`) lists models of (the stored catalog, e.g. one stored by
 * `cachet prices update --replace`, dropped them) is named some of those
 * (priced, newest first) and `cachet prices reset`; a provider with no
 * list of its own anywhere (an OpenAI-compatible server) is told that a
 * model id naming a catalog model is priced as it, with a model the
 * catalog in force lists; a catalog in force with no model at all, that
 * none is priced and how to get the built-in catalog back.
 */
export function missingModels(provider: string, catalogId: string, inForce: Catalog, builtIn: Catalog): MissingModels {
  const configured = `[prices."${provider}/MODEL"] in config.toml`;
  const own = newestPriced(builtIn[catalogId]?.models ?? {}, 3);
  if (own.length > 0) {
    return {
      message: `the price catalog in force (stored by \`cachet prices update\`) lists no model of provider "${provider}"`,
      hint: `the built-in catalog prices ${own.map((m) => `${provider}/${m}`).join(", ")} and more: \`cachet prices reset\` brings it back; or price a model with ${configured}`,
    };
  }
  // The usual example (a LiteLLM or vLLM server fronting DeepSeek) when the catalog in force prices it, else a model it prices.
  const named = inForce.deepseek?.models["deepseek-chat"]?.cost?.input !== undefined ? "deepseek/deepseek-chat" : Object.entries(inForce).flatMap(([id, p]) => newestPriced(p.models, 1).map((m) => `${id}/${m}`)).sort()[0];
  if (named === undefined) {
    return {
      message: `the price catalog in force prices no model, so none of provider "${provider}" is priced`,
      hint: `\`cachet prices reset\` brings the built-in catalog back; or price a model with ${configured}`,
    };
  }
  return {
    message: `provider "${provider}" has no model list of its own in the price catalog`,
    hint: `a model id that names a catalog model is priced as it (e.g. ${provider}/${named}: see \`cachet models\`); price any other with ${configured}`,
  };
}

/** Up to `count` ids of priced models, newest release first (then by id). */
function newestPriced(models: Catalog[string]["models"], count: number): string[] {
  const release = (m: Catalog[string]["models"][string]) => (typeof m.release_date === "string" ? m.release_date : "");
  return Object.entries(models)
    .filter(([, m]) => m.cost?.input !== undefined)
    .sort(([a, ma], [b, mb]) => release(mb).localeCompare(release(ma)) || a.localeCompare(b))
    .slice(0, count)
    .map(([id]) => id);
}
