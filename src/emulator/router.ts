/**
 * Maps a request path to a provider and an endpoint. Paths are those of the
 * real services, optionally under a first segment naming the provider whose
 * usage shape and cache rules apply:
 * `/{provider}/v1/messages`, `/{provider}/v1/chat/completions` (or without
 * `/v1`, and OpenRouter's `/api/v1`), `/{provider}/v1/responses`,
 * `/{provider}/v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent`. Without a provider segment the protocol's own
 * provider applies; an unknown segment followed by a version
 * (`/acme/v1/chat/completions`) gets the protocol's default (OpenAI) shape;
 * any other path is not served (404).
 */
import type { EmulatedProvider, Protocol } from "./types.ts";

/** Where a request goes. */
export interface Route {
  provider: EmulatedProvider | "unknown";
  protocol: Protocol;
  endpoint: "messages" | "count_tokens" | "chat" | "responses" | "generate" | "stream-generate";
  /** Model id from the path (Gemini), else undefined. */
  model: string | undefined;
}

const PROVIDERS = new Set<string>(["anthropic", "openai", "google", "deepseek", "moonshotai", "alibaba", "openrouter", "xai"]);

/** The route of `pathname`, or undefined when no endpoint matches. */
export function resolveRoute(pathname: string): Route | undefined {
  const segments = pathname.split("/").filter((s) => s.length > 0);
  let provider: EmulatedProvider | "unknown" | undefined;
  const first = segments[0];
  if (first !== undefined && first !== "v1" && first !== "v1beta" && first !== "api") {
    provider = PROVIDERS.has(first) ? (first as EmulatedProvider) : "unknown";
    segments.shift();
    // A server the emulator does not know is served only under a versioned path, as every real API is:
    // `/acme/v1/chat/completions` yes, `/nosuch/chat/completions` no (404).
    if (provider === "unknown" && !/^v\d/.test(segments[0] ?? "")) return undefined;
  }
  if (segments[0] === "api") segments.shift();
  const versioned = segments[0] === "v1" || segments[0] === "v1beta" || segments[0] === "v1alpha";
  if (versioned) segments.shift();
  const rest = segments.join("/");
  if (rest === "messages") return { provider: provider ?? "anthropic", protocol: "anthropic-messages", endpoint: "messages", model: undefined };
  if (rest === "messages/count_tokens") return { provider: provider ?? "anthropic", protocol: "anthropic-messages", endpoint: "count_tokens", model: undefined };
  if (rest === "chat/completions") return { provider: provider ?? "openai", protocol: "openai-chat", endpoint: "chat", model: undefined };
  if (rest === "responses") return { provider: provider ?? "openai", protocol: "openai-responses", endpoint: "responses", model: undefined };
  const gemini = /^models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(rest);
  if (gemini) {
    return {
      provider: provider ?? "google",
      protocol: "gemini",
      endpoint: gemini[2] === "generateContent" ? "generate" : "stream-generate",
      model: decodeURIComponent(gemini[1]!),
    };
  }
  return undefined;
}
