/**
 * The HTTP side of `cachet proxy`: forwards each request to its upstream and
 * streams the answer back as it arrives, byte for byte (status, headers and
 * body as the upstream sent them, content encoding included), while a tee of
 * the body goes to the recorder. Faults pass through unchanged; a client
 * that disconnects cancels the upstream request; an upstream that stalls is
 * the client's to time out (the proxy sets no timeout of its own).
 */
import type { Recorder } from "./recorder.ts";
import { resolveProxyRoute, type ProxyRoute, type UpstreamChoice } from "./routes.ts";
import { publicPath, redact, secretsOf } from "./secrets.ts";

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those the HTTP layer recomputes; never forwarded. */
const HOP_HEADERS = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"]);

/** What the handler needs. */
export interface ProxyHandlerOptions {
  choice: UpstreamChoice;
  recorder: Recorder;
  /** The fetch used upstream (tests inject one). */
  fetch?: typeof fetch;
}

/** Builds the request handler for Bun.serve. Never throws. */
export function proxyHandler(options: ProxyHandlerOptions): (request: Request) => Promise<Response> {
  const upstreamFetch = options.fetch ?? fetch;
  return async (request) => {
    const startedAt = Date.now();
    const url = new URL(request.url);
    const route = resolveProxyRoute(url.pathname, url.search, options.choice);
    if (!route) return notServed(request.method, url);
    const requestBytes = request.method === "GET" || request.method === "HEAD" ? new Uint8Array(0) : new Uint8Array(await request.arrayBuffer());
    const abort = new AbortController();
    const onClientGone = () => abort.abort();
    request.signal.addEventListener("abort", onClientGone, { once: true });
    const metered = route.metered && request.method === "POST";
    const capture = (fields: Partial<Parameters<Recorder["capture"]>[0]>) => {
      if (!metered) return;
      const secrets = secretsOf(request.headers, url);
      options.recorder.capture({
        route,
        path: publicPath(url),
        headers: request.headers,
        secrets,
        requestBytes,
        startedAt,
        firstByteAt: null,
        finishedAt: Date.now(),
        httpStatus: null,
        responseHeaders: null,
        responseBytes: null,
        clientAborted: request.signal.aborted,
        transportError: null,
        ...fields,
        ...(fields.transportError ? { transportError: redact(fields.transportError, secrets) } : {}),
      });
    };
    let upstream: Response;
    try {
      upstream = await upstreamFetch(route.upstream, {
        method: request.method,
        headers: forwardedHeaders(request.headers),
        body: requestBytes.length > 0 ? requestBytes : undefined,
        signal: abort.signal,
        redirect: "manual",
        // The client gets the bytes as the upstream encoded them.
        decompress: false,
        // No idle limit of the proxy's own (Bun's default is 5 minutes): a stalled upstream is the client's to time out.
        timeout: false,
      } as RequestInit);
    } catch (error) {
      request.signal.removeEventListener("abort", onClientGone);
      const message = error instanceof Error ? error.message : String(error);
      capture({ transportError: request.signal.aborted ? null : `upstream unreachable: ${message}` });
      return upstreamFailed(route, redact(message, secretsOf(request.headers, url)));
    }
    const headers = responseHeaders(upstream.headers);
    if (!metered || upstream.body === null) {
      if (metered) capture({ httpStatus: upstream.status, responseHeaders: upstream.headers, responseBytes: new Uint8Array(0) });
      request.signal.removeEventListener("abort", onClientGone);
      return new Response(upstream.body, { status: upstream.status, statusText: upstream.statusText, headers });
    }
    const [toClient, toRecorder] = upstream.body.tee();
    void collect(toRecorder).then((collected) => {
      request.signal.removeEventListener("abort", onClientGone);
      capture({
        httpStatus: upstream.status,
        responseHeaders: upstream.headers,
        responseBytes: collected.bytes,
        firstByteAt: collected.firstByteAt,
        transportError: collected.error && !request.signal.aborted ? `response cut: ${collected.error}` : null,
        clientAborted: request.signal.aborted,
      });
    });
    return new Response(toClient, { status: upstream.status, statusText: upstream.statusText, headers });
  };
}

/** Reads the recorder's branch of the body to its end (or its failure). */
async function collect(stream: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; firstByteAt: number | null; error: string | null }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let firstByteAt: number | null = null;
  let error: string | null = null;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      firstByteAt ??= Date.now();
      chunks.push(value);
      size += value.length;
    }
  } catch (cause) {
    error = cause instanceof Error ? cause.message : String(cause);
  }
  if (chunks.length === 1) return { bytes: chunks[0]!, firstByteAt, error };
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return { bytes, firstByteAt, error };
}

function forwardedHeaders(incoming: Headers): Headers {
  const out = new Headers();
  incoming.forEach((value, name) => {
    if (!HOP_HEADERS.has(name)) out.append(name, value);
  });
  return out;
}

function responseHeaders(incoming: Headers): Headers {
  const out = new Headers();
  incoming.forEach((value, name) => {
    if (!HOP_HEADERS.has(name)) out.append(name, value);
  });
  return out;
}

function notServed(method: string, url: URL): Response {
  return Response.json(
    {
      error: {
        type: "not_found_error",
        message: `cachet proxy serves no ${method} ${url.pathname}: use /v1/messages, /v1/chat/completions, /v1/responses, /v1beta/models/MODEL:generateContent, or /PROVIDER/... for a registered provider (or start the proxy with --provider)`,
      },
    },
    { status: 404 },
  );
}

function upstreamFailed(route: ProxyRoute, message: string): Response {
  return Response.json({ error: { type: "api_error", message: `cachet proxy: the upstream of ${route.provider} did not answer: ${message}` } }, { status: 502 });
}
