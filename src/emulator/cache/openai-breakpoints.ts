/**
 * OpenAI GPT-5.6+ prompt caching: an implicit breakpoint at the end of the
 * latest eligible message (user message, last tool response of a group, last
 * developer message of the initial developer block) plus up to 3 explicit
 * `prompt_cache_breakpoint` markers, or, with `prompt_cache_options.mode:
 * "explicit"`, up to 4 explicit markers and no implicit one (none → no
 * caching). Up to 4 entries are written per request (the latest markers).
 * A lookup considers the first 2 and latest 50 explicit markers, the implicit
 * breakpoint and up to 20 earlier eligible message endings; the longest match
 * wins and is reported exactly (no 128 rounding). Minimum 1,024 tokens.
 * Writes are reported (`cache_write_tokens`): the tokens from the hit to the
 * last written breakpoint; content after it is plain input. TTL `30m`,
 * refreshed on reuse. Requests are routed like earlier models.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
import type { CacheOutcome, Prompt } from "../types.ts";
import { type CacheContext, uncached } from "./context.ts";
import { routeMachine } from "./routing.ts";

const ELIGIBLE_LOOKBACK = 20;

/** Cache outcome under the GPT-5.6+ rules (see the module comment); minimum and TTL from the facts table. */
export function openaiBreakpointCache(prompt: Prompt, context: CacheContext, rules: { minTokens: number; ttlMs: number }): CacheOutcome {
  const blocks = prompt.blocks;
  const explicitMode = prompt.cacheMode === "explicit";
  const markers: number[] = [];
  const eligible: number[] = [];
  for (let i = 0; i < blocks.length; i++) {
    if (blocks[i]!.marker !== undefined) markers.push(i);
    if (blocks[i]!.eligible) eligible.push(i);
  }
  const implicit = explicitMode ? undefined : eligible.at(-1);
  const writes = explicitMode ? markers.slice(-4) : [...markers.slice(-3), ...(implicit === undefined ? [] : [implicit])];
  const candidates = new Set<number>([...markers.slice(0, 2), ...markers.slice(-50), ...writes]);
  if (!explicitMode) for (const i of eligible.slice(-1 - ELIGIBLE_LOOKBACK)) candidates.add(i);
  const usable = (i: number) => blocks[i]!.end >= rules.minTokens;
  if (writes.filter(usable).length === 0 && [...candidates].filter(usable).length === 0) return uncached(prompt.total, true);
  const namespace = `m${routeMachine(prompt, context)}:`;
  const { store, now } = context;
  let hitEnd = 0;
  let hitKey: string | undefined;
  for (const i of [...candidates].filter(usable).sort((a, b) => b - a)) {
    const key = namespace + blocks[i]!.prefix;
    if (store.get(key, now)) {
      hitEnd = blocks[i]!.end;
      hitKey = key;
      break;
    }
  }
  let lastWrite = hitEnd;
  store.transaction(() => {
    if (hitKey !== undefined) store.refresh(hitKey, now);
    for (const i of writes.filter(usable)) {
      const block = blocks[i]!;
      store.put(namespace + block.prefix, block.end, now, rules.ttlMs);
      if (block.end > lastWrite) lastWrite = block.end;
    }
  });
  return { input: prompt.total - lastWrite, read: hitEnd, write5m: lastWrite - hitEnd, write1h: 0, explicit: true };
}
