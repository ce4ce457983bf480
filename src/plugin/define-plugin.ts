/**
 * The shape of a plugin and the API object its `setup` receives.
 */
import type { CacheStrategySpec } from "./cache-strategy.ts";
import type { HookName, HookRegistration } from "./hooks.ts";
import type { ProviderAdapter, ProviderConfig, ProviderSpec } from "./provider.ts";
import type { PluginServices } from "./services.ts";

/**
 * The plugin API version this build of cachet serves (semver). It is also
 * the version of the published API package (`cachet-plugin-api`): minor
 * versions only add optional fields and hooks, so a plugin built for `^1.0`
 * keeps loading in every 1.x host.
 */
export const API_VERSION = "1.4.0";

/** A logger that prefixes each line with the plugin's name; writes to stderr. */
export interface PluginLogger {
  info(message: string): void;
  warn(message: string): void;
  debug(message: string): void;
}

/**
 * What `setup(api)` receives. Every `register` method returns a function that
 * unregisters what it registered.
 */
export interface PluginApi {
  /** The major API version of the running cachet (1). */
  readonly version: number;
  /** The full API version the running cachet serves, e.g. `1.1.0` (since 1.1). */
  readonly apiVersion?: string;
  /** Registers a provider adapter. @throws CachetError PLUGIN_LOAD if the id is taken. */
  provider(spec: ProviderSpec): () => void;
  /** Registers a cache strategy. @throws CachetError PLUGIN_LOAD if the id is taken. */
  cacheStrategy(spec: CacheStrategySpec): () => void;
  /** Registers a lifecycle hook handler. */
  hook<K extends HookName>(name: K, registration: HookRegistration<K>): () => void;
  /**
   * Creates an adapter of another registered provider, so a plugin can wrap
   * one (e.g. reuse the `openai-compatible` protocol code with its own usage
   * mapping). @throws CachetError UNKNOWN_PROVIDER.
   */
  adapter(providerId: string, config: ProviderConfig): ProviderAdapter;
  /** Helpers shared with the built-in plugins (canonical JSON, errors, SSE reading). */
  readonly services: PluginServices;
  /** This plugin's logger. */
  readonly log: PluginLogger;
}

/** A plugin: the default export of a plugin module. */
export interface Plugin {
  /** Unique name; npm package name for published plugins. */
  name: string;
  /**
   * The API versions it was built for: a semver range (`"^1"`, `"^1.1"`) or
   * a bare major number (`1`, read as `^1`). The host refuses to load a
   * plugin whose range does not include {@link API_VERSION}.
   */
  api: string | number;
  /** Registers providers, strategies and hooks. May be async. */
  setup(api: PluginApi): void | Promise<void>;
}

/**
 * Declares a plugin. An identity function that gives plugin authors types;
 * a bundled third-party plugin may inline it.
 *
 * @example
 * export default definePlugin({ name: "acme", api: "^1", setup(api) { api.provider({...}) } })
 */
export function definePlugin(plugin: Plugin): Plugin {
  return plugin;
}
