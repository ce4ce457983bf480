/**
 * The openai SDK client, created on first use so start-up pays nothing for
 * the SDK. Shared by the chat and responses adapters and by the
 * OpenAI-compatible presets.
 */
import type { ProviderConfig } from "../../src/plugin/index.ts";
import { clientsPerConfig } from "../shared/client-cache.ts";

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

/** One OpenAI client per key, base URL and fetch (plugins/shared/client-cache.ts); create it once per plugin, in `setup`. */
export function openaiClients(): (config: ProviderConfig) => () => Promise<OpenAIClient> {
  return clientsPerConfig(openaiClient);
}
