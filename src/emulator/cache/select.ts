/**
 * Which cache model and which parameters apply to a request: chosen by the
 * provider (path segment) and the model id (body or path).
 */
import type { CacheOutcome, Prompt } from "../types.ts";
import { breakpointCache } from "./breakpoints.ts";
import type { CacheContext } from "./context.ts";
import { deepseekCache } from "./deepseek.ts";
import { openaiBreakpointCache } from "./openai-breakpoints.ts";
import { prefixCache } from "./prefix.ts";
// The documented per-model facts are shared with the built-in plugins, which declare the same rules to the client side.
import { anthropicMinTokens, geminiMinTokens, openaiExplicitRegime } from "../../../plugins/shared/cache-facts.ts";


const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * Entry lifetime of OpenAI's implicit cache before GPT-5.6:
 * `prompt_cache_retention: "24h"` → 24 h; `in_memory` → 10 min after last use
 * (the doc: 5–10 min idle); unset → 24h where the model supports it (the
 * default for non-ZDR organisations), else in-memory.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
export function openaiRetentionMs(model: string, retention: string | undefined): number {
  if (retention === "24h") return 24 * HOUR;
  if (retention === "in_memory") return 10 * MINUTE;
  const supports24h = /gpt-(5\.5|5\.4|5\.2|5\.1|5|4\.1)(?![.\d])/.test(model.toLowerCase());
  return supports24h ? 24 * HOUR : 10 * MINUTE;
}

/**
 * The cache outcome of a request under its provider's rules.
 * Providers and their rules (each module documents its source):
 * - anthropic: explicit breakpoints, ≤4, 20-block lookback, per-model minimum, 5m/1h.
 * - openai and unknown providers: implicit prefix from 1,024 tokens, hits
 *   rounded down to 128, routed per machine; GPT-5.6+: {@link openaiBreakpointCache}.
 * - google: implicit prefix from the model's minimum, exact counts, 5 min (TTL unpublished).
 * - deepseek: {@link deepseekCache}.
 * - alibaba: explicit mode when any `cache_control` is sent (≤4 markers,
 *   20-block lookback, minimum 1,024, 5 min reset on hit), else implicit
 *   prefix from 256 tokens (doc versions say 256 or 1,024), 5 min.
 *   @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 * - moonshotai: implicit prefix, 256-token chunks (third-party measurement), 5 min.
 *   @see https://raw.githubusercontent.com/Leechael/pi-provider-kimi-code/main/docs/caching.md
 * - xai: implicit prefix per server, routed by `x-grok-conv-id` / `prompt_cache_key`,
 *   128-token blocks (third-party), 5 min.
 *   @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/maximizing-cache-hits
 * - openrouter: the upstream's rules, picked by the model id's vendor prefix.
 *   @see https://openrouter.ai/docs/guides/best-practices/prompt-caching
 * @throws EmulatorRequestError 400 on breakpoint rule violations.
 */
export function cacheOutcome(prompt: Prompt, context: CacheContext): CacheOutcome {
  const provider = prompt.provider === "openrouter" ? upstreamOf(prompt.model) : prompt.provider;
  const model = prompt.provider === "openrouter" ? prompt.model.slice(prompt.model.indexOf("/") + 1) : prompt.model;
  switch (provider) {
    case "anthropic":
      return breakpointCache(prompt, context, { minTokens: anthropicMinTokens(model), lookback: 20, maxBreakpoints: 4, longTtl: true });
    case "google":
      return prefixCache(prompt, context, { minTokens: geminiMinTokens(model), granularity: 1, ttlMs: 5 * MINUTE, routed: false });
    case "deepseek":
      return deepseekCache(prompt, context);
    case "alibaba":
      if (prompt.blocks.some((b) => b.marker !== undefined) || prompt.autoCache !== undefined) {
        return breakpointCache(prompt, context, { minTokens: 1_024, lookback: 20, maxBreakpoints: 4, longTtl: false });
      }
      return prefixCache(prompt, context, { minTokens: 256, granularity: 1, ttlMs: 5 * MINUTE, routed: false });
    case "moonshotai":
      return prefixCache(prompt, context, { minTokens: 256, granularity: 256, ttlMs: 5 * MINUTE, routed: false });
    case "xai":
      return prefixCache(prompt, context, { minTokens: 128, granularity: 128, ttlMs: 5 * MINUTE, routed: true });
    default:
      if (openaiExplicitRegime(model)) return openaiBreakpointCache(prompt, context);
      return prefixCache(prompt, context, { minTokens: 1_024, granularity: 128, ttlMs: openaiRetentionMs(model, prompt.retention), routed: true });
  }
}

function upstreamOf(model: string): string {
  const vendor = model.split("/")[0] ?? "";
  const map: Record<string, string> = { anthropic: "anthropic", google: "google", deepseek: "deepseek", moonshotai: "moonshotai", qwen: "alibaba", "x-ai": "xai" };
  return map[vendor] ?? "openai";
}
