/**
 * Documented prompt-cache facts per provider and model, as plain functions:
 * the built-in plugins declare their `cacheRules` from them (providers.md).
 * The emulator holds its own reading (src/emulator/facts/cache-facts.ts);
 * test/contract/cache-facts-agreement.test.ts fails when the two disagree.
 */
import type { CacheRules } from "../../src/plugin/index.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * Anthropic minimum cacheable prompt length by model family (2026-08 table;
 * "apply on every platform where each model is available"). Unknown models: 1,024.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching#cache-limitations
 */
export function anthropicMinTokens(model: string): number {
  const id = model.toLowerCase().replace(/\./g, "-");
  const table: [RegExp, number][] = [
    [/opus-5|fable-5|mythos-5/, 512],
    [/mythos-preview|opus-4-7|haiku-3-5|3-5-haiku/, 2_048],
    [/opus-4-6|opus-4-5|haiku-4-5/, 4_096],
    [/opus-4-8|sonnet-5|sonnet-4-6|sonnet-4-5|opus-4-1|opus-4|sonnet-4/, 1_024],
  ];
  for (const [pattern, min] of table) if (pattern.test(id)) return min;
  return 1_024;
}

/**
 * Gemini implicit caching minimum by model (newest doc version where two
 * disagree: 2.5 Flash/Pro 2,048; 3.5 Flash, 3.1 Pro, 3 Pro 4,096; 3 Flash 1,024).
 * Unknown models: 2,048.
 * @see https://ai.google.dev/gemini-api/docs/caching
 */
export function geminiMinTokens(model: string): number {
  const id = model.toLowerCase();
  if (/gemini-3(\.5)?-flash/.test(id)) return id.includes("3.5") ? 4_096 : 1_024;
  if (/gemini-3(\.\d)?-pro/.test(id)) return 4_096;
  return 2_048;
}

/**
 * True for OpenAI models with the GPT-5.6+ caching regime (explicit
 * breakpoints, exact boundaries, reported writes): gpt-5.6 and later, gpt-6+.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
export function openaiExplicitRegime(model: string): boolean {
  const match = /gpt-(\d+)(?:\.(\d+))?/.exec(model.toLowerCase());
  if (!match) return false;
  const major = Number(match[1]);
  const minor = Number(match[2] ?? 0);
  return major > 5 || (major === 5 && minor >= 6);
}

/**
 * Anthropic: entries only at breakpoints, 20-block lookback, per-model minimum,
 * TTL 5 minutes or 1 hour, refreshed on read.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */
export function anthropicCacheRules(model: string): CacheRules {
  return { mode: "breakpoints", minimumTokens: anthropicMinTokens(model), granularity: 1, lookback: 20, maxBreakpoints: 4, ttlMs: { "5m": 5 * MINUTE, "1h": HOUR } };
}

/**
 * OpenAI: automatic prefix caching from 1,024 tokens; hits rounded down to
 * 128 tokens before GPT-5.6, exact from GPT-5.6 on.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
export function openaiCacheRules(model: string): CacheRules {
  return { mode: "prefix", minimumTokens: 1_024, granularity: openaiExplicitRegime(model) ? 1 : 128 };
}

/**
 * Gemini implicit caching: automatic prefix from the model's minimum, exact counts.
 * @see https://ai.google.dev/gemini-api/docs/caching
 */
export function geminiCacheRules(model: string): CacheRules {
  return { mode: "prefix", minimumTokens: geminiMinTokens(model), granularity: 1 };
}

/**
 * Cache rules of the OpenAI-compatible presets.
 * - deepseek: prefix units persisted at the end of the input and of the model output
 *   (the answer is cached too) and at a prefix two requests share before diverging;
 *   a hit matches a whole unit; 64-token units (2024 announcement).
 *   @see https://api-docs.deepseek.com/guides/kv_cache
 * - moonshotai: implicit prefix, 256-token chunks (third-party measurement).
 *   @see https://raw.githubusercontent.com/Leechael/pi-provider-kimi-code/main/docs/caching.md
 * - alibaba: explicit `cache_control` mode (cachet's strategy marks blocks): breakpoints,
 *   20-block lookback, minimum 1,024, 5 minutes.
 *   @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 * - xai: implicit prefix, 128-token blocks (third-party).
 *   @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/maximizing-cache-hits
 * - openrouter: the upstream's rules, by the model id's vendor prefix.
 *   @see https://openrouter.ai/docs/guides/best-practices/prompt-caching
 */
export function compatibleCacheRules(provider: string, model: string): CacheRules {
  switch (provider) {
    case "deepseek":
      return { mode: "prefix", minimumTokens: 64, granularity: 1, answerCached: true, prefixUnits: true };
    case "moonshotai":
      return { mode: "prefix", minimumTokens: 256, granularity: 256 };
    case "alibaba":
      return { mode: "breakpoints", minimumTokens: 1_024, granularity: 1, lookback: 20, maxBreakpoints: 4, ttlMs: { default: 5 * MINUTE } };
    case "xai":
      return { mode: "prefix", minimumTokens: 128, granularity: 128 };
    case "openrouter": {
      const [vendor = "", ...rest] = model.split("/");
      const upstream = rest.join("/");
      const map: Record<string, string> = { anthropic: "anthropic", google: "google", deepseek: "deepseek", moonshotai: "moonshotai", qwen: "alibaba", "x-ai": "xai" };
      const id = map[vendor];
      if (id === "anthropic") return anthropicCacheRules(upstream);
      if (id === "google") return geminiCacheRules(upstream);
      if (id) return compatibleCacheRules(id, upstream);
      return openaiCacheRules(upstream);
    }
    default:
      return openaiCacheRules(model);
  }
}
