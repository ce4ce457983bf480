/**
 * The wire request: the exact JSON a provider receives. It is the truth for
 * caching; tests and `cachet why` look at it, not at in-memory structures.
 */
import type { NodeKind } from "../context/types.ts";

/** A wire format. Several providers share one protocol. */
export type Protocol = "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini";

/** All protocols, for validation and listings. */
export const PROTOCOLS: readonly Protocol[] = ["anthropic-messages", "openai-chat", "openai-responses", "gemini"];

/** A JSON path into a wire body, e.g. `["messages", 3, "content", 0]`. */
export type WirePath = (string | number)[];

/**
 * One cacheable element of a wire request, in the provider's cache order:
 * a tool, a system block, a message content block, the schema.
 */
export interface WireSegment {
  /** Id of the node this element renders. */
  nodeId: string;
  kind: NodeKind;
  /** Where the element sits in `body`. */
  path: WirePath;
}

/**
 * A rendered request. Cache strategies may add markers (`cache_control`,
 * `prompt_cache_key`, ...) to `body` but never move or rewrite segments.
 */
export interface WireRequest {
  protocol: Protocol;
  /** The JSON body, exactly as sent. */
  body: Record<string, unknown>;
  /** Extra non-secret HTTP headers. */
  headers: Record<string, string>;
  /**
   * Cacheable elements in the provider's cache order (Anthropic: tools, system,
   * messages; see each adapter). Prefix hashes are computed over these, with
   * cache markers stripped.
   */
  segments: WireSegment[];
}

/** Keys that mark a cache breakpoint rather than content; stripped before prefix hashing. */
export const CACHE_MARKER_KEYS: readonly string[] = ["cache_control"];
