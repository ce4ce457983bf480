/**
 * Gemini has no cache strategy: its implicit cache takes no markers and no
 * routing key (the advice is only to keep a common prefix first and send
 * similar requests close in time), and explicit `cachedContents` are a
 * separate resource cachet does not create. The list is empty on purpose,
 * so that `--cache auto` sends Gemini requests exactly as rendered.
 * @see https://ai.google.dev/gemini-api/docs/caching
 */
import type { CacheStrategySpec } from "../../src/plugin/index.ts";

/** The strategies this plugin registers: none. */
export const strategies: CacheStrategySpec[] = [];
