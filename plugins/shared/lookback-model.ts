/**
 * A small model of Anthropic's documented cache lookup, for tests of cache
 * strategies: each request writes one entry per breakpoint (the prefix ending
 * at that block); a breakpoint reads by checking its own block, then walking
 * back one block at a time over at most 20 positions (itself included),
 * finding only entries earlier requests wrote at their own breakpoints. The
 * read is the longest prefix found by any breakpoint. Qwen's explicit cache
 * documents the same 20-block lookback.
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (How automatic prefix checking works)
 */
import { CACHE_MARKER_KEYS } from "../../src/plugin/index.ts";

/** Positions a breakpoint checks, counting itself. */
export const LOOKBACK_BLOCKS = 20;

/** One request as the cache sees it. */
export interface LookbackResult {
  /** Index (in cache order) of the last block of the longest prefix read; -1 on a miss. */
  read: number;
  /** Indexes of the blocks carrying a breakpoint. */
  breakpoints: number[];
  /** Canonical text of each block with cache markers removed, in cache order. */
  blocks: string[];
}

/** The cache of one workspace: a set of prefix entries. No TTL, no minimum length. */
export class LookbackCache {
  private readonly entries = new Set<string>();

  /** Reads, then writes the request's entries; `sections` in cache order (e.g. tools, system, messages). */
  send(body: Record<string, unknown>, sections: readonly string[]): LookbackResult {
    const { blocks, marked } = flattenBlocks(body, sections);
    const prefixes: string[] = [];
    blocks.forEach((key, i) => prefixes.push(i === 0 ? key : `${prefixes[i - 1]}\u0000${key}`));
    const breakpoints = marked.flatMap((m, i) => (m ? [i] : []));
    let read = -1;
    for (const b of breakpoints) {
      for (let q = b; q >= 0 && q > b - LOOKBACK_BLOCKS; q--) {
        if (this.entries.has(prefixes[q]!)) {
          read = Math.max(read, q);
          break;
        }
      }
    }
    for (const b of breakpoints) this.entries.add(prefixes[b]!);
    return { read, breakpoints, blocks };
  }
}

/**
 * The blocks of a body in cache order: each array element of a section is a
 * block (a string section or string message content is one block), marked
 * when it or anything inside it carries a cache marker.
 */
export function flattenBlocks(body: Record<string, unknown>, sections: readonly string[]): { blocks: string[]; marked: boolean[] } {
  const blocks: string[] = [];
  const marked: boolean[] = [];
  const add = (value: unknown): void => {
    blocks.push(JSON.stringify(stripMarkers(value)));
    marked.push(hasMarker(value));
  };
  for (const section of sections) {
    const value = body[section];
    if (value === undefined) continue;
    if (section !== "messages") {
      if (Array.isArray(value)) value.forEach(add);
      else add(value);
      continue;
    }
    for (const message of value as Record<string, unknown>[]) {
      const { content, ...rest } = message;
      // The role (and any other message field) is part of what follows; fold it into the first block.
      const head = JSON.stringify(stripMarkers(rest));
      const parts = Array.isArray(content) ? content : [content];
      parts.forEach((part, j) => {
        add(part);
        if (j === 0) blocks[blocks.length - 1] = `${head}${blocks[blocks.length - 1]}`;
      });
    }
  }
  return { blocks, marked };
}

function stripMarkers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripMarkers);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) if (!CACHE_MARKER_KEYS.includes(key)) out[key] = stripMarkers(member);
  return out;
}

function hasMarker(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasMarker);
  if (value === null || typeof value !== "object") return false;
  return Object.entries(value).some(([key, member]) => CACHE_MARKER_KEYS.includes(key) || hasMarker(member));
}
