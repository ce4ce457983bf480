/**
 * The wire hash chain of a request: one link per cacheable element, in the
 * provider's cache order, each with the element's content hash and the
 * cumulative prefix hash. Two requests share a cacheable prefix up to link i
 * exactly when their prefix hashes at i are equal; `cachet why` and the
 * cacheable maximum are computed from these chains alone.
 */
import type { WirePath, WireRequest } from "../plugin/wire.ts";
import { CACHE_MARKER_KEYS } from "../plugin/wire.ts";
import type { ChainLink } from "../session/types.ts";
import { canonicalJson } from "./canonical-json.ts";
import { chainHash, hashText } from "./hash.ts";

/** Counts tokens of a canonical JSON text; memoized by the caller per content hash. */
export type TokenCounter = (contentHash: string, text: string) => number;

/**
 * Builds the chain of a wire request. Cache markers are stripped before
 * hashing, so adding or moving a breakpoint does not change content hashes;
 * the marker's TTL is kept on the link instead.
 * @throws Error when a segment path does not exist in the body (an adapter bug).
 */
export function prefixChain(wire: WireRequest, countTokens: TokenCounter): ChainLink[] {
  const links: ChainLink[] = [];
  let previous: string | undefined;
  for (const segment of wire.segments) {
    const value = valueAt(wire.body, segment.path);
    if (value === undefined) throw new Error(`wire segment ${segment.nodeId} has no value at ${segment.path.join(".")}`);
    const text = canonicalJson(stripMarkers(value));
    const content = hashText(text);
    previous = chainHash(previous, content);
    const link: ChainLink = { nodeId: segment.nodeId, kind: segment.kind, content, prefix: previous, tokens: countTokens(content, text) };
    const ttl = markerTtl(value);
    if (ttl) link.breakpoint = ttl;
    links.push(link);
  }
  return links;
}

/**
 * Length of the longest common prefix of two chains, in links: the elements
 * the previous request could have left in the cache for this one.
 */
export function sharedPrefixLength(previous: readonly ChainLink[], current: readonly ChainLink[]): number {
  // Prefix hashes are cumulative, so equality at i implies equality before i: binary search.
  let lo = 0;
  let hi = Math.min(previous.length, current.length);
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (previous[mid - 1]!.prefix === current[mid - 1]!.prefix) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The value at a JSON path, or undefined. */
export function valueAt(body: unknown, path: WirePath): unknown {
  let node: unknown = body;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node;
}

function stripMarkers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripMarkers);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!CACHE_MARKER_KEYS.includes(k)) out[k] = stripMarkers(v);
    return out;
  }
  return value;
}

function markerTtl(value: unknown): "5m" | "1h" | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const marker = (value as { cache_control?: { ttl?: string } }).cache_control;
  if (!marker) return undefined;
  return marker.ttl === "1h" ? "1h" : "5m";
}
