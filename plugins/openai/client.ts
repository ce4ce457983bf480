/**
 * The openai SDK client, created on first use so start-up pays nothing for
 * the SDK. Shared by the chat and responses adapters and by the
 * OpenAI-compatible presets.
 */
import type { ProviderConfig } from "../../src/plugin/index.ts";

/** The SDK's client type. */
export type OpenAIClient = import("openai").default;

/**
 * Returns a function that creates the client once. Retries are off (the core
 * decides them); organization and project are pinned to none so environment
 * variables meant for another tool never add headers.
 */
export function openaiClient(config: ProviderConfig): () => Promise<OpenAIClient> {
  let client: OpenAIClient | undefined;
  // Loading starts now, overlapping the core's other start-up work.
  const sdk = import("openai");
  sdk.catch(() => undefined);
  return async () => {
    if (!client) {
      const { default: OpenAI } = await sdk;
      client = new OpenAI({
        // Servers that need no key (the emulator, local servers) still get a syntactically valid header.
        apiKey: config.apiKey ?? "unset",
        baseURL: config.baseUrl,
        fetch: config.fetch,
        maxRetries: 0,
        organization: null,
        project: null,
      });
    }
    return client;
  };
}

/**
 * One client per key, base URL and fetch, shared by the adapters `create`
 * makes: a runtime creates an adapter for every turn, and building the client
 * builds every one of the SDK's resource objects (~0.3 ms before a turn's
 * request, which a resident process, whose runtimes of one environment share
 * one fetch, saves: src/run/resident-fetch.ts).
 * Create it once per plugin, in `setup`. Keeps the last {@link CLIENTS} configurations.
 */
export function openaiClients(): (config: ProviderConfig) => () => Promise<OpenAIClient> {
  const byFetch = new WeakMap<typeof fetch, Map<string, () => Promise<OpenAIClient>>>();
  return (config) => {
    let clients = byFetch.get(config.fetch);
    if (!clients) byFetch.set(config.fetch, (clients = new Map()));
    // The key and base URL are the only fields of the config the client is built from (with the fetch).
    const key = JSON.stringify([config.apiKey ?? null, config.baseUrl]);
    let client = clients.get(key);
    if (client) clients.delete(key);
    else client = openaiClient(config);
    clients.set(key, client);
    if (clients.size > CLIENTS) clients.delete(clients.keys().next().value!);
    return client;
  };
}

/** Configurations a plugin keeps a client for. */
const CLIENTS = 8;
