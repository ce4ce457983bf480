/**
 * One SDK client per key, base URL and fetch, for a provider plugin's
 * adapters: a runtime creates an adapter for every turn, and building an SDK
 * client builds every one of the SDK's resource objects (~0.3 ms before a
 * turn's request). A resident process, whose runtimes of one environment
 * share one fetch (src/run/resident-fetch.ts), so reuses a client across
 * turns; a command in its own process builds one, as before.
 */
import type { ProviderConfig } from "../../src/plugin/index.ts";

/** Configurations a plugin keeps a client for, per fetch (the least recently used goes first). */
const CLIENTS = 8;

/**
 * Returns the plugin's client cache: given a config, the getter of the client
 * `make` builds for its key, base URL and fetch (the only fields of the config
 * a client is built from). Create it once per plugin, in `setup`.
 * @param make builds a client's getter from a config (the SDK is imported lazily inside it)
 */
export function clientsPerConfig<C>(make: (config: ProviderConfig) => () => Promise<C>): (config: ProviderConfig) => () => Promise<C> {
  const byFetch = new WeakMap<typeof fetch, Map<string, () => Promise<C>>>();
  return (config) => {
    let clients = byFetch.get(config.fetch);
    if (!clients) byFetch.set(config.fetch, (clients = new Map()));
    const key = JSON.stringify([config.apiKey ?? null, config.baseUrl]);
    let client = clients.get(key);
    if (client) clients.delete(key);
    else client = make(config);
    clients.set(key, client);
    if (clients.size > CLIENTS) clients.delete(clients.keys().next().value!);
    return client;
  };
}
