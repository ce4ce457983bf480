/**
 * What cachet says about the sessions `cachet proxy` recorded (src/session/recorded.ts) where a command wants one of
 * its own: such a session holds another client's requests and no log or stable prefix, so cachet never continues,
 * forks or compacts it, and the commands that default to "the latest session" pick the latest of cachet's own.
 */
import { CachetError } from "../errors.ts";
import { printable } from "../printable.ts";
import type { Store } from "./store.ts";

/** What the user asked to do with a recorded session, for the hint of {@link recordedRefusal}. */
export type RecordedAction = "continue" | "fork" | "compact" | "answer with --tool-result";

/**
 * The refusal for `action` on session `sessionId` when `cachet proxy` recorded it; undefined for one of cachet's own.
 * Reads only: nothing of the session (not even its turn lease) is touched.
 * @param flags the flags that named the session, as the user wrote them (`--session`, `-c and --session`, `--fork`)
 * @returns CachetError SESSION_RECORDED (exit 2) naming the session, its client and what to do instead
 */
export function recordedRefusal(store: Store, sessionId: string, action: RecordedAction, flags: string): CachetError | undefined {
  const row = store.database.query("SELECT source, client FROM sessions WHERE id = ?").get(sessionId) as { source: string; client: string | null } | null;
  if (row?.source !== "recorded") return undefined;
  const from = row.client === null ? "" : ` from ${printable(row.client)}`;
  const reads = `\`cachet cost ${sessionId}\` and \`cachet why ${sessionId}\` read the recorded session`;
  const hint =
    action === "compact"
      ? `${reads}; \`cachet compact\` compacts cachet's own (SOURCE own in \`cachet sessions\`)`
      : action === "answer with --tool-result"
        ? `${reads}; --tool-result answers the tool calls of cachet's own (SOURCE own in \`cachet sessions\`)`
        : `${reads}; a prompt without ${flags} starts a new one`;
  return new CachetError("SESSION_RECORDED", `session ${sessionId} was recorded by \`cachet proxy\`${from}: cachet never continues, forks or compacts a recorded session`, { hint });
}

/** The recorded sessions a store holds when it holds none of cachet's own. */
export interface OnlyRecorded {
  /** How many, at least 1. */
  count: number;
  /** The most recently updated one's id. */
  latest: string;
}

/** The store's recorded sessions when they are all it holds; undefined when it holds one of cachet's own, or none at all. */
export function onlyRecorded(store: Store): OnlyRecorded | undefined {
  const row = store.database
    .query("SELECT COUNT(*) AS count, (SELECT id FROM sessions WHERE source = 'recorded' ORDER BY updated_at DESC, rowid DESC LIMIT 1) AS latest FROM sessions WHERE source = 'recorded' AND NOT EXISTS (SELECT 1 FROM sessions WHERE source = 'own')")
    .get() as { count: number; latest: string | null };
  return row.count > 0 && row.latest !== null ? { count: row.count, latest: row.latest } : undefined;
}

/** "the only stored session was" / "all 3 stored sessions were", then "recorded by `cachet proxy`". */
export function onlyRecordedPhrase(only: OnlyRecorded): string {
  return `${only.count === 1 ? "the only stored session was" : `all ${only.count} stored sessions were`} recorded by \`cachet proxy\``;
}

/**
 * The error of a read command (`cost`, `why`, `sessions show`, `export`) given no session when the store holds
 * recorded sessions only: it names the latest recorded one to pass instead. Undefined when the store holds none.
 * @param command the command as typed, e.g. `cachet cost`
 * @param nothing what there is none of, e.g. "there is no session of cachet's own to show"
 * @param verb what the command does with a named recorded session, e.g. "shows"
 * @returns CachetError SESSION_NOT_FOUND (exit 2)
 */
export function onlyRecordedError(store: Store, command: string, nothing: string, verb: string): CachetError | undefined {
  const only = onlyRecorded(store);
  if (!only) return undefined;
  return new CachetError("SESSION_NOT_FOUND", `${nothing}: ${onlyRecordedPhrase(only)}, which \`${command}\` ${verb} only when named`, {
    hint: `name one: \`${command} ${only.latest}\` (the latest recorded; \`cachet sessions --recorded\` lists them)`,
  });
}
