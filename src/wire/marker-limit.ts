/**
 * The provider's limit on cache markers, checked on the final wire request:
 * after every cache strategy and `request:before` hook, so a marker added late
 * fails here, with a clear error, instead of as the provider's HTTP 400
 * (CASES.md case 15).
 */
import { CachetError } from "../errors.ts";
import type { CacheRules } from "../plugin/provider.ts";
import { CACHE_MARKER_KEYS, type WireRequest } from "../plugin/wire.ts";

/**
 * @param rules the provider's cache rules; no `maxBreakpoints` means no limit
 * @throws CachetError CACHE_CONTRACT naming the count and the limit
 */
export function assertMarkerLimit(wire: WireRequest, rules: CacheRules | undefined, provider: string): void {
  const max = rules?.maxBreakpoints;
  if (max === undefined) return;
  const count = countMarkers(wire.body);
  if (count <= max) return;
  throw new CachetError("CACHE_CONTRACT", `the ${provider} request carries ${count} cache markers after the cache strategies and request:before hooks; at most ${max} are allowed`, {
    hint: "a plugin hook or a later cache strategy added markers: remove manual cache_control marks, or put one only on the last block of a message",
  });
}

/**
 * Cache markers (non-null values of CACHE_MARKER_KEYS) anywhere in a JSON
 * value. A walk of the whole body on every request, written without
 * allocating: it is the one O(history) pass of the check.
 */
export function countMarkers(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) n += countMarkers(value[i]);
    return n;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const item = record[key];
    if (item === null || typeof item !== "object") {
      if (item !== null && item !== undefined && MARKER_KEYS.has(key)) n++;
      continue;
    }
    n += MARKER_KEYS.has(key) ? 1 : countMarkers(item);
  }
  return n;
}

const MARKER_KEYS: ReadonlySet<string> = new Set(CACHE_MARKER_KEYS);
