/**
 * The wire hash chain of a request: one link per cacheable element, in the
 * provider's cache order, each with the element's content hash and the
 * cumulative prefix hash. Two requests share a cacheable prefix up to link i
 * exactly when their prefix hashes at i are equal; `cachet why` and the
 * cacheable maximum are computed from these chains alone.
 */
import type { WirePath, WireRequest, WireSegment } from "../plugin/wire.ts";
import { CACHE_MARKER_KEYS } from "../plugin/wire.ts";
import type { ChainLink } from "../session/types.ts";
import { canonicalJson } from "./canonical-json.ts";
import { chainHash, hashJson } from "./hash.ts";

/**
 * Counts the tokens of an element's estimate text (see {@link estimateText});
 * memoized by the caller per content hash.
 */
export type TokenCounter = (contentHash: string, text: string) => number;

/** Kinds whose tokens are their text: providers count the words, not the JSON around them. */
const TEXT_KINDS = new Set(["text", "overlay", "thinking", "tool_result", "system"]);

/**
 * The text whose tokens estimate an element: for text-like elements their
 * string values (the JSON wrapping is the provider's own, and counting it
 * would overstate e.g. a short overlay several times); for structured ones
 * (tools, schema, tool calls) their canonical JSON.
 */
export function estimateText(value: unknown, kind: string): string {
  if (!TEXT_KINDS.has(kind)) return canonicalJson(stripMarkers(value));
  const parts: string[] = [];
  collectStrings(value, parts);
  // One string (a text block) is returned as it is: joining would copy it, and a huge input is held until counted.
  return parts.length === 1 ? parts[0]! : parts.join("\n");
}

function collectStrings(value: unknown, out: string[]): void {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const item of value) collectStrings(item, out);
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) if (key !== "type" && !CACHE_MARKER_KEYS.includes(key)) collectStrings(item, out);
  }
}

/**
 * Memory of earlier chains, so a long session is hashed in time proportional
 * to its new elements: content hashes of wire elements by object identity
 * (adapters reuse the objects of unchanged log messages, and nothing mutates
 * them), and the previous chain, whose links are reused while the new request
 * starts with the same elements.
 */
export interface ChainMemo {
  contents: WeakMap<object, string>;
  previous?: ChainLink[];
  /** The previous request's segments and body, for the identity fast path. */
  segments?: WireSegment[];
  body?: Record<string, unknown>;
  /** Indices of the links the last call made afresh (the others are the previous chain's own link objects at the same places). */
  made?: number[];
  /** {@link tokenTotal} of `previous`, once its tokens are counted (the caller's business). */
  total?: number;
  /**
   * `path[0]` and `path[1]` of the previous request's segments, by place: read from these
   * arrays, an unchanged run costs no visit to its segments' objects.
   */
  sections?: unknown[];
  indices?: unknown[];
}

/**
 * The sum of a chain's token estimates. A chain never changes once its
 * tokens are counted (the ledger keeps it as recorded): each is summed once
 * per process, or its total is told ({@link rememberTokenTotal}).
 */
export function tokenTotal(chain: readonly ChainLink[]): number {
  const known = totals.get(chain);
  if (known !== undefined && known.links === chain.length) return known.tokens;
  let tokens = 0;
  for (const link of chain) tokens += link.tokens;
  totals.set(chain, { links: chain.length, tokens });
  return tokens;
}

/** Records the {@link tokenTotal} of a chain whose tokens are counted, worked out otherwise (from the previous chain's). */
export function rememberTokenTotal(chain: readonly ChainLink[], tokens: number): void {
  totals.set(chain, { links: chain.length, tokens });
}

// Chains summed, with their length then (a chain still being built is summed again once it grew).
const totals = new WeakMap<readonly ChainLink[], { links: number; tokens: number }>();

/** A new, empty {@link ChainMemo}. */
export function chainMemo(): ChainMemo {
  return { contents: new WeakMap() };
}

/**
 * Builds the chain of a wire request. Cache markers are stripped before
 * hashing, so adding or moving a breakpoint does not change content hashes;
 * the marker's TTL is kept on the link instead.
 * @throws Error when a segment path does not exist in the body (an adapter bug).
 */
export function prefixChain(wire: WireRequest, countTokens: TokenCounter, memo: ChainMemo = chainMemo()): ChainLink[] {
  let links: ChainLink[] = [];
  const made: number[] = [];
  const before = memo.previous ?? [];
  let previous: string | undefined;
  let reusing = true;
  const segments = wire.segments;
  const lastSegments = memo.segments ?? [];
  // Updated in place (a place in a run keeps its segment, so its path); until the call ends they
  // describe neither request, so a call that throws leaves no run to take over.
  const sections = memo.sections ?? [];
  const indices = memo.indices ?? [];
  memo.segments = undefined;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    // A run of the same segments inside top-level elements that are the very objects of
    // last time (old messages): same bytes, same markers, since nothing mutates them.
    // Their links are taken over in bulk, so a long history costs a few pointer compares.
    if (reusing && lastSegments[i] === segment) {
      const end = unchangedRunEnd(segments, lastSegments, sections, indices, i, wire.body, memo.body);
      if (end > i) {
        // While every link so far is the previous chain's own at its place, one bulk copy takes them all.
        if (made.length === 0) links = before.slice(0, end);
        else for (let k = i; k < end; k++) links.push(before[k]!);
        previous = before[end - 1]!.prefix;
        i = end - 1;
        continue;
      }
    }
    sections[i] = segment.path[0];
    indices[i] = segment.path[1];
    const value = valueAt(wire.body, segment.path);
    if (value === undefined) throw new Error(`wire segment ${segment.nodeId} has no value at ${segment.path.join(".")}`);
    const ttl = markerTtl(value);
    // A marked element is a copy made by a cache strategy; its unmarked original carries the memo.
    const key = value !== null && typeof value === "object" && !ttl ? (value as object) : undefined;
    let content = key ? memo.contents.get(key) : undefined;
    if (content === undefined) {
      content = hashJson(stripMarkers(value));
      if (key) memo.contents.set(key, content);
    }
    const old = before[i];
    reusing &&= old !== undefined && old.nodeId === segment.nodeId && old.content === content;
    previous = reusing ? old!.prefix : chainHash(previous, content);
    if (reusing && old!.breakpoint === ttl) {
      links.push(old!);
      continue;
    }
    const tokens = reusing ? old!.tokens : countTokens(content, estimateText(value, segment.kind));
    const link: ChainLink = { nodeId: segment.nodeId, kind: segment.kind, content, prefix: previous, tokens };
    if (ttl) link.breakpoint = ttl;
    made.push(links.length);
    links.push(link);
  }
  sections.length = indices.length = segments.length;
  memo.made = made;
  memo.total = undefined;
  memo.previous = links;
  memo.sections = sections;
  memo.indices = indices;
  memo.segments = segments;
  memo.body = wire.body;
  return links;
}

/**
 * End (exclusive) of the run from `from` of segments that are the previous
 * request's own segment objects at the same places and lie inside top-level
 * elements (a message, a tool) that are the very objects of the previous body
 * at the same index. One pointer compare per segment, the path's first two
 * keys read from `sections` and `indices` (the places' paths last time): the
 * system messages a chat adapter renders afresh do not stop the run of the messages after them.
 */
function unchangedRunEnd(
  segments: readonly WireSegment[],
  last: readonly WireSegment[],
  sections: readonly unknown[],
  indices: readonly unknown[],
  from: number,
  body: Record<string, unknown>,
  before: Record<string, unknown> | undefined,
): number {
  if (!before) return from;
  let end = from;
  let section: unknown;
  let index: unknown;
  let now: unknown[] | undefined;
  let then: unknown[] | undefined;
  const n = Math.min(segments.length, last.length);
  while (end < n) {
    if (segments[end] !== last[end]) break;
    const key = sections[end];
    const at = indices[end];
    if (at !== index || key !== section) {
      if (typeof at !== "number") break;
      if (key !== section) {
        section = key;
        const a = body[key as string];
        const b = before[key as string];
        now = Array.isArray(a) ? a : undefined;
        then = Array.isArray(b) ? b : undefined;
      }
      index = at;
      if (now === undefined || then === undefined) break;
      const element = now[at];
      if (element === undefined || element !== then[at]) break;
    }
    end++;
  }
  return end;
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
  for (let i = 0; i < path.length; i++) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string | number, unknown>)[path[i]!];
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
