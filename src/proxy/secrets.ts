/**
 * Credentials a client sends through the proxy. They are forwarded to the
 * upstream and nowhere else: never stored, logged or echoed. Whatever the
 * proxy keeps (error texts, bodies with --keep-bodies, the path) has every
 * credential value of its request cut out first.
 */

/** Request headers that carry credentials (Anthropic, OpenAI, Azure, Gemini, cookies, proxies). */
export const SECRET_HEADERS: ReadonlySet<string> = new Set(["authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "proxy-authorization"]);

/** Query parameters that carry credentials (Gemini's `?key=`). */
const SECRET_PARAMS = ["key", "api_key", "access_token"];

/**
 * The credential values of a request, for {@link redact}: header values
 * (and the token after `Bearer `) and secret query parameters.
 */
export function secretsOf(headers: Headers, url: URL): string[] {
  const out: string[] = [];
  for (const name of SECRET_HEADERS) {
    const value = headers.get(name);
    if (!value) continue;
    out.push(value);
    const token = /^\s*(?:bearer|basic)\s+(.+)$/i.exec(value)?.[1];
    if (token) out.push(token.trim());
  }
  for (const param of SECRET_PARAMS) {
    const value = url.searchParams.get(param);
    if (value) out.push(value);
  }
  // Longest first, so a value containing another is cut whole.
  return out.filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
}

/** `text` with every secret replaced by `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join("[redacted]");
  return out;
}

/** A path with its secret query parameters removed (what the proxy keeps of a URL). */
export function publicPath(url: URL): string {
  const params = new URLSearchParams(url.search);
  for (const param of SECRET_PARAMS) params.delete(param);
  const query = params.toString();
  return query ? `${url.pathname}?${query}` : url.pathname;
}
