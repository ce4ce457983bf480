/**
 * The implicit prefix cache model shared by OpenAI (before GPT-5.6), Gemini,
 * Qwen implicit mode, Kimi and xAI: the provider caches prefixes it has seen
 * and a request reads the longest one it starts with, from a minimum length,
 * reported in multiples of a block size.
 *
 * Emulation: the providers match token prefixes; the emulator approximates
 * that at content-block granularity: entries are written at every block end of
 * a request that reaches the minimum and read at any block end (so a volatile
 * last block, e.g. an overlay inside the last user message, does not hide the
 * blocks before it); the hit is then rounded down to the provider's
 * granularity. No write fee: writes are not reported.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 * @see https://ai.google.dev/gemini-api/docs/caching
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 * @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/maximizing-cache-hits
 */
import type { CacheOutcome, Prompt } from "../types.ts";
import { type CacheContext, uncached } from "./context.ts";
import { routeMachine } from "./routing.ts";

/** Parameters of an implicit prefix cache. */
export interface PrefixRules {
  /** Prompts shorter than this are not cached at all. */
  minTokens: number;
  /** Reported hits are rounded down to a multiple of this (1 = exact). */
  granularity: number;
  /** Lifetime of an entry after its last write or read, in ms. */
  ttlMs: number;
  /** True when the cache is per machine and requests are routed ({@link routeMachine}). */
  routed: boolean;
}

/** Cache outcome of an implicit prefix cache (see the module comment). */
export function prefixCache(prompt: Prompt, context: CacheContext, rules: PrefixRules): CacheOutcome {
  if (prompt.total < rules.minTokens) return uncached(prompt.total);
  const namespace = rules.routed ? `m${routeMachine(prompt, context)}:` : "";
  const { store, now } = context;
  const blocks = prompt.blocks;
  let hitEnd = 0;
  let hitKey: string | undefined;
  for (let i = blocks.length - 1; i >= 0; i--) {
    const block = blocks[i]!;
    if (block.end < rules.minTokens) break;
    const key = namespace + block.prefix;
    if (store.get(key, now)) {
      hitEnd = block.end;
      hitKey = key;
      break;
    }
  }
  store.transaction(() => {
    if (hitKey !== undefined) store.refresh(hitKey, now);
    for (let i = blocks.length - 1; i >= 0; i--) {
      const block = blocks[i]!;
      if (block.end <= hitEnd || block.end < rules.minTokens) break;
      store.put(namespace + block.prefix, block.end, now, rules.ttlMs);
    }
  });
  const read = hitEnd < rules.minTokens ? 0 : Math.floor(hitEnd / rules.granularity) * rules.granularity;
  return { input: prompt.total - read, read, write5m: 0, write1h: 0, explicit: false };
}
