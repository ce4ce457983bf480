/**
 * The contract every wire protocol implements: read a request body into
 * neutral content items, and render an answer with its usage as JSON or as
 * SSE events, in the shapes the official SDKs parse.
 */
import type { Route } from "../router.ts";
import type { Answer, CacheOutcome, ContentItem, Prompt, RequestSettings, Ttl } from "../types.ts";
import type { FieldViolation } from "../request-error.ts";

/** What a parser read from a request body. */
export interface ParsedRequest extends RequestSettings {
  items: ContentItem[];
  stream: boolean;
  /** OpenAI `stream_options.include_usage` (and providers that always send usage). */
  includeUsage: boolean;
}

/** Everything a renderer needs for one answered request. */
export interface Exchange {
  /** Random-free id suffix derived from the prompt and time. */
  id: string;
  /** Seconds since epoch (emulated). */
  created: number;
  route: Route;
  request: ParsedRequest;
  prompt: Prompt;
  answer: Answer;
  outcome: CacheOutcome;
  /** The request body as received. */
  body: Record<string, unknown>;
  /** The request headers (scenario headers such as `x-emulator-byok`). */
  headers: Headers;
  /** The emulator's environment (scenario variables such as `CACHET_EMULATOR_BYOK`). */
  env: Record<string, string | undefined>;
  /**
   * Anthropic's server-side compaction, when the request triggered it
   * (server-compaction.ts): the summary, the compaction pass's cache outcome
   * and output tokens; `outcome` is then the answer's pass.
   */
  compaction?: { content: string; outcome: CacheOutcome; outputTokens: number; pause: boolean };
}

/**
 * A rendered stream: SSE-framed events, with the range that carries content,
 * so faults can be placed before, inside or after it.
 */
export interface StreamPlan {
  events: string[];
  /** Index of the first event carrying content. */
  contentStart: number;
  /** Index one past the last event carrying content. */
  contentEnd: number;
}

/** One wire protocol. */
export interface ProtocolHandler {
  /**
   * Reads a request body.
   * @throws EmulatorRequestError 400 on a body the provider would reject.
   */
  parse(body: Record<string, unknown>, route: Route, headers: Headers): ParsedRequest;
  /** Items the answer becomes when the client sends it back next turn. */
  answerItems(answer: Answer): ContentItem[];
  /** The usage object in the route provider's shape. */
  usage(exchange: Exchange): unknown;
  /** Non-streaming response body. */
  json(exchange: Exchange, usage: unknown): unknown;
  /** Streaming response events. */
  stream(exchange: Exchange, usage: unknown): StreamPlan;
  /**
   * The opaque reasoning signatures the answer carries for the client to
   * send back (Gemini 3 `thoughtSignature`), recorded with the request so a
   * test can check they return; none for a protocol without them.
   */
  signatures?(exchange: Exchange): string[];
  /** A keep-alive event. */
  ping: string;
  /** Chatter that is not content (comments, pings). */
  chatter: string[];
  /** An in-stream error event (`overloaded_error`). */
  streamError(message: string): string;
  /** An HTTP error body for status and Anthropic-style error type, with OpenAI's `param` and `code` and Gemini's field violations where the shape has them. */
  errorBody(status: number, type: string, message: string, param?: string | null, code?: string | null, violations?: readonly FieldViolation[]): unknown;
}

/** Frames one SSE event: `event:` line when named, one `data:` line of JSON. */
export function sse(data: unknown, event?: string): string {
  const json = typeof data === "string" ? data : JSON.stringify(data);
  return event === undefined ? `data: ${json}\n\n` : `event: ${event}\ndata: ${json}\n\n`;
}

/** Splits text into deltas of a few words each (at least one delta). */
export function textPieces(text: string): string[] {
  // Trailing whitespace is a word of its own: the deltas joined are the text exactly, as the non-streamed answer carries it.
  const words = text.match(/\s*\S+|\s+$/g) ?? [text];
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += 3) pieces.push(words.slice(i, i + 3).join(""));
  return pieces.length === 0 ? [""] : pieces;
}

/** Splits a string into two halves (for argument deltas). */
export function halves(text: string): string[] {
  if (text.length < 2) return [text];
  const mid = Math.floor(text.length / 2);
  return [text.slice(0, mid), text.slice(mid)];
}

/** Reads a `cache_control` value into a TTL, or undefined when absent. */
export function ttlOf(cacheControl: unknown): Ttl | undefined {
  if (cacheControl === undefined || cacheControl === null || typeof cacheControl !== "object") return undefined;
  return (cacheControl as { ttl?: unknown }).ttl === "1h" ? "1h" : "5m";
}

/** A fixed token count for images and files: the emulator does not decode them. */
export const MEDIA_TOKENS = 1_600;

/** Text of a string or of a list of text parts. */
export function plainText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : JSON.stringify(part))).join("\n");
  return content === undefined || content === null ? "" : JSON.stringify(content);
}
