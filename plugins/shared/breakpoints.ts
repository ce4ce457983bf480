/**
 * Protocol-neutral breakpoint planning for providers with explicit cache
 * markers (`cache_control` on Anthropic Messages, and on OpenAI-format
 * content parts for Qwen and OpenRouter's Anthropic/Qwen upstreams).
 *
 * The plan has up to four automatic positions, in priority order:
 *  1. tail: the last markable block of the request (the newest message, the
 *     overlay excluded). It writes this request's entry.
 *  2. previous tail: the last markable block before the newest assistant
 *     message, which is exactly where the previous request put its tail (that
 *     request was this log up to, but not including, the answer it got). Its
 *     entry is read at the breakpoint itself, so no lookback window is needed
 *     however many blocks the last turn added, and a breakpoint of request N
 *     stays on the same block in request N+1 (CASES.md case 17).
 *  3. system: the last markable block of the stable system prompt.
 *  4. tools: the last tool definition.
 * Marks already in the body (manual marks) are kept and count toward the
 * provider's limit; automatic positions are dropped from the lowest priority
 * up until the total fits.
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 */
import { CachetError, ListMemo, type WirePath, type WireRequest } from "../../src/plugin/index.ts";

/** Breakpoint lifetime. Longer entries must come before shorter ones in cache order. */
export type Ttl = "5m" | "1h";

/** A cache mark in a body: where it is and its TTL. Path `[]` is a top-level (automatic-caching) mark. */
export interface CacheMark {
  path: WirePath;
  ttl: Ttl;
}

/** A message as the planner sees it: its role and the paths of its blocks that may carry a mark. */
export interface MarkableMessage {
  role: string;
  /** Paths of markable blocks, in order; the overlay and unmarkable blocks left out. */
  blocks: WirePath[];
}

/** The automatic positions of a request, before the limit is applied. */
export interface RollingPositions {
  tail?: WirePath;
  previousTail?: WirePath;
}

/**
 * Tail and previous tail of a log (see the module comment). The previous
 * tail is the last markable block before the newest `assistant` message; it
 * is absent on the first turn. Deterministic: depends on roles and block
 * paths only.
 */
export function rollingPositions(messages: readonly MarkableMessage[]): RollingPositions {
  const out: RollingPositions = {};
  const tail = lastBlock(messages, messages.length);
  if (tail) out.tail = tail;
  let answer = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      answer = i;
      break;
    }
  }
  if (answer > 0) {
    const previous = lastBlock(messages, answer);
    if (previous && !samePath(previous, tail)) out.previousTail = previous;
  }
  return out;
}

/**
 * Every `cache_control` mark in a body, in cache order: the sections in the
 * order given (e.g. tools, system, messages), each walked depth-first with a
 * block's nested marks before the block's own (a block's prefix ends after
 * its children), then a top-level mark (automatic caching, which lands on the
 * last block) last.
 * @throws CachetError CACHE_CONTRACT on a `cache_control` that is not an object or has an unknown `ttl`.
 */
export function findCacheMarks(body: Record<string, unknown>, sections: readonly string[]): CacheMark[] {
  const marks: CacheMark[] = [];
  for (const section of sections) {
    if (body[section] !== undefined) walk(body[section], [section], marks);
  }
  if (body.cache_control !== undefined) marks.push({ path: [], ttl: ttlOf(body.cache_control, []) });
  return marks;
}

/** Number of cache breakpoints a body carries, counted at block level (CASES.md case 15). */
export function countBreakpoints(body: Record<string, unknown>, sections: readonly string[]): number {
  return findCacheMarks(body, sections).length;
}

/** What {@link planBreakpoints} needs. */
export interface BreakpointPlanInput {
  /** Automatic positions, highest priority first; absent ones already left out. */
  candidates: WirePath[];
  /** Marks already in the body. */
  manual: CacheMark[];
  /** TTL asked for by the request's cache settings. */
  ttl: Ttl;
  /** The provider's breakpoint limit (4 on Anthropic and Qwen). */
  max: number;
  /** Cache order of the body's sections, as for {@link findCacheMarks}. */
  sections: readonly string[];
  /** Provider name for error messages. */
  provider: string;
}

/**
 * Chooses the automatic marks to add. A candidate that already carries a
 * manual mark is skipped (it is already a breakpoint); the rest are kept in
 * priority order while manual + automatic ≤ `max`. Each automatic mark takes
 * the requested TTL, except that it is `1h` when a manual `1h` mark follows it
 * and `5m` when a manual `5m` mark precedes it, so 1h marks always come before
 * 5m ones in cache order.
 * @returns the automatic marks, in cache order.
 * @throws CachetError CACHE_CONTRACT when the manual marks alone exceed `max`
 *   or put a 1h mark after a 5m one (the provider would answer HTTP 400).
 */
export function planBreakpoints(input: BreakpointPlanInput): CacheMark[] {
  const { manual, max, sections, provider } = input;
  if (manual.length > max) {
    throw new CachetError("CACHE_CONTRACT", `${manual.length} cache_control marks in the ${provider} request; at most ${max} are allowed`, {
      hint: "remove manual cache_control marks, or put one only on the last block of a message (not on every block)",
    });
  }
  assertTtlOrder(manual, sections, provider);
  const budget = max - manual.length;
  const chosen: WirePath[] = [];
  for (const path of input.candidates) {
    if (chosen.length >= budget) break;
    if (manual.some((m) => samePath(m.path, path)) || chosen.some((c) => samePath(c, path))) continue;
    chosen.push(path);
  }
  const marks = chosen.map((path): CacheMark => {
    const before = manual.filter((m) => comparePaths(m.path, path, sections) < 0);
    const after = manual.filter((m) => comparePaths(m.path, path, sections) > 0);
    if (before.some((m) => m.ttl === "5m")) return { path, ttl: "5m" };
    if (after.some((m) => m.ttl === "1h")) return { path, ttl: "1h" };
    return { path, ttl: input.ttl };
  });
  return marks.sort((a, b) => comparePaths(a.path, b.path, sections));
}

/**
 * The client-side assert run on a finished body before it is sent: at most
 * `max` marks counted at block level, and no 1h mark after a 5m one.
 * @throws CachetError CACHE_CONTRACT when either rule is broken.
 */
export function assertBreakpoints(body: Record<string, unknown>, sections: readonly string[], max: number, provider: string): void {
  assertMarks(findCacheMarks(body, sections), sections, max, provider);
}

/**
 * {@link assertBreakpoints} on a list of marks already known (the manual
 * marks found plus the automatic ones added), in any order.
 * @throws CachetError CACHE_CONTRACT when either rule is broken.
 */
export function assertMarks(list: readonly CacheMark[], sections: readonly string[], max: number, provider: string): void {
  const marks = [...list].sort((a, b) => comparePaths(a.path, b.path, sections));
  if (marks.length > max) {
    throw new CachetError("CACHE_CONTRACT", `${marks.length} cache_control marks in the ${provider} request; at most ${max} are allowed`, {
      hint: "remove manual cache_control marks, or put one only on the last block of a message (not on every block)",
    });
  }
  assertTtlOrder(marks, sections, provider);
}

/**
 * Checks that no 1h mark follows a 5m mark in cache order.
 * @throws CachetError CACHE_CONTRACT naming both marks.
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (Mixing different TTLs)
 */
export function assertTtlOrder(marks: readonly CacheMark[], sections: readonly string[], provider: string): void {
  const ordered = [...marks].sort((a, b) => comparePaths(a.path, b.path, sections));
  const firstShort = ordered.find((m) => m.ttl === "5m");
  if (!firstShort) return;
  const lateLong = ordered.find((m) => m.ttl === "1h" && comparePaths(m.path, firstShort.path, sections) > 0);
  if (lateLong) {
    throw new CachetError(
      "CACHE_CONTRACT",
      `a 1h cache_control mark at ${describePath(lateLong.path)} follows a 5m mark at ${describePath(firstShort.path)} in the ${provider} request; 1h marks must come first`,
      { hint: "use one TTL for every mark (--cache-ttl), or move the 1h marks before the 5m ones (tools → system → messages)" },
    );
  }
}

/**
 * Orders two paths in cache order: by section (in `sections` order, the
 * top-level path `[]` last), then index by index; when one path contains the
 * other, the inner (longer) one comes first.
 */
export function comparePaths(a: WirePath, b: WirePath, sections: readonly string[]): number {
  const rank = (p: WirePath): number => (p.length === 0 ? sections.length : Math.max(0, sections.indexOf(String(p[0]))));
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  const n = Math.min(a.length, b.length);
  for (let i = 1; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (typeof x === "number" && typeof y === "number") return x - y;
    return String(x) < String(y) ? -1 : 1;
  }
  return b.length - a.length;
}

/** True when both paths name the same element. */
export function samePath(a: WirePath | undefined, b: WirePath | undefined): boolean {
  return a !== undefined && b !== undefined && a.length === b.length && a.every((key, i) => key === b[i]);
}

/**
 * True when `path` is, contains or lies inside one of the request's overlay
 * segments. Segments are in cache order and the overlay comes after the last
 * log message (DESIGN.md, "volatile overlay"), so its segments are the
 * trailing ones: a long request's thousands of others are not looked at.
 */
export function isOverlay(wire: WireRequest, path: WirePath): boolean {
  let overlays = overlayPaths.get(wire);
  if (!overlays) {
    overlays = [];
    const segments = wire.segments;
    for (let i = segments.length - 1; i >= 0 && segments[i]!.kind === "overlay"; i--) overlays.push(segments[i]!.path);
    overlayPaths.set(wire, overlays);
  }
  return overlays.some((o) => startsWith(path, o) || startsWith(o, path));
}

// The overlay segments of a request, found once rather than once per block.
const overlayPaths = new WeakMap<WireRequest, WirePath[]>();

/**
 * A copy of `body` with `cache_control` set on each mark's element; `marker`
 * builds the value for a TTL. Copy-on-write: only the containers along each
 * marked path are copied, so marking a long request costs the same as a short
 * one, and the input (whose parts adapters may share between requests) is
 * never changed.
 * @throws CachetError INTERNAL when a mark's path does not exist.
 */
export function applyMarks(body: Record<string, unknown>, marks: readonly CacheMark[], marker: (ttl: Ttl) => Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  const copied = new Set<unknown>([out]);
  for (const mark of marks) {
    let node: Record<string | number, unknown> = out;
    for (const key of mark.path) {
      const child = node[key];
      if (child === null || typeof child !== "object") throw new CachetError("INTERNAL", `no element at ${describePath(mark.path)} to mark`);
      let copy = child as Record<string | number, unknown>;
      if (!copied.has(child)) {
        // slice copies in bulk: a long session's messages array is thousands of elements, and spreading is several times slower.
        copy = (Array.isArray(child) ? child.slice() : { ...child }) as Record<string | number, unknown>;
        copied.add(copy);
        node[key] = copy;
      }
      node = copy;
    }
    if (Array.isArray(node)) throw new CachetError("INTERNAL", `no element at ${describePath(mark.path)} to mark`);
    node.cache_control = marker(mark.ttl);
  }
  return out;
}

/** The object at `path` in `body`, or undefined. */
export function elementAt(body: unknown, path: WirePath): Record<string, unknown> | undefined {
  let node: unknown = body;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node !== null && typeof node === "object" && !Array.isArray(node) ? (node as Record<string, unknown>) : undefined;
}

/** `messages[3].content[1]` style, for messages. */
export function describePath(path: WirePath): string {
  if (path.length === 0) return "the top level";
  return path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? key : `.${key}`)).join("");
}

function lastBlock(messages: readonly MarkableMessage[], end: number): WirePath | undefined {
  for (let i = end - 1; i >= 0; i--) {
    const blocks = messages[i]!.blocks;
    if (blocks.length > 0) return blocks[blocks.length - 1];
  }
  return undefined;
}

/**
 * Marks on the elements that can carry one: each element of a section (a
 * tool, a system block, a message), the blocks of its `content` array, and
 * the parts of a block's own `content` array (tool_result). Nothing deeper is
 * a breakpoint (a property named `cache_control` inside a tool's JSON Schema
 * is not one), and not descending keeps the scan proportional to the blocks.
 * A block's nested marks come before its own (its prefix ends after them).
 */
function walk(node: unknown, path: WirePath, marks: CacheMark[]): void {
  if (!Array.isArray(node)) return;
  const section = String(path[0]);
  let scan = scans.get(section);
  if (!scan) scans.set(section, (scan = new ListMemo((element: unknown, i: number) => elementMarks(element, [...path, i]))));
  for (const found of scan.map(node).results) for (const m of found) marks.push(m);
}

/** The marks one element of a section carries, nested ones first; frozen, as a memo keeps them. */
function elementMarks(node: unknown, path: WirePath): readonly CacheMark[] {
  if (node === null || typeof node !== "object") return NO_MARKS;
  const element = node as Record<string, unknown>;
  const marks: CacheMark[] = [];
  const content = element.content;
  if (Array.isArray(content)) {
    for (let j = 0; j < content.length; j++) {
      const block = content[j] as Record<string, unknown> | null;
      if (block === null || typeof block !== "object") continue;
      const parts = block.content;
      if (Array.isArray(parts)) {
        for (let k = 0; k < parts.length; k++) {
          const part = parts[k] as Record<string, unknown> | null;
          if (part !== null && typeof part === "object" && part.cache_control !== undefined) mark(marks, [...path, "content", j, "content", k], part.cache_control);
        }
      }
      if (block.cache_control !== undefined) mark(marks, [...path, "content", j], block.cache_control);
    }
  }
  if (element.cache_control !== undefined) mark(marks, path, element.cache_control);
  return marks.length === 0 ? NO_MARKS : Object.freeze(marks.map((m) => Object.freeze({ ...m, path: Object.freeze(m.path) as WirePath })));
}

const NO_MARKS: readonly CacheMark[] = Object.freeze([]);

// Each section's marks per element, kept for the elements of each conversation's last request (elements are
// never mutated: marks go on copies), so the scan of a long session visits only its new elements.
const scans = new Map<string, ListMemo<unknown, readonly CacheMark[]>>();

function mark(marks: CacheMark[], path: WirePath, control: unknown): void {
  marks.push({ path, ttl: ttlOf(control, path) });
}

function ttlOf(control: unknown, path: WirePath): Ttl {
  if (control === null || typeof control !== "object") {
    throw new CachetError("CACHE_CONTRACT", `cache_control at ${describePath(path)} is not an object`, {
      hint: 'write it as {"type":"ephemeral"} or {"type":"ephemeral","ttl":"1h"}',
    });
  }
  const ttl = (control as Record<string, unknown>).ttl;
  if (ttl === undefined || ttl === "5m") return "5m";
  if (ttl === "1h") return "1h";
  throw new CachetError("CACHE_CONTRACT", `cache_control at ${describePath(path)} has ttl ${JSON.stringify(ttl)}; only "5m" and "1h" exist`, {
    hint: 'use "5m" or "1h"',
  });
}

function startsWith(path: WirePath, prefix: WirePath): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => key === path[i]);
}
