/**
 * What every cache model receives besides the prompt.
 */
import type { CacheStore } from "../cache-store.ts";
import type { CacheOutcome, PromptBlock } from "../types.ts";

/** Inputs of a cache model beyond the prompt. */
export interface CacheContext {
  store: CacheStore;
  /** Emulated start time of the request (ms since epoch): TTLs count from it. */
  now: number;
  /** Seed for deterministic overflow routing (`CACHET_EMULATOR_SEED`). */
  seed: string;
  /** Blocks the answer adds after the prompt, as the next request will send them (DeepSeek output units). */
  answerBlocks: () => PromptBlock[];
}

/** An outcome with nothing cached. */
export function uncached(total: number, explicit = false): CacheOutcome {
  return { input: total, read: 0, write5m: 0, write1h: 0, explicit };
}
