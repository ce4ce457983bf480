/**
 * The emulator's own reading of each provider's documented prompt-cache
 * rules, one row per provider and model family, each citing its source
 * (a section of shared/providers.md or the provider's page). The built-in
 * plugins hold a separate reading (their `cacheRules`); a contract test
 * (test/contract/cache-facts-agreement.test.ts) compares the two row by row,
 * so a wrong fact on one side cannot pass unseen. Nothing here comes from
 * plugins/.
 */
import type { EmulatedProvider } from "../types.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Which cache model serves a row (src/emulator/cache/*). */
export type CacheModelKind =
  /** Entries only at explicit breakpoints, found by a bounded lookback (Anthropic, Qwen explicit). */
  | "breakpoints"
  /** Implicit prefix cache: every prefix seen is readable (OpenAI before GPT-5.6, Gemini, Kimi, xAI, Qwen implicit). */
  | "prefix"
  /** DeepSeek's disk cache of prefix units, the answer included. */
  | "prefix-units"
  /** OpenAI GPT-5.6+: implicit plus explicit breakpoints, exact boundaries, reported writes. */
  | "openai-breakpoints";

/** The cache facts of one provider and model family. */
export interface CacheFacts {
  kind: CacheModelKind;
  /** Smallest cacheable prefix, tokens; shorter prefixes read and write nothing (no error). */
  minTokens: number;
  /** Reported hits are rounded down to a multiple of this many tokens (1 = exact). */
  granularity: number;
  /** Positions a breakpoint checks, counting itself (breakpoint kinds). */
  lookback?: number;
  /** Most breakpoints per request, the automatic one included (breakpoint kinds). */
  maxBreakpoints?: number;
  /** Entry lifetime after its last write or read, ms, per TTL name; `retention` = by OpenAI's `prompt_cache_retention`. */
  ttlMs: { "5m"?: number; "1h"?: number; default?: number } | "retention";
  /** True when requests are routed to one of several machines, each with its own cache. */
  routed?: boolean;
  /** True when the model's answer is cached too, so the next request can read it. */
  answerCached?: boolean;
}

/** One row of the table. */
export interface CacheFactRow extends CacheFacts {
  provider: Exclude<EmulatedProvider, "openrouter">;
  /** Human name of the family, named in test failures. */
  family: string;
  /** Model ids this row covers (lower-cased; Anthropic ids with dots read as dashes); undefined = every other model of the provider. */
  pattern: RegExp | undefined;
  /** Model ids the agreement test asks both readings about. */
  examples: string[];
  /** For providers with two modes chosen per request: the row applies when cache markers are sent (`markers`) or not. */
  when?: "markers" | "no-markers";
  /** Where the facts come from. */
  source: string;
}

const ANTHROPIC_TTL = { "5m": 5 * MINUTE, "1h": HOUR };
const ANTHROPIC = {
  kind: "breakpoints",
  granularity: 1,
  lookback: 20,
  maxBreakpoints: 4,
  ttlMs: ANTHROPIC_TTL,
} as const;
const ANTHROPIC_SOURCE = "providers.md §2a (Minimum cacheable length; Reads / lookback; Max breakpoints; TTL)";

/**
 * Every row, most specific first within a provider; the first row whose
 * pattern matches wins.
 */
export const CACHE_FACTS: readonly CacheFactRow[] = [
  { provider: "anthropic", family: "Claude Opus 5, Fable 5, Mythos 5", pattern: /opus-5|fable-5|mythos-5/, examples: ["claude-opus-5", "claude-fable-5"], minTokens: 512, ...ANTHROPIC, source: ANTHROPIC_SOURCE },
  { provider: "anthropic", family: "Claude Mythos Preview, Opus 4.7, Haiku 3.5", pattern: /mythos-preview|opus-4-7|haiku-3-5|3-5-haiku/, examples: ["claude-opus-4-7", "claude-3-5-haiku-latest"], minTokens: 2_048, ...ANTHROPIC, source: ANTHROPIC_SOURCE },
  { provider: "anthropic", family: "Claude Opus 4.6, Opus 4.5, Haiku 4.5", pattern: /opus-4-6|opus-4-5|haiku-4-5/, examples: ["claude-opus-4-6", "claude-haiku-4-5"], minTokens: 4_096, ...ANTHROPIC, source: ANTHROPIC_SOURCE },
  { provider: "anthropic", family: "Claude Opus 4.8, Sonnet 5, Sonnet 4.6, Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4", pattern: /opus-4-8|sonnet-5|sonnet-4-6|sonnet-4-5|opus-4-1|opus-4|sonnet-4/, examples: ["claude-sonnet-4-5", "claude-sonnet-4.6", "claude-opus-4-1"], minTokens: 1_024, ...ANTHROPIC, source: ANTHROPIC_SOURCE },
  { provider: "anthropic", family: "other Claude models", pattern: undefined, examples: ["claude-next"], minTokens: 1_024, ...ANTHROPIC, source: `${ANTHROPIC_SOURCE}; unlisted models: the common 1,024` },
  { provider: "openai", family: "GPT-5.6 and later", pattern: /gpt-(?:[6-9]|\d{2,})(?:\.\d+)?|gpt-5\.(?:[6-9]|\d{2,})/, examples: ["gpt-5.6", "gpt-6"], kind: "openai-breakpoints", minTokens: 1_024, granularity: 1, ttlMs: { default: 30 * MINUTE }, routed: true, source: "providers.md §3a (GPT-5.6 and later: minimum, exact boundary, 30m TTL)" },
  { provider: "openai", family: "models before GPT-5.6", pattern: undefined, examples: ["gpt-5", "gpt-4o", "gpt-5.5"], kind: "prefix", minTokens: 1_024, granularity: 128, ttlMs: "retention", routed: true, source: "providers.md §3a (Models before GPT-5.6: 1,024 minimum, 128-token rounding, prompt_cache_retention)" },
  { provider: "google", family: "Gemini 3.5 Flash", pattern: /gemini-3\.5-flash/, examples: ["gemini-3.5-flash"], kind: "prefix", minTokens: 4_096, granularity: 1, ttlMs: { default: 5 * MINUTE }, source: "providers.md §4a (Minimum tokens, 2026-07 version); TTL unpublished: 5 minutes assumed" },
  { provider: "google", family: "Gemini 3 Flash", pattern: /gemini-3-flash/, examples: ["gemini-3-flash-preview"], kind: "prefix", minTokens: 1_024, granularity: 1, ttlMs: { default: 5 * MINUTE }, source: "providers.md §4a (Minimum tokens, 2026-05 version); TTL unpublished: 5 minutes assumed" },
  { provider: "google", family: "Gemini 3.x Pro", pattern: /gemini-3(?:\.\d)?-pro/, examples: ["gemini-3-pro-preview", "gemini-3.1-pro-preview"], kind: "prefix", minTokens: 4_096, granularity: 1, ttlMs: { default: 5 * MINUTE }, source: "providers.md §4a (Minimum tokens); TTL unpublished: 5 minutes assumed" },
  { provider: "google", family: "other Gemini models (2.5 Flash, 2.5 Pro…)", pattern: undefined, examples: ["gemini-2.5-flash", "gemini-2.5-pro"], kind: "prefix", minTokens: 2_048, granularity: 1, ttlMs: { default: 5 * MINUTE }, source: "providers.md §4a (Minimum tokens, 2026-07 version: 2.5 Flash/Pro 2,048)" },
  { provider: "deepseek", family: "every DeepSeek model", pattern: undefined, examples: ["deepseek-chat", "deepseek-v4-flash"], kind: "prefix-units", minTokens: 64, granularity: 1, ttlMs: { default: 6 * HOUR }, answerCached: true, source: "providers.md §5 (prefix units at the end of input and output; 64-token unit of 2024; lifetime hours to days: 6 h)" },
  { provider: "alibaba", family: "Qwen explicit cache (cache_control sent)", pattern: undefined, when: "markers", examples: ["qwen3.6-plus"], kind: "breakpoints", minTokens: 1_024, granularity: 1, lookback: 20, maxBreakpoints: 4, ttlMs: { default: 5 * MINUTE }, source: "providers.md §7 (Explicit cache: 4 markers, 20-block lookback, 1,024 minimum, 5 min reset on hit)" },
  { provider: "alibaba", family: "Qwen implicit cache", pattern: undefined, when: "no-markers", examples: ["qwen3.6-plus"], kind: "prefix", minTokens: 256, granularity: 1, ttlMs: { default: 5 * MINUTE }, source: "providers.md §7 (Implicit cache: minimum 256 per the 2026 doc update)" },
  { provider: "moonshotai", family: "every Kimi model", pattern: undefined, examples: ["kimi-k2.6"], kind: "prefix", minTokens: 256, granularity: 256, ttlMs: { default: 5 * MINUTE }, source: "providers.md §6 (256-token chunks, third-party measurement)" },
  { provider: "xai", family: "every Grok model", pattern: undefined, examples: ["grok-4.5"], kind: "prefix", minTokens: 128, granularity: 128, ttlMs: { default: 5 * MINUTE }, routed: true, source: "providers.md §8 xAI (per-server cache, 128-token blocks third-party)" },
];

/** OpenRouter model-id vendor prefixes and the provider whose rules apply upstream. */
const OPENROUTER_UPSTREAM: Record<string, CacheFactRow["provider"]> = {
  anthropic: "anthropic",
  google: "google",
  deepseek: "deepseek",
  moonshotai: "moonshotai",
  qwen: "alibaba",
  "x-ai": "xai",
  openai: "openai",
};

/**
 * The provider and model whose rules apply: OpenRouter ids (`vendor/model`)
 * map to the upstream by vendor prefix (unknown vendors: OpenAI's rules).
 * @see https://openrouter.ai/docs/guides/best-practices/prompt-caching
 */
export function upstreamOf(provider: EmulatedProvider | "unknown", model: string): { provider: CacheFactRow["provider"]; model: string } {
  if (provider === "openrouter") {
    const slash = model.indexOf("/");
    const vendor = slash < 0 ? "" : model.slice(0, slash);
    return { provider: OPENROUTER_UPSTREAM[vendor] ?? "openai", model: model.slice(slash + 1) };
  }
  return { provider: provider === "unknown" ? "openai" : provider, model };
}

/**
 * The row that applies to `model` on `provider` (OpenRouter resolved to its
 * upstream); `markers` picks the mode of providers with two (Qwen).
 */
export function cacheFactsFor(provider: EmulatedProvider | "unknown", model: string, markers = false): CacheFactRow {
  const upstream = upstreamOf(provider, model);
  const id = upstream.provider === "anthropic" ? upstream.model.toLowerCase().replace(/\./g, "-") : upstream.model.toLowerCase();
  const mode = markers ? "markers" : "no-markers";
  for (const row of CACHE_FACTS) {
    if (row.provider !== upstream.provider) continue;
    if (row.when !== undefined && row.when !== mode) continue;
    if (row.pattern === undefined || row.pattern.test(id)) return row;
  }
  throw new Error(`no cache facts row for ${provider}/${model}`);
}

/**
 * Entry lifetime of OpenAI's implicit cache before GPT-5.6:
 * `prompt_cache_retention: "24h"` → 24 h; `in_memory` → 10 min after last use
 * (the doc: 5–10 min idle); unset → 24h where the model supports it (the
 * default for non-ZDR organisations), else in-memory. providers.md §3a (TTL).
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
export function openaiRetentionMs(model: string, retention: string | undefined): number {
  if (retention === "24h") return 24 * HOUR;
  if (retention === "in_memory") return 10 * MINUTE;
  const supports24h = /gpt-(5\.5|5\.4|5\.2|5\.1|5|4\.1)(?![.\d])/.test(model.toLowerCase());
  return supports24h ? 24 * HOUR : 10 * MINUTE;
}
