/**
 * DeepSeek's disk cache of "prefix units": a hit needs a full match of a
 * stored unit. Units are persisted at the end of the user input and at the
 * end of the model output of every request, and for a common prefix detected
 * across requests (A+B then A+C misses, but persists A, so A+D hits).
 * Emulation: units and "seen" prefixes at message ends; units shorter than 64
 * tokens are not stored (the 2024 storage unit; whether it still applies is
 * unconfirmed); the fixed-interval units inside long inputs (interval
 * unpublished) are not emulated; entries live 6 hours (the guide says a few
 * hours to a few days). Usage: `prompt_cache_hit_tokens` +
 * `prompt_cache_miss_tokens` = `prompt_tokens`.
 * @see https://api-docs.deepseek.com/guides/kv_cache
 */
import type { CacheOutcome, Prompt, PromptBlock } from "../types.ts";
import type { CacheContext } from "./context.ts";

/** Parameters of the prefix-unit model (facts table row). */
export interface UnitRules {
  /** Units shorter than this many tokens are not stored. */
  minUnit: number;
  /** Lifetime of a unit after its last write or read, ms. */
  ttlMs: number;
}

/** Cache outcome under DeepSeek's prefix-unit rules. */
export function deepseekCache(prompt: Prompt, context: CacheContext, rules: UnitRules): CacheOutcome {
  const { store, now } = context;
  const ends: PromptBlock[] = prompt.blocks.filter((b, i) => (b.messageEnd || i === prompt.blocks.length - 1) && b.end >= rules.minUnit);
  let unit: PromptBlock | undefined;
  let seen: PromptBlock | undefined;
  for (let i = ends.length - 1; i >= 0; i--) {
    const block = ends[i]!;
    if (!unit && store.get(`unit:${block.prefix}`, now)) unit = block;
    if (!seen && store.get(`seen:${block.prefix}`, now)) seen = block;
    if (unit && seen) break;
  }
  const hit = unit?.end ?? 0;
  const answerEnd = context.answerBlocks().at(-1);
  store.transaction(() => {
    if (unit) store.refresh(`unit:${unit.prefix}`, now);
    if (seen && seen.end > hit) store.put(`unit:${seen.prefix}`, seen.end, now, rules.ttlMs);
    const last = ends.at(-1);
    if (last && last === prompt.blocks.at(-1)) store.put(`unit:${last.prefix}`, last.end, now, rules.ttlMs);
    if (answerEnd && answerEnd.end >= rules.minUnit) store.put(`unit:${answerEnd.prefix}`, answerEnd.end, now, rules.ttlMs);
    for (const block of ends) if (block.end > hit) store.put(`seen:${block.prefix}`, block.end, now, rules.ttlMs);
  });
  return { input: prompt.total - hit, read: hit, write5m: 0, write1h: 0, explicit: false };
}
