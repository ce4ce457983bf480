/**
 * Turns `provider/model` into a created adapter: the registered provider, its
 * API key (environment, then config), its base URL (flag, config, emulator,
 * or the provider's default).
 */
import type { Config } from "../config.ts";
import { CachetError } from "../errors.ts";
import type { PluginHost } from "../plugin/host.ts";
import type { HostAdapter } from "../plugin/guard.ts";
import type { ProviderSpec } from "../plugin/provider.ts";

/** The model used when neither flag, session nor config names one (README.md quotes it; hints give it as the example). */
export const DEFAULT_MODEL = "anthropic/claude-sonnet-4-6";

/** A model reference split into its parts. */
export interface ModelRef {
  provider: string;
  /** The provider's model id (may itself contain `/`, e.g. OpenRouter's `anthropic/claude-sonnet-4.5`). */
  model: string;
}

/**
 * Splits `provider/model`.
 * @throws CachetError BAD_FLAG when there is no `/`.
 */
export function parseModelRef(ref: string): ModelRef {
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) {
    throw new CachetError("BAD_FLAG", `model "${ref}" is not of the form provider/model`, {
      hint: `e.g. -m ${DEFAULT_MODEL}; \`cachet models\` lists them`,
    });
  }
  return { provider: ref.slice(0, slash), model: ref.slice(slash + 1) };
}

/** Inputs of {@link resolveProvider}. */
export interface ResolveOptions {
  host: PluginHost;
  config: Config;
  ref: ModelRef;
  /** `--base-url`. */
  baseUrl?: string;
  /** Root URL of a running emulator when `--emulate`. */
  emulatorUrl?: string;
  /** `-o key=value` options, merged over the config's provider options. */
  options: Record<string, unknown>;
  env?: Record<string, string | undefined>;
  fetch?: typeof fetch;
}

/** A ready adapter with what was resolved for it. */
export interface ResolvedProvider {
  spec: ProviderSpec;
  /** Guarded by the plugin host: its calls name the plugin when they fail. */
  adapter: HostAdapter;
  baseUrl: string;
  /** Provider options after merging config and flags. */
  options: Record<string, unknown>;
  /** `incremental = true` in the provider's config: requests that only append may be sent in the adapter's incremental form. */
  incremental: boolean;
}

/**
 * The base URL requests to `o.ref`'s provider go to: the emulator's route when
 * emulating, else `--base-url`, the config's `base_url`, the provider's default.
 * @throws CachetError UNKNOWN_PROVIDER
 */
export function providerBaseUrl(o: Pick<ResolveOptions, "host" | "config" | "ref" | "baseUrl" | "emulatorUrl">): string {
  const spec = o.host.provider(o.ref.provider);
  return o.emulatorUrl ? `${o.emulatorUrl}${spec.emulatorPath}` : (o.baseUrl ?? o.config.providers?.[spec.id]?.base_url ?? spec.defaultBaseUrl);
}

/**
 * Resolves and creates the adapter.
 * @throws CachetError UNKNOWN_PROVIDER; MISSING_API_KEY naming the variable
 *   (suggesting `--emulate`) when no key is set and neither the emulator nor a
 *   custom base URL is used.
 */
export function resolveProvider(o: ResolveOptions): ResolvedProvider {
  const env = o.env ?? process.env;
  const spec = o.host.provider(o.ref.provider);
  const providerConfig = o.config.providers?.[spec.id];
  const baseUrl = providerBaseUrl(o);
  let apiKey = spec.env.map((name) => env[name]).find((value) => value !== undefined && value !== "") ?? providerConfig?.api_key;
  // A key that cannot occur in a message: error texts are redacted by the key's value.
  if (o.emulatorUrl) apiKey ??= "cachet-emulator-no-key";
  if (apiKey === undefined && !o.baseUrl && spec.env.length > 0) {
    throw new CachetError("MISSING_API_KEY", `no API key for ${spec.id}: set ${spec.env.join(" or ")}`, {
      hint: "or add api_key under [providers." + spec.id + "] in config.toml, or try it for free with --emulate",
    });
  }
  const options = { ...(providerConfig?.options ?? {}), ...o.options };
  const adapter = o.host.createAdapter(spec.id, {
    providerId: spec.id,
    apiKey,
    baseUrl,
    fetch: o.fetch ?? fetch,
    options,
  });
  return { spec, adapter, baseUrl, options, incremental: providerConfig?.incremental === true };
}
