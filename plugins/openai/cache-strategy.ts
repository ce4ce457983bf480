/**
 * The OpenAI cache strategy: the affinity key as `prompt_cache_key` on Chat
 * Completions and Responses requests, streamed or not, so every turn of a
 * session is routed to the same cache (CASES.md case 18).
 *
 * No explicit breakpoints, GPT-5.6+ included: in the default implicit mode
 * the lookup set already holds the implicit breakpoint at the end of the
 * latest eligible message plus up to 20 earlier eligible message endings, so
 * the next request finds the previous request's last message without a mark,
 * while an explicit mark would add cache-write charges (1.25× on GPT-5.6+)
 * and count against the 4 writes per request. Earlier models cache implicitly only.
 * @see https://platform.openai.com/docs/guides/prompt-caching (Prompt cache keys; How prefix matching works)
 */
import type { CacheStrategySpec, RequestContext, WireRequest } from "../../src/plugin/index.ts";
import { withBodyKey } from "../shared/affinity.ts";

/**
 * `prompt_cache_key` for the `openai` (Chat Completions) and `openai-responses`
 * (Responses API) providers: the Responses API is a provider of its own id, so
 * naming only `openai` would leave every Responses request without the key.
 */
export const openaiPromptCacheKey: CacheStrategySpec = {
  id: "openai-prompt-cache-key",
  protocols: ["openai-chat", "openai-responses"],
  providers: ["openai", "openai-responses"],
  apply: applyPromptCacheKey,
};

/** The strategies this plugin registers. */
export const strategies: CacheStrategySpec[] = [openaiPromptCacheKey];

/**
 * Sets `prompt_cache_key` to the session's affinity key (kept when the body
 * already has one). Returns `wire` itself when caching is off or there is no key.
 * @see https://platform.openai.com/docs/api-reference/chat/create (prompt_cache_key)
 */
export function applyPromptCacheKey(wire: WireRequest, context: RequestContext): WireRequest {
  if (context.cache.mode === "off") return wire;
  return withBodyKey(wire, "prompt_cache_key", context.cache.affinityKey);
}
