/**
 * Sends an Anthropic Messages request through @anthropic-ai/sdk (loaded on
 * first use) and turns the raw server-sent events into cachet stream events.
 *
 * Streaming usage: `message_start.message.usage` gives the input side and
 * `message_delta.usage` counts are cumulative, so non-null fields overwrite
 * and are never added (CASES.md case 19).
 * @see https://docs.claude.com/en/docs/build-with-claude/streaming
 */
import type { FinishReason, PluginServices, ProviderConfig, SendOptions, StreamEvent, WireRequest } from "../../src/plugin/index.ts";
import { toProviderError } from "../provider-error.ts";
import { clientsPerConfig } from "../shared/client-cache.ts";

type Client = import("@anthropic-ai/sdk").default;

/**
 * Creates the SDK client lazily, once per adapter. The SDK starts loading
 * when the adapter is created, so its import overlaps the core's other
 * start-up work instead of delaying the first request byte.
 */
export function anthropicClient(config: ProviderConfig): () => Promise<Client> {
  let client: Promise<Client> | undefined;
  const sdk = import("@anthropic-ai/sdk");
  sdk.catch(() => undefined);
  // The promise is kept, so callers that overlap get the one client.
  return () =>
    (client ??= sdk.then(
      ({ default: Anthropic }) =>
        new Anthropic({
          // Without a key (the emulator) the SDK would refuse to build a request.
          apiKey: config.apiKey ?? "unset",
          baseURL: config.baseUrl,
          fetch: config.fetch,
          // The core decides retries (it knows whether output was already shown).
          maxRetries: 0,
        }),
    ));
}

/** One SDK client per key, base URL and fetch (plugins/shared/client-cache.ts); create it once per plugin, in `setup`. */
export function anthropicClients(): (config: ProviderConfig) => () => Promise<Client> {
  return clientsPerConfig(anthropicClient);
}

/**
 * Sends `wire` and yields text, thinking, tool_call, provider_block (server
 * tool blocks, server-side compaction blocks) and chatter events, then one finish. @throws ProviderError (PROVIDER_HTTP, PROVIDER_STREAM).
 */
export async function* sendAnthropic(
  getClient: () => Promise<Client>,
  wire: WireRequest,
  options: SendOptions,
  services: PluginServices,
  config: ProviderConfig,
): AsyncGenerator<StreamEvent> {
  const errorContext = { provider: config.providerId, apiKey: config.apiKey, baseUrl: config.baseUrl };
  try {
    const client = await getClient();
    // The SDK's raw request sends the body serialized once, as it is (a stream for a huge input);
    // `messages.create` is this same POST with the SDK's own JSON.stringify.
    const { body, headers } = services.serializeBody(wire.body);
    // Long non-streaming answers are fine here: the core owns timeouts through the signal.
    const request = { body, signal: options.signal, headers: { ...wire.headers, ...headers }, timeout: 24 * 3_600_000 };
    if (wire.body.stream === false) {
      const { data, response } = await client.post<RawMessage>("/v1/messages", { ...request, stream: false }).withResponse();
      yield* messageEvents(data, response.headers.get("request-id") ?? undefined);
      return;
    }
    const response = await client.post("/v1/messages", { ...request, stream: true }).asResponse();
    const { Stream } = await import("@anthropic-ai/sdk/streaming");
    yield* streamEvents(Stream.rawEvents(response), response.headers.get("request-id") ?? undefined, services, config);
  } catch (error) {
    throw toProviderError(services, error, errorContext);
  }
}

interface RawMessage {
  id?: string;
  content?: { type: string; text?: string; thinking?: string; signature?: string; id?: string; name?: string; input?: unknown }[];
  stop_reason?: string | null;
  usage?: Record<string, unknown>;
}

/**
 * True for the blocks of a tool the API ran itself (`server_tool_use`,
 * `web_search_tool_result`, `web_fetch_tool_result`, …): kept and sent back as they came.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 */
function isServerBlock(type: string | undefined): boolean {
  return type === "server_tool_use" || (type !== undefined && type !== "tool_result" && type.endsWith("_tool_result"));
}

function* messageEvents(message: RawMessage, headerId: string | undefined): Generator<StreamEvent> {
  for (const block of message.content ?? []) {
    if (isServerBlock(block.type) || block.type === "compaction") yield { type: "provider_block", protocol: "anthropic-messages", block: block as Record<string, unknown> };
    else if (block.type === "text" && block.text) yield { type: "text", delta: block.text };
    else if (block.type === "thinking") yield { type: "thinking", delta: block.thinking ?? "", signature: block.signature };
    else if (block.type === "tool_use") yield { type: "tool_call", id: block.id ?? "", name: block.name ?? "", arguments: JSON.stringify(block.input ?? {}) };
  }
  yield finish(message.stop_reason ?? undefined, message.usage, message.id ?? headerId);
}

interface OpenBlock {
  type: string;
  id: string;
  name: string;
  /** Tool input JSON text, accumulated exactly as streamed. */
  json: string;
  signature?: string;
  /** A server tool's block as it started (its input arrives as deltas). */
  server?: Record<string, unknown>;
}

async function* streamEvents(
  events: AsyncIterable<{ event: string | null; data: string }>,
  headerId: string | undefined,
  services: PluginServices,
  config: ProviderConfig,
): AsyncGenerator<StreamEvent> {
  const blocks = new Map<number, OpenBlock>();
  let usage: Record<string, unknown> | undefined;
  let id: string | undefined;
  let stopReason: string | undefined;
  let stopped = false;
  for await (const sse of events) {
    if (sse.event === "ping") {
      yield { type: "chatter", detail: "ping" };
      continue;
    }
    if (!sse.data) continue;
    const event = parseEvent(sse.data, services, config);
    if (sse.event === "error" || event.type === "error") {
      const error = (event.error ?? {}) as { type?: string; message?: string };
      const retryable = /overloaded|api_error|rate_limit|timeout/.test(error.type ?? "");
      throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: error event in stream: ${error.type ?? "error"}: ${error.message ?? ""}`.trim(), { retryable });
    }
    switch (event.type) {
      case "message_start": {
        const message = (event.message ?? {}) as RawMessage;
        id = message.id;
        usage = mergeUsage(undefined, message.usage);
        // The input side is billed from here on: reported now, it survives a cut stream (CASES.md case 44).
        if (usage) yield { type: "usage", rawUsage: usage, ...(id !== undefined ? { requestId: id } : {}) };
        break;
      }
      case "content_block_start": {
        const block = (event.content_block ?? {}) as { type?: string; id?: string; name?: string; text?: string; thinking?: string };
        // A compaction block (server-side compaction) is kept like a server tool's: sent back as it came.
        blocks.set(event.index as number, { type: block.type ?? "", id: block.id ?? "", name: block.name ?? "", json: "", ...(isServerBlock(block.type) || block.type === "compaction" ? { server: block } : {}) });
        if (block.type === "text" && block.text) yield { type: "text", delta: block.text };
        // Yielded even when empty: an open thinking block makes the pings that follow count as progress (hidden reasoning).
        if (block.type === "thinking") yield { type: "thinking", delta: block.thinking ?? "" };
        break;
      }
      case "content_block_delta": {
        const delta = (event.delta ?? {}) as { type?: string; text?: string; thinking?: string; partial_json?: string; signature?: string };
        const open = blocks.get(event.index as number);
        if (delta.type === "text_delta") yield { type: "text", delta: delta.text ?? "" };
        else if (delta.type === "thinking_delta") yield { type: "thinking", delta: delta.thinking ?? "" };
        else if (delta.type === "input_json_delta" && open) open.json += delta.partial_json ?? "";
        else if (delta.type === "signature_delta" && open) open.signature = (open.signature ?? "") + (delta.signature ?? "");
        // The summary arrives whole in one delta (with opaque encrypted_content where the API sends it).
        else if (delta.type === "compaction_delta" && open?.server) {
          const { type: _, ...fields } = delta as Record<string, unknown>;
          open.server = { ...open.server, ...fields };
        }
        break;
      }
      case "content_block_stop": {
        const open = blocks.get(event.index as number);
        if (open?.type === "tool_use") yield { type: "tool_call", id: open.id, name: open.name, arguments: open.json === "" ? "{}" : open.json };
        if (open?.server) yield { type: "provider_block", protocol: "anthropic-messages", block: open.json === "" ? open.server : { ...open.server, input: parseInput(open.json, services, config) } };
        if (open?.type === "thinking" && open.signature !== undefined) yield { type: "thinking", delta: "", signature: open.signature };
        blocks.delete(event.index as number);
        break;
      }
      case "message_delta": {
        const delta = (event.delta ?? {}) as { stop_reason?: string | null };
        if (delta.stop_reason) stopReason = delta.stop_reason;
        usage = mergeUsage(usage, event.usage as Record<string, unknown> | undefined);
        if (usage) yield { type: "usage", rawUsage: usage, ...(id !== undefined ? { requestId: id } : {}) };
        break;
      }
      case "message_stop":
        stopped = true;
        break;
    }
  }
  if (!stopped) {
    throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: stream ended before message_stop`, { retryable: true });
  }
  yield finish(stopReason, usage, id ?? headerId);
}

/**
 * Merges a later usage object into the one so far: counts are whole-message
 * totals, so each non-null field overwrites, and nested objects
 * (`cache_creation`) merge the same way.
 */
export function mergeUsage(current: Record<string, unknown> | undefined, next: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!next) return current;
  const out: Record<string, unknown> = { ...(current ?? {}) };
  for (const [key, value] of Object.entries(next)) {
    if (value === null || value === undefined) continue;
    const before = out[key];
    out[key] =
      typeof value === "object" && !Array.isArray(value) && before && typeof before === "object"
        ? mergeUsage(before as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

function parseInput(json: string, services: PluginServices, config: ProviderConfig): unknown {
  try {
    return JSON.parse(json);
  } catch (cause) {
    throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: a server tool's streamed input is not JSON (${json.length} bytes)`, { retryable: true, cause });
  }
}

function parseEvent(data: string, services: PluginServices, config: ProviderConfig): Record<string, unknown> & { type?: string } {
  try {
    return JSON.parse(data) as Record<string, unknown> & { type?: string };
  } catch (cause) {
    throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: unreadable stream event (${data.length} bytes of invalid JSON)`, { retryable: true, cause });
  }
}

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "refusal",
};

function finish(rawReason: string | undefined, rawUsage: unknown, requestId: string | undefined): StreamEvent {
  return { type: "finish", reason: (rawReason && STOP_REASONS[rawReason]) || "other", rawReason, rawUsage, requestId };
}
