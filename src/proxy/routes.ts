/**
 * Where `cachet proxy` sends a request: the provider it is for, the protocol
 * its body speaks, and the upstream URL.
 *
 * Paths are the services' own (`/v1/messages`, `/v1/chat/completions`,
 * `/v1/responses`, `/v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent`), so a client's base URL is just the proxy's root
 * (plus `/v1` for OpenAI's SDK). A first path segment naming a registered
 * provider (`/deepseek/chat/completions`, `/openrouter/api/v1/...`) stands for
 * that provider's base URL: the rest of the path is appended to it.
 */
import type { ProviderSpec } from "../plugin/provider.ts";
import type { Protocol } from "../plugin/wire.ts";

/** What a request path resolved to. */
export interface ProxyRoute {
  /** Registered provider id whose usage mapping, prices and cache rules apply. */
  provider: string;
  protocol: Protocol;
  /** `count_tokens` and unknown endpoints are forwarded but not metered. */
  metered: boolean;
  /** True when the endpoint itself streams (Gemini `streamGenerateContent`). */
  streamingEndpoint: boolean;
  /** Model id taken from the path (Gemini), else undefined. */
  model: string | undefined;
  /** Upstream URL, query string included. */
  upstream: string;
}

/** How base URLs are chosen. */
export interface UpstreamChoice {
  /** Registered providers by id. */
  providers: ReadonlyMap<string, ProviderSpec>;
  /** `--provider`: serves the unprefixed paths of its protocol. */
  provider?: string;
  /** `--upstream`: base URL of `--provider` (or of every provider when none is named). */
  upstream?: string;
  /** Root URL of the in-process emulator (`--emulate`): each provider is served under its emulatorPath. */
  emulatorUrl?: string;
  /** `base_url` per provider from the config. */
  configured?: Readonly<Record<string, string | undefined>>;
}

/** The protocols' own providers, serving the unprefixed paths. */
const PROTOCOL_PROVIDER: Record<Protocol, string> = {
  "anthropic-messages": "anthropic",
  "openai-chat": "openai",
  "openai-responses": "openai-responses",
  gemini: "google",
};

/**
 * Resolves a request path (and query string) to a route, or undefined when no
 * provider can serve it (an unprefixed path of no known protocol without
 * `--provider`, or a provider without a base URL).
 */
export function resolveProxyRoute(pathname: string, search: string, choice: UpstreamChoice): ProxyRoute | undefined {
  const segments = pathname.split("/").filter((s) => s.length > 0);
  const prefixed = segments[0] !== undefined && choice.providers.has(segments[0]) ? segments.shift()! : undefined;
  const endpoint = endpointOf(segments);
  let provider = prefixed ?? (endpoint && PROTOCOL_PROVIDER[endpoint.protocol]) ?? choice.provider;
  if (!prefixed && endpoint && choice.provider && choice.providers.get(choice.provider)?.protocol === endpoint.protocol) provider = choice.provider;
  // OpenAI's Responses API shares OpenAI's base URL: /openai/v1/responses is the openai-responses provider.
  if (provider && endpoint && choice.providers.get(provider)?.protocol !== endpoint.protocol) provider = sibling(provider, endpoint.protocol, choice.providers) ?? provider;
  const spec = provider === undefined ? undefined : choice.providers.get(provider);
  if (!spec) return undefined;
  const base = baseUrlOf(spec, choice);
  if (!base) return undefined;
  return {
    provider: spec.id,
    protocol: endpoint?.protocol ?? spec.protocol,
    metered: endpoint?.metered ?? false,
    streamingEndpoint: endpoint?.streaming ?? false,
    model: endpoint?.model,
    upstream: joinUrl(base, segments) + search,
  };
}

/**
 * Appends path segments to a base URL, merging the base's last segments
 * when the path repeats them (`https://api.openai.com/v1` + `/v1/chat/completions`).
 */
export function joinUrl(base: string, segments: readonly string[]): string {
  const url = new URL(base);
  const head = url.pathname.split("/").filter((s) => s.length > 0);
  let overlap = Math.min(head.length, segments.length);
  while (overlap > 0 && !head.slice(head.length - overlap).every((s, i) => s === segments[i])) overlap--;
  const path = [...head, ...segments.slice(overlap)].join("/");
  return `${url.origin}/${path}`;
}

function baseUrlOf(spec: ProviderSpec, choice: UpstreamChoice): string | undefined {
  if (choice.emulatorUrl) return `${choice.emulatorUrl}${spec.emulatorPath}`;
  if (choice.upstream && (choice.provider === undefined || choice.provider === spec.id || choice.provider === spec.catalogId)) return choice.upstream;
  const base = choice.configured?.[spec.catalogId ?? spec.id] ?? choice.configured?.[spec.id] ?? spec.defaultBaseUrl;
  return base === "" ? undefined : base;
}

function sibling(provider: string, protocol: Protocol, providers: ReadonlyMap<string, ProviderSpec>): string | undefined {
  for (const spec of providers.values()) if (spec.protocol === protocol && spec.catalogId === provider) return spec.id;
  return undefined;
}

interface Endpoint {
  protocol: Protocol;
  metered: boolean;
  streaming: boolean;
  model: string | undefined;
}

function endpointOf(segments: readonly string[]): Endpoint | undefined {
  const rest = segments.filter((s, i) => !(i < 2 && (s === "api" || s === "v1" || s === "v1beta" || s === "v1alpha"))).join("/");
  if (rest === "messages") return { protocol: "anthropic-messages", metered: true, streaming: false, model: undefined };
  if (rest === "messages/count_tokens") return { protocol: "anthropic-messages", metered: false, streaming: false, model: undefined };
  if (rest === "chat/completions") return { protocol: "openai-chat", metered: true, streaming: false, model: undefined };
  if (rest === "responses") return { protocol: "openai-responses", metered: true, streaming: false, model: undefined };
  const gemini = /^models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(rest);
  if (gemini) return { protocol: "gemini", metered: true, streaming: gemini[2] === "streamGenerateContent", model: decodeURIComponent(gemini[1]!) };
  return undefined;
}
