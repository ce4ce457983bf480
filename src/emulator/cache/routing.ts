/**
 * OpenAI-style cache routing: the cache lives on one machine, chosen by a hash
 * of the prompt's first ~256 tokens combined with the affinity key; above
 * ~15 requests a minute for one prefix-and-key, requests overflow to other
 * machines. So concurrent sessions that share a system prompt and send no key
 * share one machine's rate budget and lose hits once they exceed it.
 *
 * Emulation: 16 machines per provider and model; the routing prefix is the
 * cumulative hash at the first block reaching 256 tokens (block granularity);
 * requests beyond the 15th in an emulated minute go to another machine picked
 * by a hash of the seed, the routing key and the request's rank in that minute.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
import type { Prompt } from "../types.ts";
import type { CacheContext } from "./context.ts";

/** Machines one provider's cache is spread over. */
export const MACHINES = 16;
/** Requests a minute one prefix-and-key may send before overflowing. */
export const OVERFLOW_PER_MINUTE = 15;
/** Tokens of the routing prefix. */
export const ROUTING_TOKENS = 256;

/**
 * The machine (0…MACHINES−1) serving this request. Counts the request in the
 * shared store, so processes sharing the state file share the rate budget.
 */
export function routeMachine(prompt: Prompt, context: CacheContext): number {
  const blocks = prompt.blocks;
  let routeBlock = blocks[blocks.length - 1];
  for (const block of blocks) {
    if (block.end >= ROUTING_TOKENS) {
      routeBlock = block;
      break;
    }
  }
  const routeKey = `${routeBlock?.prefix ?? ""}|${prompt.affinityKey ?? ""}`;
  const home = Number(BigInt(Bun.hash.wyhash(routeKey)) % BigInt(MACHINES));
  const rank = context.store.countRequest(`route:${routeKey}`, context.now);
  if (rank <= OVERFLOW_PER_MINUTE) return home;
  const spill = Number(BigInt(Bun.hash.wyhash(`${context.seed}|${routeKey}|${rank}`)) % BigInt(MACHINES - 1));
  return (home + 1 + spill) % MACHINES;
}
