/**
 * Which recorded session a proxied request belongs to. First the client's
 * affinity key (`metadata.user_id`, `prompt_cache_key`, or a session-id
 * header such as `x-session-id`); failing that, the request's log: a request
 * whose messages start with the messages of an earlier request joins that
 * request's session (the next turn of a conversation re-sends the whole
 * history, so its log extends the previous one even when the client changed
 * its system prompt or tools, which is exactly what `cachet why` must see).
 * Otherwise it starts a new session.
 */
import type { Protocol } from "../plugin/wire.ts";
import type { ChainLink } from "../session/types.ts";
import { chainHash, type Hash64, hashText } from "../wire/hash.ts";
import { HEAD_KINDS } from "../wire/request-segments.ts";

/** How a request's session was found. */
export type SessionVia = "affinity-key" | "header" | "log" | "new";

/** The client's session identity in one request. */
export interface AffinityKey {
  /** The value, e.g. Claude Code's `user_..._session_...`. */
  value: string;
  /** `affinity-key` when it is in the body (it is also what the provider routes on), `header` otherwise. */
  via: "affinity-key" | "header";
}

/**
 * The affinity key of a request: `metadata.user_id` (Anthropic),
 * `prompt_cache_key` (OpenAI chat and responses, Kimi, xAI), `session_id`
 * (OpenRouter), else a header whose name ends in `session-id` / `session_id`.
 * @see https://platform.openai.com/docs/guides/prompt-caching (prompt_cache_key)
 * @see https://docs.claude.com/en/api/messages (metadata.user_id)
 */
export function affinityKeyOf(protocol: Protocol, body: Record<string, unknown>, headers: Headers): AffinityKey | undefined {
  const fromBody =
    protocol === "anthropic-messages" ? (body.metadata as { user_id?: unknown } | undefined)?.user_id : (body.prompt_cache_key ?? body.session_id);
  if (typeof fromBody === "string" && fromBody !== "") return { value: fromBody, via: "affinity-key" };
  let header: string | undefined;
  headers.forEach((value, name) => {
    if (header === undefined && value !== "" && /session[-_]?id$/i.test(name)) header = value;
  });
  return header === undefined ? undefined : { value: header, via: "header" };
}

/** Most log prefix hashes remembered; the oldest are forgotten first. */
const LOG_MEMORY = 1_000_000;

/** Remembers recorded sessions by affinity key and by log prefix hashes. In memory, per proxy process. */
export class SessionFinder {
  private readonly byKey = new Map<string, string>();
  private readonly byLog = new Map<Hash64, string>();

  /**
   * The session of a request, or undefined for a new one. A key seen before
   * wins; a new key is a new session, whatever the log says.
   */
  find(key: AffinityKey | undefined, scope: string, chain: readonly ChainLink[]): { sessionId: string | undefined; via: SessionVia } {
    if (key) {
      const known = this.byKey.get(key.value);
      return { sessionId: known, via: known ? key.via : "new" };
    }
    const hashes = logHashes(scope, chain);
    for (let i = hashes.length - 1; i >= 0; i--) {
      const known = this.byLog.get(hashes[i]!);
      if (known) return { sessionId: known, via: "log" };
    }
    return { sessionId: undefined, via: "new" };
  }

  /** Records that a request with this key, scope and chain belongs to `sessionId`. */
  remember(sessionId: string, key: string | undefined, scope: string, chain: readonly ChainLink[]): void {
    if (key !== undefined) this.byKey.set(key, sessionId);
    for (const hash of logHashes(scope, chain)) {
      // Re-inserting moves the hash to the newest end, so forgetting drops the least recently seen.
      this.byLog.delete(hash);
      this.byLog.set(hash, sessionId);
    }
    if (this.byLog.size > LOG_MEMORY) {
      let excess = this.byLog.size - LOG_MEMORY;
      for (const hash of this.byLog.keys()) {
        if (excess-- <= 0) break;
        this.byLog.delete(hash);
      }
    }
  }
}

/**
 * Cumulative hashes over the log elements only (system, tools and schema left
 * out), seeded with the scope (the provider): two protocols may write the same
 * first message with the same bytes, but a conversation does not change provider.
 */
function logHashes(scope: string, chain: readonly ChainLink[]): Hash64[] {
  const out: Hash64[] = [];
  let previous: Hash64 | undefined = hashText(scope);
  for (const link of chain) {
    if (HEAD_KINDS.has(link.kind)) continue;
    previous = chainHash(previous, link.content);
    out.push(previous);
  }
  return out;
}
