/**
 * The meter's entry points for the turn pipeline: price a usage report for
 * `provider/model` with the catalog in force and the config's overrides,
 * attribute it to the request's nodes, and the one-line cost summary.
 */
import type { Config } from "../config.ts";
import { statePaths } from "../paths.ts";
import type { UsageReport } from "../plugin/usage.ts";
import { embeddedCatalog, embeddedCatalogFor, nearModelId } from "./catalog.ts";
import { storedUpdate } from "./model-limits.ts";
import { priceUsageReport, resolvePrice, uncachedCost, type RequestCost } from "./pricing.ts";

export { ChainMeter, attributeRequest, ratesOf } from "./attribute.ts";
export type { AttributeOptions, CategoryRates, NodeCost, OutputCost, RequestAttribution } from "./attribute.ts";
export { loadCatalog } from "./catalog.ts";
export type { Catalog } from "./catalog.ts";
export { priceUsage, priceUsageReport, resolvePrice, uncachedCost } from "./pricing.ts";
export type { CostLine, RequestCost, ResolvedPrice } from "./pricing.ts";
export { formatCostLine, ledgerStats, ledgerTotal } from "./stats.ts";
export { sessionCost } from "./session-cost.ts";

/**
 * A priced request plus `reason` (why the cost is unknown, or what in it is
 * an estimate), `estimate` (set only when a known cost is not exact), the
 * uncached cost stored for savings and, for a model the catalog does not
 * list, `nearModel`: a listed `provider/model` id of the same provider a typo
 * away from it.
 */
export type PricedRequest = RequestCost & { reason?: string; estimate?: string; noCacheCostUsd: number | null; nearModel?: string };

/**
 * Prices an adapter's usage report for `provider/model` with the catalog in
 * force (a stored update, read again only when its file changed; else the embedded
 * catalog, of which only the model's entry is read) and
 * `config.prices` overrides. Unknown model or price → `costUsd: null` and a
 * `reason` (print it as a warning), never $0. `partial`: the usage is what a
 * cut stream reported, priced as a flagged lower bound (CASES.md case 44).
 * @throws CachetError CATALOG_INVALID when a stored catalog update is corrupt; UNKNOWN_MODEL when modelRef is not provider/model.
 */
export async function priceReport(modelRef: string, report: UsageReport, options: { config: Config; env?: Record<string, string | undefined>; partial?: boolean }): Promise<PricedRequest> {
  const resolvedCatalog = (await storedUpdate(statePaths(options.env ?? process.env))) ?? (await embeddedCatalogFor(modelRef));
  const base = priceUsageReport(report, modelRef, resolvedCatalog, options.config.prices, options.partial === true);
  const cost: PricedRequest = { ...base, noCacheCostUsd: uncachedCost(report, modelRef, resolvedCatalog, options.config.prices) };
  const reason = cost.unknownReason ?? (cost.estimates.length > 0 ? cost.estimates.join("; ") : undefined);
  if (reason !== undefined) cost.reason = reason;
  if (cost.costUsd === null && resolvePrice(resolvedCatalog, modelRef, options.config.prices) === undefined) {
    // An unknown model, maybe misspelled: the whole catalog is read for its provider's ids, on this path only.
    const near = nearModelId((await storedUpdate(statePaths(options.env ?? process.env))) ?? embeddedCatalog(), modelRef);
    if (near !== undefined) cost.nearModel = near;
  }
  if (cost.costUsd !== null && cost.estimates.length > 0) cost.estimate = cost.estimates.join("; ");
  return cost;
}
