/**
 * The provider's limit on cache markers, checked on the final wire request:
 * after every cache strategy and `request:before` hook, so a marker added late
 * fails here, with a clear error, instead of as the provider's HTTP 400
 * (CASES.md case 15).
 */
import { CachetError } from "../errors.ts";
import type { CacheRules } from "../plugin/provider.ts";
import { ListMemo } from "../list-memo.ts";
import { CACHE_MARKER_KEYS, type WireRequest } from "../plugin/wire.ts";

/**
 * @param rules the provider's cache rules; no `maxBreakpoints` means no limit
 * @throws CachetError CACHE_CONTRACT naming the count and the limit
 */
export function assertMarkerLimit(wire: WireRequest, rules: CacheRules | undefined, provider: string): void {
  const max = rules?.maxBreakpoints;
  if (max === undefined) return;
  const count = bodyMarkers(wire);
  if (count <= max) return;
  throw new CachetError("CACHE_CONTRACT", `the ${provider} request carries ${count} cache markers after the cache strategies and request:before hooks; at most ${max} are allowed`, {
    hint: "a plugin hook or a later cache strategy added markers: remove manual cache_control marks, or put one only on the last block of a message",
  });
}

/**
 * {@link countMarkers} of the body, the elements of its lists (messages,
 * tools, ...) counted once each: an element at the place it held in the
 * conversation's last request is the same object (the render memo's, never
 * changed in place: a strategy marks a copy; `request:before` handlers get a
 * copy of the whole request), and costs a pointer compare (src/list-memo.ts).
 */
function bodyMarkers(wire: WireRequest): number {
  let n = 0;
  for (const field in wire.body) {
    const item = wire.body[field];
    n += !Array.isArray(item) || MARKER_KEYS.has(field) ? memberMarkers(field, item) : elementMarkers.map(item).total;
  }
  return n;
}

const elementMarkers = new ListMemo<unknown, number>((element) => countMarkers(element), { weight: (count) => count });

/**
 * Cache markers (non-null values of CACHE_MARKER_KEYS) anywhere in a JSON
 * value, walked without allocating.
 */
export function countMarkers(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) n += countMarkers(value[i]);
    return n;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) n += memberMarkers(key, record[key]);
  return n;
}

/** The markers of the member `key` of an object: the member itself when it is one, else those inside it. */
function memberMarkers(key: string, item: unknown): number {
  if (item === null || typeof item !== "object") return item !== null && item !== undefined && MARKER_KEYS.has(key) ? 1 : 0;
  return MARKER_KEYS.has(key) ? 1 : countMarkers(item);
}

const MARKER_KEYS: ReadonlySet<string> = new Set(CACHE_MARKER_KEYS);
