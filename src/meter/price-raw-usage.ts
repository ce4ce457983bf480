/**
 * The library behind `cachet price`: one raw provider usage object (the
 * final, stream-merged one, in the provider's own shape) priced for a
 * `provider/model`, as the JSON object the command prints.
 */
import type { Config } from "../config.ts";
import { CachetError } from "../errors.ts";
import { overlayCatalog, parseCatalog, splitModelId, type Catalog } from "./catalog.ts";
import { extrasOf, priceUsage, resolvePrice, type CostCategory, type RequestCost } from "./pricing.ts";
import { plainUsd } from "./money.ts";
import { invalidTokenCount } from "../plugin/raw-token-counts.ts";
import { usageJson, type UsageJson, type UsageReport } from "../plugin/usage.ts";

/** Inputs of {@link priceRawUsage}. */
export interface PriceRawUsageOptions {
  /** `provider/model` as given (shown in the output). */
  model: string;
  /** `catalogId/model`: where prices are looked up (src/run/model-resolution.ts). */
  catalogRef: string;
  /** The provider's own usage mapping (the one `run` uses). */
  read: (raw: unknown) => { report: UsageReport; warning?: string };
  /** The raw usage as JSON text. */
  usageText: string;
  /** Where the usage came from (file name or "stdin"), named in errors. */
  usageOrigin: string;
  /** The catalog in force. */
  catalog: Catalog;
  /** An api.json-shaped catalog text overriding `catalog` (`--prices FILE`). */
  pricesText?: string;
  pricesOrigin?: string;
  /** Config price overrides. */
  overrides?: Config["prices"];
  /** The usage was reported by a stream cut before its end: price it as a flagged lower bound. */
  partial?: boolean;
}

/** The JSON `cachet price --json` prints. Token counts null when the provider did not report them. */
export interface PriceOutput {
  model: string;
  cost_usd: number | null;
  /** The exact cost as a decimal string (no float rounding). */
  cost_usd_exact: string | null;
  /** Why `cost_usd` is null. */
  unknown_reason?: string;
  tokens: UsageJson;
  /**
   * One per category; a server-tool line counts calls (`unit: "calls"`, price per million calls); `derived`: the
   * price is not the catalog's but the input price times a provider's documented share (the rule and its source).
   */
  lines: Array<{ category: CostCategory; tool?: string; unit?: "calls" | "request"; tokens: number; price_per_million: number | null; usd: number | null; derived?: string }>;
  /** The long-context tier applied, or null for base prices. */
  tier: { size: number; prompt_tokens: number } | null;
  /** The service tier priced, when the provider said one. */
  service_tier?: string;
  provider_cost_usd?: number;
  /** True when `estimates` is not empty: the figure is not exact. */
  estimate: boolean;
  /** True when the true cost is at least `cost_usd`. */
  lower_bound: boolean;
  estimates: string[];
}

/**
 * Prices one raw usage object.
 * @throws CachetError INPUT_INVALID (malformed JSON, a token count that is not
 *   a whole number ≥ 0, or an object that is not a usage of the provider's shape), CATALOG_INVALID (bad `--prices` file),
 *   UNKNOWN_MODEL (no price for the model, or not `provider/model`).
 */
export function priceRawUsage(options: PriceRawUsageOptions): { output: PriceOutput; cost: RequestCost } {
  const { provider } = splitModelId(options.model);
  let raw: unknown;
  try {
    raw = JSON.parse(options.usageText);
  } catch (cause) {
    throw new CachetError("INPUT_INVALID", `malformed JSON in usage ${options.usageOrigin}: ${(cause as Error).message}`, {
      hint: "give the provider's usage object as JSON, e.g. {\"input_tokens\":10,\"output_tokens\":5}",
      cause,
    });
  }
  checkTokenCounts(raw, options.usageOrigin);
  const { usage: rawUsage, serviceTier } = unwrapResponse(raw);
  const { report, warning } = options.read(rawUsage);
  if (serviceTier !== undefined) report.serviceTier ??= serviceTier;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || (report.usage.input === undefined && report.usage.output === undefined)) {
    throw new CachetError("INPUT_INVALID", `usage ${options.usageOrigin} does not look like a usage object of provider ${provider}: no input or output token counts found${warning ? ` (${warning})` : ""}`, {
      hint: "pass the provider's final usage object as it returns it (see README.md, Cost)",
    });
  }
  const catalog = options.pricesText === undefined ? options.catalog : overlayCatalog(options.catalog, parseCatalog(options.pricesText, options.pricesOrigin ?? "--prices"));
  const resolved = resolvePrice(catalog, options.catalogRef, options.overrides);
  if (resolved === undefined) {
    throw new CachetError("UNKNOWN_MODEL", `unknown model ${options.model}: it has no price in the catalog${options.catalogRef === options.model ? "" : ` (looked up as ${options.catalogRef})`}`, {
      hint: "see `cachet models`, run `cachet prices update`, or pass --prices FILE",
    });
  }
  const cost = priceUsage(report.usage, resolved, options.catalogRef, { ...extrasOf(report), partial: options.partial === true });
  cost.model = options.model;
  if (report.providerCostUsd !== undefined) cost.providerCostUsd = report.providerCostUsd;
  return { output: toPriceOutput(cost), cost };
}

/**
 * Refuses a token count that is not a whole number ≥ 0 anywhere in the given
 * JSON (see src/plugin/raw-token-counts.ts). Provider mappings read such a
 * count as unreported, which would turn bad input into "cost unknown" and exit 0.
 * @throws CachetError INPUT_INVALID naming the field's path and its value.
 */
function checkTokenCounts(value: unknown, origin: string): void {
  const invalid = invalidTokenCount(value);
  if (!invalid) return;
  throw new CachetError("INPUT_INVALID", `usage ${origin}: ${invalid.path} is ${invalid.problem}: a token count is a whole number ≥ 0`, {
    hint: "pass the provider's usage object as it returned it, with each token count a whole number ≥ 0",
  });
}

/**
 * The usage object and the served tier of what `cachet price` was given:
 * a usage object as is, or a whole response carrying it (`usage` with a
 * top-level `service_tier`, as OpenAI returns it; Gemini's `usageMetadata`
 * is read by its mapping).
 */
function unwrapResponse(raw: unknown): { usage: unknown; serviceTier?: string } {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { usage: raw };
  const o = raw as Record<string, unknown>;
  const inner = o.usage;
  const isWrapper = typeof inner === "object" && inner !== null && !Array.isArray(inner) && !("prompt_tokens" in o) && !("input_tokens" in o);
  const tier = typeof o.service_tier === "string" ? o.service_tier : undefined;
  if (!isWrapper) return tier === undefined ? { usage: raw } : { usage: raw, serviceTier: tier };
  return tier === undefined ? { usage: inner } : { usage: inner, serviceTier: tier };
}

/** A priced request as the `cachet price --json` object. */
export function toPriceOutput(cost: RequestCost): PriceOutput {
  const output: PriceOutput = {
    model: cost.model,
    cost_usd: cost.costUsd,
    cost_usd_exact: cost.costExact,
    tokens: usageJson(cost.usage),
    lines: cost.lines.map((l) => ({ category: l.category, ...(l.tool ? { tool: l.tool } : {}), ...(l.unit ? { unit: l.unit } : {}), tokens: l.tokens, price_per_million: l.pricePerMillion, usd: l.usd, ...(l.derived ? { derived: l.derived } : {}) })),
    tier: cost.tier ? { size: cost.tier.size, prompt_tokens: cost.tier.promptTokens } : null,
    estimate: cost.estimates.length > 0,
    lower_bound: cost.lowerBound,
    estimates: cost.estimates,
  };
  if (cost.serviceTier !== undefined) output.service_tier = cost.serviceTier;
  if (cost.unknownReason !== null) output.unknown_reason = cost.unknownReason;
  if (cost.providerCostUsd !== undefined) output.provider_cost_usd = cost.providerCostUsd;
  return output;
}

/** A priced request as a small human table (one line per category, then the total). */
export function formatPriceTable(cost: RequestCost): string {
  const rows: string[][] = [["category", "tokens", "$/M", "USD"]];
  for (const l of cost.lines) {
    const name = l.tool ? `${l.tool} (calls)` : l.unit === "request" ? `${l.category} (request)` : l.category;
    const price = l.pricePerMillion === null ? "?" : l.tool ? `${l.pricePerMillion / 1000}/1k` : l.unit === "request" ? `${l.usdExact}/req` : String(l.pricePerMillion);
    rows.push([name, String(l.tokens), l.derived ? `${price} (derived)` : price, l.usdExact ?? "?"]);
  }
  rows.push(["total", "", "", cost.costExact === null ? "unknown" : `${cost.costExact}${cost.lowerBound ? " (at least)" : cost.estimates.length > 0 ? " (estimate)" : ""}`]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const body = rows.map((r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ").trimEnd());
  const head = `${cost.model}  ${cost.tier ? `tier >${cost.tier.size} tokens (prompt ${cost.tier.promptTokens})` : "base prices"}${cost.serviceTier ? `  service tier ${cost.serviceTier}` : ""}`;
  const notes = [
    ...(cost.unknownReason ? [`cost unknown: ${cost.unknownReason}`] : []),
    ...(cost.providerCostUsd !== undefined ? [`provider-reported cost: ${plainUsd(cost.providerCostUsd)}`] : []),
    ...cost.estimates.map((e) => `estimate: ${e}`),
  ];
  return [head, ...body, ...notes].join("\n") + "\n";
}
