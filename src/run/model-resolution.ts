/**
 * One model resolution for every command: `run`, `price`, `cost`, `stats`,
 * `models` and `schema check` accept exactly the `provider/model` ids and
 * provider ids that the loaded plugins register (built-in and third-party),
 * price them under the provider's catalog id, and read their usage with the
 * provider's own `usage()`.
 */
import type { Config } from "../config.ts";
import type { PluginHost } from "../plugin/host.ts";
import type { ProviderSpec } from "../plugin/provider.ts";
import type { UsageReport } from "../plugin/usage.ts";
import type { Protocol } from "../plugin/wire.ts";
import type { SchemaTarget } from "../schema/contract.ts";
import { extrasOf, type PriceExtras } from "../meter/pricing.ts";
import type { LedgerRow } from "../session/types.ts";
import { parseModelRef } from "./resolve-provider.ts";

/** A model reference resolved as `run -m` resolves it. */
export interface ResolvedModel {
  /** `provider/model` as given. */
  ref: string;
  spec: ProviderSpec;
  /** The provider's model id (may contain `/`). */
  model: string;
  /** `catalogId/model`: where the price catalog lists the model. */
  catalogRef: string;
  /** The provider's own usage mapping; a failing plugin mapping gives unknown usage and a warning naming the plugin. */
  usage(raw: unknown): { report: UsageReport; warning?: string };
}

/** The plugins loaded as `run` loads them (built-in, config, `CACHET_PLUGINS`). */
export async function loadModelHost(config: Config, env: Record<string, string | undefined> = process.env): Promise<PluginHost> {
  const { loadPlugins } = await import("../plugin/loader.ts");
  return loadPlugins({ config, env });
}

/**
 * Resolves `provider/model`.
 * @throws CachetError BAD_FLAG when there is no `/`; UNKNOWN_PROVIDER when no plugin registers the provider.
 */
export function resolveModel(host: PluginHost, ref: string): ResolvedModel {
  const { provider, model } = parseModelRef(ref);
  const spec = host.provider(provider);
  return {
    ref,
    spec,
    model,
    catalogRef: catalogRefOf(spec, model),
    usage: (raw) => offlineAdapter(host, spec).usageOrUnknown(raw),
  };
}

/** The catalog provider id of a provider spec (`catalogId`, else its id). */
export function catalogIdOf(spec: ProviderSpec): string {
  return spec.catalogId ?? spec.id;
}

/**
 * `catalogId/model`: the id prices and limits are looked up under (a
 * provider with no catalog of its own may name a catalog model in `model`:
 * src/meter/catalog.ts `findModel`).
 */
export function catalogRefOf(spec: ProviderSpec, model: string): string {
  return `${catalogIdOf(spec)}/${model}`;
}

/**
 * `provider/model` of a stored row as the catalog lists it: the provider's
 * catalog id when a plugin registers the provider, else the id as stored.
 */
export function catalogRefFor(host: PluginHost): (provider: string, model: string) => string {
  return (provider, model) => (host.providers.has(provider) ? catalogRefOf(host.provider(provider), model) : `${provider}/${model}`);
}

/**
 * What a stored row's raw usage says beside its counts (server-tool calls,
 * modalities, a router's fee; the served tier, else the row's own; the
 * cut-stream flag), read by its provider's
 * own mapping; nothing for a provider no plugin registers any more. One
 * offline adapter per provider/model.
 */
export function rowExtrasFor(host: PluginHost): (row: LedgerRow) => PriceExtras {
  const readers = new Map<string, ResolvedModel["usage"]>();
  return (row) => {
    const partial = row.usageLowerBound === true;
    if (!host.providers.has(row.provider) || row.rawUsage === null || row.rawUsage === undefined) return { partial };
    const key = `${row.provider}/${row.model}`;
    let read = readers.get(key);
    if (!read) readers.set(key, (read = resolveModel(host, key).usage));
    const extras = extrasOf(read(row.rawUsage).report);
    return { ...extras, serviceTier: extras.serviceTier ?? row.serviceTier, partial };
  };
}

/**
 * The structured-output contract of a provider's protocol (the one
 * `run --schema` checks against).
 */
export function schemaTargetOfProtocol(protocol: Protocol): SchemaTarget {
  return protocol === "anthropic-messages" ? "anthropic" : protocol === "gemini" ? "gemini" : "openai";
}

/** An adapter created only to read usage: no key, and a fetch that refuses (it never sends). */
function offlineAdapter(host: PluginHost, spec: ProviderSpec) {
  const refuse: typeof fetch = Object.assign(async () => {
    throw new Error("offline: this adapter only maps usage");
  }, { preconnect: () => {} }) as typeof fetch;
  return host.createAdapter(spec.id, { providerId: spec.id, apiKey: undefined, baseUrl: spec.defaultBaseUrl || "http://127.0.0.1:9", fetch: refuse, options: {} });
}
