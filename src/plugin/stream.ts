/**
 * Events a provider adapter yields while a response streams (or once, for a
 * non-streaming request). The core assembles the assistant message from them.
 */

/** Why the model stopped, normalized. `other` keeps the raw reason beside it. */
export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "refusal" | "error" | "other";

/** A piece of answer text. */
export interface TextEvent {
  type: "text";
  delta: string;
  /**
   * The provider's opaque signature on this piece's part (since API 1.4):
   * Gemini 3 puts a `thoughtSignature` on a text part of a non-function-call
   * answer (its last one), and when streaming often sends it on a final part
   * with empty or no text, which comes here as an empty `delta` with the
   * signature. The core stores it on the answer's text block it belongs to
   * (an empty delta's: the last text block, never a new empty one) and the
   * adapter replays it on that text part next turn, as it came.
   * @see https://ai.google.dev/gemini-api/docs/thought-signatures
   */
  signature?: string;
}

/** A piece of reasoning text (and, at its end, its signature). */
export interface ThinkingEvent {
  type: "thinking";
  delta: string;
  signature?: string;
}

/** A complete tool call; `arguments` is the exact JSON text the model produced. */
export interface ToolCallEvent {
  type: "tool_call";
  id: string;
  name: string;
  arguments: string;
  /**
   * The provider's signature sent on the call itself (Gemini `thoughtSignature`
   * on a `functionCall` part); opaque, replayed on the same call.
   * @see https://ai.google.dev/gemini-api/docs/thought-signatures
   */
  signature?: string;
}

/**
 * Content-free activity (keep-alive ping, error chatter). It proves the
 * connection is up but does not reset the idle timer: only content does.
 */
export interface ChatterEvent {
  type: "chatter";
  detail: string;
}

/**
 * The last event: why the model stopped and the final raw usage, merged over
 * the stream by the provider's rules (e.g. Anthropic: cumulative, last
 * non-null field wins). `rawUsage` is undefined when the provider sent none.
 */
export interface FinishEvent {
  type: "finish";
  reason: FinishReason;
  rawReason?: string;
  rawUsage: unknown;
  /** The provider's request or response id, when it sent one. */
  requestId?: string;
  /**
   * The service tier the response says it was served at, when the provider
   * reports it outside the usage object (OpenAI `service_tier`). The core
   * puts it on the usage report; it decides the price multiplier.
   * @see https://platform.openai.com/docs/api-reference/chat/object
   */
  serviceTier?: string;
}

/**
 * The usage the provider has reported so far, before the end (Anthropic's
 * `message_start` and `message_delta` usage; cumulative, the last one holds).
 * Not content: it does not count as progress. The `finish` event's
 * `rawUsage` supersedes it; when the stream is cut, cachet keeps it and
 * prices it as a flagged lower bound (CASES.md case 44).
 */
export interface UsageEvent {
  type: "usage";
  rawUsage: unknown;
  /** The provider's request or response id, when known already (kept on the row of a cut stream). */
  requestId?: string;
}

/** An image the model output (Gemini image models: an `inlineData` part). Content. */
export interface ImageEvent {
  type: "image";
  /** IANA media type, e.g. `image/png`. */
  mediaType: string;
  /** Base64 data, no `data:` prefix. */
  data: string;
}

/**
 * A complete block the provider produced that the core keeps opaque and the
 * adapter sends back as it came (Anthropic `server_tool_use` and
 * `web_search_tool_result`): stored as a `provider` block. Content.
 */
export interface ProviderBlockEvent {
  type: "provider_block";
  /** The wire protocol of the block (`anthropic-messages`). */
  protocol: string;
  block: Record<string, unknown>;
}

/** One streamed event. */
export type StreamEvent = TextEvent | ThinkingEvent | ToolCallEvent | ImageEvent | ProviderBlockEvent | ChatterEvent | UsageEvent | FinishEvent;
