/**
 * Sends a Gemini request through @google/genai (loaded on first use) and
 * turns response chunks into cachet stream events. Each streamed chunk may
 * carry `usageMetadata` with running totals: the last one wins.
 * @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 */
import type { FinishReason, PluginServices, ProviderConfig, SendOptions, StreamEvent, WireRequest } from "../../src/plugin/index.ts";
import { toProviderError } from "../provider-error.ts";

type Client = import("@google/genai/web").GoogleGenAI;

/** Body keys that the SDK takes as request config; any other key travels as `extraBody`. */
const CONFIG_KEYS = ["systemInstruction", "tools", "toolConfig", "safetySettings", "cachedContent", "labels"] as const;

/** The client and the headers of its latest response (the SDK's errors drop them). */
export interface GeminiClient {
  client: () => Promise<Client>;
  lastHeaders: () => Headers | undefined;
}

/** Creates the SDK client lazily; its fetch records response headers for retry-after. */
export function geminiClient(config: ProviderConfig): GeminiClient {
  let client: Client | undefined;
  let headers: Headers | undefined;
  // Loading starts now, overlapping the core's other start-up work.
  // The web build: API-key auth over fetch, without google-auth-library (a third of the SDK's size).
  const sdk = import("@google/genai/web");
  sdk.catch(() => undefined);
  const recordingFetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const response = await config.fetch(input, init);
    headers = response.headers;
    return response;
  }) as typeof fetch;
  return {
    lastHeaders: () => headers,
    client: async () => {
      if (!client) {
        const { GoogleGenAI } = await sdk;
        // No retryOptions: the SDK then makes exactly one attempt (the core decides retries).
        client = new GoogleGenAI({ apiKey: config.apiKey ?? "unset", httpOptions: { baseUrl: config.baseUrl, fetch: recordingFetch } });
      }
      return client;
    },
  };
}

/**
 * Sends `wire` and yields events, then one finish.
 * @throws ProviderError (PROVIDER_HTTP with retryAfterMs from headers or the
 *   error's `retryDelay`; PROVIDER_STREAM when the stream ends without a finishReason).
 */
export async function* sendGemini(gemini: GeminiClient, wire: WireRequest, options: SendOptions, services: PluginServices, config: ProviderConfig): AsyncGenerator<StreamEvent> {
  try {
    const client = await gemini.client();
    const params = toParameters(wire, options.signal);
    if (wire.body.stream === false) {
      const response = (await client.models.generateContent(params)) as unknown as RawResponse;
      const state = newState();
      yield* chunkEvents(response, state);
      yield finish(state);
      return;
    }
    const stream = await client.models.generateContentStream(params);
    const state = newState();
    for await (const chunk of stream as AsyncIterable<unknown>) yield* chunkEvents(chunk as RawResponse, state);
    if (state.finishReason === undefined) {
      throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: stream ended before a finishReason`, { retryable: true });
    }
    yield finish(state);
  } catch (error) {
    throw toProviderError(services, error, { provider: config.providerId, apiKey: config.apiKey, baseUrl: config.baseUrl, headers: gemini.lastHeaders() });
  }
}

/** The SDK's parameters from the wire body: `model` and `stream` name the endpoint; the rest is the request. */
function toParameters(wire: WireRequest, signal: AbortSignal): Parameters<Client["models"]["generateContent"]>[0] {
  const { model, stream: _stream, contents, generationConfig, ...rest } = wire.body as Record<string, unknown>;
  const config: Record<string, unknown> = { ...((generationConfig as Record<string, unknown>) ?? {}) };
  for (const key of CONFIG_KEYS) {
    if (rest[key] !== undefined) config[key] = rest[key];
    delete rest[key];
  }
  const httpOptions: Record<string, unknown> = { headers: wire.headers };
  if (Object.keys(rest).length > 0) httpOptions.extraBody = rest;
  config.httpOptions = httpOptions;
  config.abortSignal = signal;
  return { model: String(model), contents, config } as unknown as Parameters<Client["models"]["generateContent"]>[0];
}

interface RawPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
  inlineData?: { mimeType?: string; data?: string };
}

interface RawResponse {
  responseId?: string;
  candidates?: { content?: { parts?: RawPart[] }; finishReason?: string }[];
  usageMetadata?: unknown;
}

interface State {
  finishReason: string | undefined;
  usage: unknown;
  responseId: string | undefined;
  calls: number;
}

function newState(): State {
  return { finishReason: undefined, usage: undefined, responseId: undefined, calls: 0 };
}

function* chunkEvents(chunk: RawResponse, state: State): Generator<StreamEvent> {
  state.responseId ??= chunk.responseId;
  if (chunk.usageMetadata) state.usage = chunk.usageMetadata;
  const candidate = chunk.candidates?.[0];
  for (const part of candidate?.content?.parts ?? []) {
    if (part.functionCall) {
      // A tool call's signature travels as a text-less thinking block just before it.
      if (part.thoughtSignature) yield { type: "thinking", delta: "", signature: part.thoughtSignature };
      const id = part.functionCall.id ?? `call_${state.responseId ?? "gemini"}_${state.calls}`;
      state.calls += 1;
      yield { type: "tool_call", id, name: part.functionCall.name ?? "", arguments: JSON.stringify(part.functionCall.args ?? {}) };
    } else if (part.inlineData?.data !== undefined) {
      // An image the model generated (image-output models).
      // @see https://ai.google.dev/gemini-api/docs/image-generation
      yield { type: "image", mediaType: part.inlineData.mimeType ?? "application/octet-stream", data: part.inlineData.data };
    } else if (part.thought) {
      yield { type: "thinking", delta: part.text ?? "", signature: part.thoughtSignature };
    } else if (part.text) {
      yield { type: "text", delta: part.text };
    }
  }
  if (candidate?.finishReason) state.finishReason = candidate.finishReason;
}

const FINISH_REASONS: Record<string, FinishReason> = {
  STOP: "stop",
  MAX_TOKENS: "length",
  SAFETY: "content_filter",
  RECITATION: "content_filter",
  BLOCKLIST: "content_filter",
  PROHIBITED_CONTENT: "content_filter",
  SPII: "content_filter",
  IMAGE_SAFETY: "content_filter",
  MALFORMED_FUNCTION_CALL: "error",
};

function finish(state: State): StreamEvent {
  const raw = state.finishReason;
  let reason: FinishReason = (raw && FINISH_REASONS[raw]) || "other";
  if (reason === "stop" && state.calls > 0) reason = "tool_calls";
  return { type: "finish", reason, rawReason: raw, rawUsage: state.usage, requestId: state.responseId };
}
