/**
 * The explicit-breakpoint cache model of Anthropic (and of Qwen's explicit
 * mode): markers on blocks, one entry written per breakpoint, reads found by
 * a bounded lookback from each breakpoint.
 */
import { ttlMs } from "../cache-store.ts";
import { invalidRequest } from "../request-error.ts";
import type { CacheOutcome, Prompt, Ttl } from "../types.ts";
import { type CacheContext, uncached } from "./context.ts";

/** Parameters of a breakpoint model. */
export interface BreakpointRules {
  /** Minimum tokens of the prefix ending at a breakpoint; shorter breakpoints are ignored (no error). */
  minTokens: number;
  /** Positions checked per breakpoint, the breakpoint itself included. */
  lookback: number;
  /** Most breakpoints per request (the automatic one included). */
  maxBreakpoints: number;
  /** True when the 1h TTL exists; otherwise every marker is 5m. */
  longTtl: boolean;
}

/** A resolved breakpoint: block index and TTL. */
export interface Breakpoint {
  index: number;
  ttl: Ttl;
}

/**
 * The breakpoints of a request in cache order (tools → system → messages):
 * explicit markers plus the top-level automatic one, which lands on the last
 * cacheable block (walking back past thinking and empty blocks; none → no
 * automatic breakpoint).
 * @throws EmulatorRequestError 400 on more than `maxBreakpoints`, on a 1h
 *   marker after a 5m one, or on an automatic TTL that conflicts with an
 *   explicit marker on the same block.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */
export function resolveBreakpoints(prompt: Prompt, rules: BreakpointRules): Breakpoint[] {
  const points: Breakpoint[] = [];
  for (let i = 0; i < prompt.blocks.length; i++) {
    const marker = prompt.blocks[i]!.marker;
    if (marker !== undefined) points.push({ index: i, ttl: rules.longTtl ? marker : "5m" });
  }
  if (prompt.autoCache !== undefined) {
    const ttl: Ttl = rules.longTtl ? prompt.autoCache : "5m";
    let i = prompt.blocks.length - 1;
    while (i >= 0 && !prompt.blocks[i]!.cacheable) i--;
    if (i >= 0) {
      const last = points.at(-1);
      if (last?.index === i) {
        if (last.ttl !== ttl) throw invalidRequest(`automatic cache_control ttl '${ttl}' conflicts with the ttl '${last.ttl}' already set on the last cacheable block`);
      } else {
        points.push({ index: i, ttl });
      }
    }
  }
  if (points.length > rules.maxBreakpoints) {
    throw invalidRequest(`A maximum of ${rules.maxBreakpoints} blocks with cache_control may be provided. Found ${points.length}.`);
  }
  let seenShort = false;
  for (const point of points) {
    if (point.ttl === "5m") seenShort = true;
    else if (seenShort) {
      throw invalidRequest(
        "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.",
      );
    }
  }
  return points;
}

/**
 * Cache outcome of a breakpoint model.
 *
 * - Writes: exactly one entry per breakpoint, keyed by the cumulative hash of
 *   the prefix ending there; nothing at other positions.
 * - Reads: from each breakpoint, the hash there and then one block back at a
 *   time, at most `lookback` positions counting the breakpoint; the highest
 *   position found anywhere is the hit (A). A read refreshes the entry's TTL.
 * - Breakpoints whose prefix is shorter than `minTokens` neither read nor
 *   write (no error): a request with only such breakpoints reports 0 and 0.
 * - Billing with mixed TTLs: A = tokens at the highest hit, B = tokens at the
 *   highest 1h breakpoint after A (else A), C = tokens at the last
 *   breakpoint; read = A, 1h write = B − A, 5m write = C − B, input = rest.
 * @throws EmulatorRequestError from {@link resolveBreakpoints}.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */
export function breakpointCache(prompt: Prompt, context: CacheContext, rules: BreakpointRules): CacheOutcome {
  const blocks = prompt.blocks;
  const points = resolveBreakpoints(prompt, rules).filter((p) => blocks[p.index]!.end >= rules.minTokens);
  if (points.length === 0) return uncached(prompt.total, true);
  const { store, now } = context;
  let hitEnd = 0;
  let hitKey: string | undefined;
  for (const point of points) {
    const stop = Math.max(0, point.index - rules.lookback + 1);
    for (let j = point.index; j >= stop; j--) {
      const block = blocks[j]!;
      if (block.end <= hitEnd) break;
      if (store.get(block.prefix, now)) {
        hitEnd = block.end;
        hitKey = block.prefix;
        break;
      }
    }
  }
  let longEnd = hitEnd;
  let lastEnd = hitEnd;
  for (const point of points) {
    const end = blocks[point.index]!.end;
    if (end > lastEnd) lastEnd = end;
    if (point.ttl === "1h" && end > longEnd) longEnd = end;
  }
  store.transaction(() => {
    if (hitKey !== undefined) store.refresh(hitKey, now);
    for (const point of points) {
      const block = blocks[point.index]!;
      store.put(block.prefix, block.end, now, ttlMs(point.ttl));
    }
  });
  return { input: prompt.total - lastEnd, read: hitEnd, write1h: longEnd - hitEnd, write5m: lastEnd - longEnd, explicit: true };
}
