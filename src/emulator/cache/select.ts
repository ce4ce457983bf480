/**
 * Which cache model and which parameters apply to a request: the row of the
 * emulator's own facts table (../facts/cache-facts.ts) for the provider (path
 * segment) and the model id (body or path).
 */
import { cacheFactsFor, openaiRetentionMs } from "../facts/cache-facts.ts";
import type { CacheOutcome, Prompt } from "../types.ts";
import { breakpointCache } from "./breakpoints.ts";
import type { CacheContext } from "./context.ts";
import { deepseekCache } from "./deepseek.ts";
import { openaiBreakpointCache } from "./openai-breakpoints.ts";
import { prefixCache } from "./prefix.ts";

/**
 * The cache outcome of a request under its provider's rules (each row of
 * the facts table cites its source; each cache model documents its rules).
 * Qwen uses its explicit mode when any `cache_control` is sent.
 * @throws EmulatorRequestError 400 on breakpoint rule violations.
 */
export function cacheOutcome(prompt: Prompt, context: CacheContext): CacheOutcome {
  const markers = prompt.blocks.some((b) => b.marker !== undefined) || prompt.autoCache !== undefined;
  const facts = cacheFactsFor(prompt.provider, prompt.model, markers);
  const ttl = facts.ttlMs === "retention" ? openaiRetentionMs(prompt.model, prompt.retention) : (facts.ttlMs.default ?? facts.ttlMs["5m"]!);
  switch (facts.kind) {
    case "breakpoints":
      return breakpointCache(prompt, context, { minTokens: facts.minTokens, lookback: facts.lookback!, maxBreakpoints: facts.maxBreakpoints!, longTtl: facts.ttlMs !== "retention" && facts.ttlMs["1h"] !== undefined });
    case "prefix-units":
      return deepseekCache(prompt, context, { minUnit: facts.minTokens, ttlMs: ttl });
    case "openai-breakpoints":
      return openaiBreakpointCache(prompt, context, { minTokens: facts.minTokens, ttlMs: ttl });
    case "prefix":
      return prefixCache(prompt, context, { minTokens: facts.minTokens, granularity: facts.granularity, ttlMs: ttl, routed: facts.routed === true });
  }
}
