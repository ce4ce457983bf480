/**
 * Affinity keys: body fields or headers that pin a session's requests to one
 * cache. Each helper returns a new wire request and leaves a value the body
 * or headers already carry alone (provider options may not set a body key:
 * src/plugin/owned-options.ts).
 */
import type { WireRequest } from "../../src/plugin/index.ts";

/**
 * Sets a top-level body field (e.g. `prompt_cache_key`, `session_id`) to the
 * affinity key unless the body has it already.
 */
export function withBodyKey(wire: WireRequest, field: string, key: string | undefined): WireRequest {
  if (key === undefined || wire.body[field] !== undefined) return wire;
  return { ...wire, body: { ...wire.body, [field]: key } };
}

/** Sets an HTTP header (e.g. `x-grok-conv-id`) to the affinity key unless already present (any case). */
export function withHeaderKey(wire: WireRequest, header: string, key: string | undefined): WireRequest {
  const name = header.toLowerCase();
  if (key === undefined || Object.keys(wire.headers).some((h) => h.toLowerCase() === name)) return wire;
  return { ...wire, headers: { ...wire.headers, [name]: key } };
}
