/**
 * Cache strategies of the OpenAI-compatible presets, one per provider:
 * - moonshotai (Kimi): `prompt_cache_key` (an AI SDK option documented as
 *   "typically a session or task id"; Moonshot's own doc not found).
 * - xai: header `x-grok-conv-id` on Chat Completions, `prompt_cache_key` on
 *   the Responses API ("functions identically"). No markers.
 * - openrouter: `session_id` (OpenRouter's documented sticky-routing key,
 *   ≤ 256 characters) on every model; it does not document
 *   `prompt_cache_key`, so that is not sent. For Anthropic and Qwen upstream
 *   models (`anthropic/…`, `qwen/…`) block-level `cache_control` marks,
 *   which OpenRouter passes through, with the same rolling plan as on
 *   Anthropic; the top-level automatic `cache_control` is not used because it
 *   lands on the last block, which is the volatile overlay.
 * - alibaba (Qwen): explicit-mode `cache_control` marks (5-minute TTL only,
 *   so `--cache-ttl` does not apply; the per-request choice of explicit mode
 *   buys predictable hits at 10% instead of best-effort implicit hits at 20%).
 * - deepseek and any other compatible server: nothing (implicit caching, no key).
 * @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/maximizing-cache-hits
 * @see https://openrouter.ai/docs/guides/best-practices/prompt-caching
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 */
import type { CacheStrategySpec, RequestContext, WireRequest } from "../../src/plugin/index.ts";
import { withBodyKey, withHeaderKey } from "../shared/affinity.ts";
import { addChatBreakpoints } from "../shared/chat-breakpoints.ts";

/** OpenRouter rejects longer `session_id` values. @see https://openrouter.ai/docs/guides/best-practices/prompt-caching */
export const OPENROUTER_SESSION_ID_MAX = 256;

/** Kimi: `prompt_cache_key`. */
export const moonshotPromptCacheKey: CacheStrategySpec = {
  id: "moonshotai-prompt-cache-key",
  protocols: ["openai-chat"],
  providers: ["moonshotai"],
  apply: (wire, context) => (context.cache.mode === "off" ? wire : withBodyKey(wire, "prompt_cache_key", context.cache.affinityKey)),
};

/** xAI: `x-grok-conv-id` header on chat, `prompt_cache_key` on responses. */
export const xaiConversationId: CacheStrategySpec = {
  id: "xai-conversation-id",
  protocols: ["openai-chat", "openai-responses"],
  providers: ["xai"],
  apply(wire, context) {
    if (context.cache.mode === "off") return wire;
    const key = context.cache.affinityKey;
    return wire.protocol === "openai-responses" ? withBodyKey(wire, "prompt_cache_key", key) : withHeaderKey(wire, "x-grok-conv-id", key);
  },
};

/** OpenRouter: `session_id`, plus breakpoints for Anthropic and Qwen upstream models on chat. */
export const openrouterCache: CacheStrategySpec = {
  id: "openrouter-cache",
  protocols: ["openai-chat", "openai-responses"],
  providers: ["openrouter"],
  apply: applyOpenRouterCache,
};

/** Qwen explicit cache: `cache_control` breakpoints, 5-minute TTL. */
export const alibabaBreakpoints: CacheStrategySpec = {
  id: "alibaba-breakpoints",
  protocols: ["openai-chat"],
  providers: ["alibaba"],
  apply: (wire, context) => (context.cache.mode === "off" ? wire : addChatBreakpoints(wire, { ttl: "5m", provider: context.provider })),
};

/** The strategies this plugin registers. */
export const strategies: CacheStrategySpec[] = [moonshotPromptCacheKey, xaiConversationId, openrouterCache, alibabaBreakpoints];

/**
 * OpenRouter: `session_id` when the key fits, and for `anthropic/…` (TTL as
 * asked) and `qwen/…` (5m only) models on chat, `cache_control` breakpoints.
 * @throws CachetError CACHE_CONTRACT from the breakpoint plan (too many manual marks, TTL order).
 */
export function applyOpenRouterCache(wire: WireRequest, context: RequestContext): WireRequest {
  if (context.cache.mode === "off") return wire;
  const key = context.cache.affinityKey;
  let out = key !== undefined && key.length <= OPENROUTER_SESSION_ID_MAX ? withBodyKey(wire, "session_id", key) : wire;
  if (wire.protocol === "openai-chat") {
    const vendor = context.model.split("/")[0];
    if (vendor === "anthropic") out = addChatBreakpoints(out, { ttl: context.cache.ttl, provider: context.provider });
    if (vendor === "qwen") out = addChatBreakpoints(out, { ttl: "5m", provider: context.provider });
  }
  return out;
}
