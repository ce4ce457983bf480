/**
 * Sends a Gemini request over the REST API with the runtime's fetch and
 * turns response chunks into cachet stream events. The body is the rendered
 * one, serialized once (`services.serializeBody`) without `model` and
 * `stream`, which name the endpoint: @google/genai has no public way to send
 * a prepared body, and its conversion of structured parameters walks every
 * part of the history on every request. Each streamed chunk may carry
 * `usageMetadata` with running totals: the last one wins, and those of the
 * chunks before it are yielded as `usage` events, so a cut stream keeps them
 * (providers.md §4: "chunks carry usageMetadata; treat as cumulative and keep
 * the last").
 * @see https://ai.google.dev/api/generate-content
 * @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 */
import type { FinishReason, PluginServices, ProviderConfig, SendOptions, StreamEvent, WireRequest } from "../../src/plugin/index.ts";
import { toProviderError } from "../provider-error.ts";
import { sseData } from "./sse.ts";

/** The API version of the endpoints (the one @google/genai uses for the Gemini API). */
const API_VERSION = "v1beta";

/**
 * An HTTP error or an error object inside a 200 stream, in the shape
 * plugins/provider-error.ts reads: `status` (the HTTP status, or the
 * object's `code`), the response headers (retry-after), and the error body
 * as JSON text, after `got status: STATUS. ` for an error inside a stream.
 */
class GeminiError extends Error {
  constructor(message: string, readonly status: number, readonly headers: Headers) {
    super(message);
    this.name = "GeminiError";
  }
}

/**
 * The URL of `model`'s `generateContent`, or `streamGenerateContent` as
 * server-sent events: `{base}/v1beta/models/{model}:…`; a model already
 * named `models/…` or `tunedModels/…` keeps its name.
 */
function geminiUrl(baseUrl: string, model: string, stream: boolean): string {
  const base = baseUrl.endsWith("/") ? baseUrl.slice(0, -1) : baseUrl;
  const name = model.startsWith("models/") || model.startsWith("tunedModels/") ? model : `models/${model}`;
  return `${base}/${API_VERSION}/${name}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`;
}

/**
 * Sends `wire` and yields events, then one finish.
 * @throws ProviderError (PROVIDER_HTTP with retryAfterMs from headers or the
 *   error's `retryDelay`; PROVIDER_STREAM for an error object inside the
 *   stream, an unreadable chunk, or a stream that ends without a finishReason).
 */
export async function* sendGemini(wire: WireRequest, options: SendOptions, services: PluginServices, config: ProviderConfig): AsyncGenerator<StreamEvent> {
  try {
    const { model, stream: _stream, ...request } = wire.body;
    const streaming = wire.body.stream !== false;
    const { body, headers } = services.serializeBody(request);
    const response = await config.fetch(geminiUrl(config.baseUrl, String(model), streaming), {
      method: "POST",
      headers: { ...(config.apiKey === undefined ? {} : { "x-goog-api-key": config.apiKey }), ...wire.headers, ...headers },
      body,
      signal: options.signal,
      // A stream body is sent as it is read.
      ...(typeof body === "string" ? {} : { duplex: "half" }),
    });
    if (!response.ok) throw await httpError(response);
    const state = newState();
    if (!streaming) {
      yield* chunkEvents(parseChunk(await response.text(), services, config), state);
      yield finish(state);
      return;
    }
    if (!response.body) throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: the response has no body`, { retryable: true });
    for await (const data of sseData(response.body)) {
      const chunk = parseChunk(data, services, config);
      if (typeof chunk.error === "object" && chunk.error !== null) throw streamError(chunk, response.headers);
      // A chunk before the last carries the running totals so far (the prompt's count from the first one on):
      // reported now, they survive a cut stream as its lower bound (CASES.md case 44). The last one's go with the finish.
      const usage = chunk.candidates?.[0]?.finishReason === undefined ? chunk.usageMetadata : undefined;
      if (usage) {
        const requestId = state.responseId ?? chunk.responseId;
        yield { type: "usage", rawUsage: usage, ...(requestId !== undefined ? { requestId } : {}) };
      }
      yield* chunkEvents(chunk, state);
    }
    if (state.finishReason === undefined) {
      throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: stream ended before a finishReason`, { retryable: true });
    }
    yield finish(state);
  } catch (error) {
    throw toProviderError(services, error, { provider: config.providerId, apiKey: config.apiKey, baseUrl: config.baseUrl });
  }
}

/** The error of a non-2xx response; a body that is not JSON becomes the message of one (as Google's error bodies read). */
async function httpError(response: Response): Promise<GeminiError> {
  const text = await response.text();
  let body: unknown;
  if (response.headers.get("content-type")?.includes("application/json")) {
    try {
      body = JSON.parse(text);
    } catch {
      // Named below as the text it is.
    }
  }
  body ??= { error: { message: text, code: response.status, status: response.statusText } };
  return new GeminiError(JSON.stringify(body), response.status, response.headers);
}

/** An error object inside a 200 stream: its `code` stands for the status. */
function streamError(chunk: RawResponse, headers: Headers): GeminiError | Error {
  const { code, status } = chunk.error ?? {};
  const message = `got status: ${status}. ${JSON.stringify(chunk)}`;
  return typeof code === "number" && code >= 400 && code < 600 ? new GeminiError(message, code, headers) : new Error(message);
}

/** A response (or a streamed chunk of one) from its JSON text. */
function parseChunk(data: string, services: PluginServices, config: ProviderConfig): RawResponse {
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch (cause) {
    throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: unreadable response chunk (${data.length} characters of invalid JSON)`, { retryable: true, cause });
  }
  if (typeof chunk !== "object" || chunk === null || Array.isArray(chunk)) {
    throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: a response chunk is not a JSON object`, { retryable: true });
  }
  return chunk as RawResponse;
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
  error?: { code?: unknown; status?: unknown };
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
      // The signature stays on the call it came on: Gemini 3 checks it there on replay.
      const id = part.functionCall.id ?? `call_${state.responseId ?? "gemini"}_${state.calls}`;
      state.calls += 1;
      const call = { type: "tool_call", id, name: part.functionCall.name ?? "", arguments: JSON.stringify(part.functionCall.args ?? {}) } as const;
      yield part.thoughtSignature ? { ...call, signature: part.thoughtSignature } : call;
    } else if (part.inlineData?.data !== undefined) {
      // An image the model generated (image-output models).
      // @see https://ai.google.dev/gemini-api/docs/image-generation
      yield { type: "image", mediaType: part.inlineData.mimeType ?? "application/octet-stream", data: part.inlineData.data };
    } else if (part.thought) {
      yield { type: "thinking", delta: part.text ?? "", signature: part.thoughtSignature };
    } else if (part.text || part.thoughtSignature) {
      // Gemini 3 signs an answer's text part; streamed, the signature often comes alone on a last part
      // with empty or no text. Either way it travels with the text, to be replayed on that part.
      // @see https://ai.google.dev/gemini-api/docs/thought-signatures
      yield part.thoughtSignature ? { type: "text", delta: part.text ?? "", signature: part.thoughtSignature } : { type: "text", delta: part.text! };
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
