/**
 * Cache strategies: pure functions of the rendered request that add cache
 * markers (breakpoints, TTLs) and affinity keys. They never move, reorder or
 * rewrite content.
 */
import type { RequestContext } from "../context/types.ts";
import type { Protocol, WireRequest } from "./wire.ts";

/** A cache strategy registered by a plugin. */
export interface CacheStrategySpec {
  /** Unique id, e.g. `anthropic-breakpoints`. */
  id: string;
  /** Protocols whose wire requests it understands. */
  protocols: Protocol[];
  /** Provider ids it applies to; absent means every provider of those protocols. */
  providers?: string[];
  /**
   * Returns the wire request with markers added. Must be pure and
   * deterministic: a breakpoint that existed on request N stays on the same
   * node in request N+1 (CASES.md case 17).
   * @throws CachetError CACHE_CONTRACT when the result would break a provider
   *   rule (e.g. more than 4 Anthropic breakpoints).
   */
  apply(wire: WireRequest, context: RequestContext): WireRequest;
}
