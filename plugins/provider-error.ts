/**
 * Maps failures of the providers' official SDKs and of the Gemini adapter's
 * own requests (and of the streams they read) to cachet's ProviderError, the
 * one shape the core's retry logic reads.
 * Shared by the built-in provider plugins; it uses only the public plugin API.
 */
import type { PluginServices } from "../src/plugin/index.ts";

/** What the mapping needs to know besides the error itself. */
export interface ErrorContext {
  /** Provider id, named first in the message. */
  provider: string;
  /** The API key in use; every occurrence is removed from messages. */
  apiKey: string | undefined;
  /** The base URL the SDK was given, named (host:port) when the connection cannot be made. */
  baseUrl?: string | undefined;
}

/** HTTP statuses a retry may fix: timeout, conflict, rate limit, server errors, Anthropic's 529 overload. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Milliseconds to wait before a retry, from `retry-after-ms` (milliseconds)
 * or `retry-after` (seconds, or an HTTP date); undefined when neither is usable.
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.round(Number(ms));
  const after = headers.get("retry-after");
  if (after === null || after.trim() === "") return undefined;
  if (Number.isFinite(Number(after))) return Number(after) >= 0 ? Math.round(Number(after) * 1000) : undefined;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Removes the API key from a text (messages may echo request details). */
export function redact(text: string, apiKey: string | undefined): string {
  if (!apiKey || apiKey.length < 4) return text;
  return text.split(apiKey).join("[redacted]");
}

/**
 * Turns anything an SDK threw into a ProviderError:
 * - an error with an HTTP `status` → PROVIDER_HTTP, retryable for
 *   408/409/429/5xx/529, `retryAfterMs` from the response headers;
 * - an error event inside a 200 stream (`overloaded_error`, `api_error`, ...) →
 *   PROVIDER_STREAM, retryable when the provider says it is overloaded or failed;
 * - an abort passes through unchanged (the core aborted on purpose);
 * - a connection failure (reset, refused, closed, cut body, DNS) → PROVIDER_STREAM, retryable;
 *   one that never connected (refused, unknown host, unreachable) names the
 *   host:port of `context.baseUrl` and the socket's error code;
 * - anything else (an error of unknown cause, e.g. a bug in a plugin) →
 *   PROVIDER_STREAM, final: a retry would repeat it and could bill again.
 * The message never contains the API key.
 */
export function toProviderError(services: PluginServices, error: unknown, context: ErrorContext): Error {
  if (error instanceof services.ProviderError) return error;
  if (isAbort(error)) return error as Error;
  const record = (error ?? {}) as { status?: unknown; headers?: unknown; message?: unknown };
  const status = typeof record.status === "number" ? record.status : undefined;
  const text = redact(errorDetail(error), context.apiKey);
  const body = googleErrorBody(text);
  const detail = body ? `${body.status ? `${body.status}: ` : ""}${body.message}` : text;
  if (status !== undefined) {
    const headers = record.headers instanceof Headers ? record.headers : undefined;
    const retryable = isRetryableStatus(status);
    // An error object inside a 200 stream (Gemini's adapter gives it its `code` as status): named as a stream error, as Anthropic's error events are.
    const inStream = body?.inStream === true;
    const message = inStream ? `${context.provider}: error event in stream: ${body!.status ? `${body!.status} (${status})` : String(status)}: ${body!.message}` : `${context.provider}: HTTP ${status}: ${detail}`;
    return new services.ProviderError(inStream ? "PROVIDER_STREAM" : "PROVIDER_HTTP", message, {
      status,
      retryable,
      retryAfterMs: retryable ? (retryAfterMs(headers) ?? retryDelayInBody(text)) : undefined,
      cause: error,
      hint: status === 401 || status === 403 ? "check the API key for this provider" : undefined,
    });
  }
  const streamType = errorType(error);
  const retryable = streamType === undefined ? isConnectionFailure(error) : /overloaded|api_error|server|rate_limit|timeout/i.test(streamType);
  const unconnected = streamType === undefined ? connectCode(error) : undefined;
  const where = context.baseUrl === undefined ? undefined : hostPort(context.baseUrl);
  if (unconnected !== undefined && where !== undefined) {
    // The SDKs' own text for it ("Connection error.") says nothing the code does not: left out.
    const more = /^connection error\.?$/i.test(detail.trim()) ? "" : `: ${detail}`;
    return new services.ProviderError("PROVIDER_STREAM", `${context.provider}: cannot connect to ${where} (${unconnected})${more}`, { retryable, cause: error });
  }
  return new services.ProviderError("PROVIDER_STREAM", `${context.provider}: stream failed: ${detail}`, { retryable, cause: error });
}

/** True for an abort caused by the core's signal. */
export function isAbort(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === "AbortError" || error.name === "APIUserAbortError" || /aborted/i.test(error.name);
}

/**
 * True for a failure of the connection rather than of the request or of code:
 * the SDKs' connection errors, Node/Bun socket error codes, and the messages
 * fetch gives a body cut mid-way. Looks through `cause` chains.
 */
export function isConnectionFailure(error: unknown): boolean {
  for (let e = error as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.name === "string" && /^(APIConnectionError|APIConnectionTimeoutError|FetchError)$/.test(e.name)) return true;
    if (typeof e.code === "string" && CONNECTION_CODES.test(e.code)) return true;
    if (typeof e.message === "string" && CONNECTION_MESSAGES.test(e.message)) return true;
  }
  return false;
}

/** The socket error code of a connection that was never made (refused, unknown host, unreachable), found in `cause` chains. */
function connectCode(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string" && CONNECT_CODES.test(e.code)) return e.code;
  }
  return undefined;
}

/** `host:port` of a base URL, the port filled in from the scheme when the URL leaves it out. */
function hostPort(baseUrl: string): string | undefined {
  try {
    const url = new URL(baseUrl);
    return `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
  } catch {
    return undefined;
  }
}

const CONNECT_CODES = /^(ECONNREFUSED|ConnectionRefused|ENOTFOUND|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH|FailedToOpenSocket)$/;
const CONNECTION_CODES = /^(ECONN\w*|EPIPE|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|UND_ERR\w*|ConnectionRefused|ConnectionClosed|ConnectionReset|FailedToOpenSocket|ERR_STREAM_PREMATURE_CLOSE)$/;
const CONNECTION_MESSAGES = /socket|connection (error|closed|reset|refused)|network|terminated|premature close|other side closed|fetch failed|unable to connect/i;

/** The most useful one-line text of an SDK error: the provider's own message when it sent one. */
function errorDetail(error: unknown): string {
  const body = (error as { error?: unknown })?.error as { error?: { message?: unknown }; message?: unknown } | undefined;
  const nested = body?.error?.message ?? body?.message;
  if (typeof nested === "string" && nested !== "") return nested.split("\n")[0]!;
  // Bun's fetch appends advice about its own debug option, which a cachet user cannot pass.
  if (error instanceof Error && error.message) return error.message.split("\n")[0]!.replace(/\s*For more information, pass `?verbose: true`? in the second argument to fetch\(\)\.?$/, "");
  return String(error);
}

/**
 * The Gemini adapter (plugins/gemini/send.ts, as @google/genai does) writes
 * the provider's error body into the error's message as JSON:
 * `{"error":{"code":429,"message":"…","status":"RESOURCE_EXHAUSTED"}}` for an
 * HTTP error, `got status: UNAVAILABLE. {"error":{…}}` for an error object
 * inside a 200 stream. Its `status` (a google.rpc code name) and `message`,
 * or undefined for any other text.
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting
 */
function googleErrorBody(text: string): { status: string | undefined; message: string; inStream: boolean } | undefined {
  const match = /^(got status: [^.]*\. )?(\{.*\})$/.exec(text);
  if (!match) return undefined;
  try {
    const error = (JSON.parse(match[2]!) as { error?: { status?: unknown; message?: unknown } }).error;
    if (typeof error?.message !== "string") return undefined;
    return { status: typeof error.status === "string" && error.status !== "" ? error.status : undefined, message: error.message.split("\n")[0]!, inStream: match[1] !== undefined };
  } catch {
    return undefined;
  }
}

/** The provider's error type (`overloaded_error`, ...) of an error event, when it sent one. */
function errorType(error: unknown): string | undefined {
  const record = error as { type?: unknown; error?: { type?: unknown; error?: { type?: unknown } } };
  const type = record?.type ?? record?.error?.error?.type ?? record?.error?.type;
  return typeof type === "string" ? type : undefined;
}

/**
 * Gemini sends no retry-after header but a `RetryInfo` detail with
 * `"retryDelay": "30s"` in the error body.
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting
 */
function retryDelayInBody(text: string): number | undefined {
  const match = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(text);
  return match ? Math.round(Number(match[1]) * 1000) : undefined;
}
