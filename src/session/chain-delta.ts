/**
 * Delta encoding of a request's wire hash chain. Request N+1 of a session
 * usually repeats request N's chain and appends a few links, so storing the
 * whole chain every turn would make a turn's cost grow with the history.
 * A row stores the number of leading links it shares with a base row plus
 * its own tail; every MAX_DEPTH rows one full chain bounds how far a read
 * has to follow bases.
 */
import type { ChainLink } from "./types.ts";

/** Longest run of delta rows before a full chain is written again. */
export const MAX_DEPTH = 16;

/** How one row stores its chain. */
export interface ChainDelta {
  /** Ledger id whose chain this one extends, or null for a full chain. */
  base: string | null;
  /** Leading links taken from the base. */
  shared: number;
  /** Deltas between this row and the last full chain (0 for a full chain). */
  depth: number;
  /** The links after the shared ones. */
  tail: ChainLink[];
}

/** A previously stored chain that a new one may extend. */
export interface ChainBase {
  id: string;
  chain: readonly ChainLink[];
  depth: number;
}

/**
 * Encodes `chain` against `base` (the session's previous request, if known).
 * Links are compared field by field, since a moved breakpoint changes a link
 * without changing its prefix hash.
 */
export function encodeChain(chain: readonly ChainLink[], base: ChainBase | undefined): ChainDelta {
  if (base === undefined || base.depth >= MAX_DEPTH) return { base: null, shared: 0, depth: 0, tail: [...chain] };
  const shared = commonLinks(base.chain, chain);
  if (shared === 0) return { base: null, shared: 0, depth: 0, tail: [...chain] };
  return { base: base.id, shared, depth: base.depth + 1, tail: chain.slice(shared) };
}

/** Rebuilds a chain from its base's chain and its own tail. */
export function decodeChain(baseChain: readonly ChainLink[], shared: number, tail: readonly ChainLink[]): ChainLink[] {
  return baseChain.slice(0, shared).concat(tail);
}

function commonLinks(a: readonly ChainLink[], b: readonly ChainLink[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  // Identity first: a caller that reuses its link objects pays one comparison per link.
  while (i < n && (a[i] === b[i] || sameLink(a[i]!, b[i]!))) i++;
  return i;
}

function sameLink(x: ChainLink, y: ChainLink): boolean {
  return x.prefix === y.prefix && x.content === y.content && x.nodeId === y.nodeId && x.kind === y.kind && x.tokens === y.tokens && x.breakpoint === y.breakpoint;
}
