/** The sessions table: creating, finding, listing and deleting session rows. */
import { newId } from "../context/ids.ts";
import { CachetError } from "../errors.ts";
import { NEXT_UPDATE_TIME, sessionNotFound, type StoreCore } from "./core.ts";
import { toSession, type SessionRow } from "./rows.ts";
import type { SessionGeneration, SessionRecord } from "./types.ts";

/** Columns of a new session row. */
export interface SessionInsert {
  name: string | null;
  model: string;
  parentId: string | null;
  forkPoint: string | null;
  /** Defaults to the new session's id. */
  affinityKey?: string;
}

/** Inserts a session row (?2 … ?7: id, name, model, parent, fork point, affinity key), created and updated now ({@link NEXT_UPDATE_TIME}). */
const INSERT_SESSION = `INSERT INTO sessions (id, name, model, parent_id, fork_point, affinity_key, created_at, updated_at)
  SELECT ?2, ?3, ?4, ?5, ?6, ?7, t, t FROM (SELECT ${NEXT_UPDATE_TIME} AS t) WHERE true`;

/**
 * SQL condition: the session row aliased `s` is a shell, a new session or a fork of cachet's own with no message
 * of its own, no ledger row and no fork. Its first turn has stored nothing yet, or ended before it could: a turn
 * that fails by an error (a refusal before sending, a plugin hook that throws) removes its shell
 * (src/run/stages/session.ts), one whose process ended abruptly (SIGKILL, a crash) leaves it to
 * the next turn (Store.dropAbandoned). Listings, `-c` and a bare `--fork` skip shells: a session exists for the
 * user once something is stored in it, as its `session` line says. A fork's shared messages are its parent's
 * rows, so a fork's own count only its first turn.
 */
export function emptyShell(s: string): string {
  return `(${s}.source = 'own'
    AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = ${s}.id)
    AND NOT EXISTS (SELECT 1 FROM requests r WHERE r.session_id = ${s}.id)
    AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_id = ${s}.id))`;
}

/** Session rows. Writes must run inside {@link StoreCore.write}. */
export class SessionTable {
  constructor(private readonly core: StoreCore) {}

  /** @throws CachetError SESSION_CONFLICT when the name is taken */
  checkNameFree(name: string): void {
    if (this.core.db.query("SELECT 1 FROM sessions WHERE name = ?").get(name)) {
      throw new CachetError("SESSION_CONFLICT", `a session named "${name}" already exists`, {
        hint: `continue it with \`--session ${name}\`, or pick another name`,
      });
    }
  }

  /** Inserts a session row with id `id` (a new random one by default); returns it as {@link find} would. */
  insert(row: SessionInsert, id: string = newId("s")): SessionRecord {
    const inserted = this.core.db.query(`${INSERT_SESSION} RETURNING *`).get(Date.now(), id, row.name, row.model, row.parentId, row.forkPoint, row.affinityKey ?? id) as SessionRow;
    return toSession(inserted);
  }

  /**
   * Inserts a named session row unless the name is taken (INSERT … ON CONFLICT DO NOTHING: two processes
   * starting the same new name race only for the insert).
   * @returns the new row as {@link find} would return it, or null when a session already has the name
   */
  insertNamed(row: SessionInsert & { name: string }): SessionRecord | null {
    const id = newId("s");
    const inserted = this.core.db.query(`${INSERT_SESSION} ON CONFLICT (name) DO NOTHING RETURNING *`).get(Date.now(), id, row.name, row.model, row.parentId, row.forkPoint, row.affinityKey ?? id) as SessionRow | null;
    return inserted ? toSession(inserted) : null;
  }

  /** @throws CachetError SESSION_NOT_FOUND */
  find(idOrName: string): SessionRecord {
    return toSession(this.findRow(idOrName));
  }

  /** The whole row of {@link find}: with its revision and sticky generation settings. @throws CachetError SESSION_NOT_FOUND */
  findRow(idOrName: string): SessionRow {
    // An id first, then a name: one index each. Asked in one statement (id OR name), SQLite merged both indexes
    // and sorted the result, ~100 µs before a -c turn's request instead of ~30 µs.
    const row = (this.core.db.query("SELECT * FROM sessions WHERE id = ?").get(idOrName) ?? this.core.db.query("SELECT * FROM sessions WHERE name = ?").get(idOrName)) as SessionRow | null;
    if (!row) throw sessionNotFound(idOrName);
    return row;
  }

  /** The most recently updated of cachet's own sessions, shells ({@link emptyShell}) aside. */
  latest(): SessionRecord | null {
    const row = this.latestRow();
    return row ? toSession(row) : null;
  }

  /**
   * {@link latest} when it holds a conversation (a message, or a fork's parent's), else the most recently updated
   * of cachet's own sessions that does, else {@link latest}. A session whose only turn failed before any answer (its
   * prompt rolled back, its ledger row kept) has nothing to continue: `-c` after it means the conversation before it.
   */
  latestConversation(): SessionRecord | null {
    const latest = this.latestRow();
    if (latest === null || latest.parent_id !== null || this.core.db.query("SELECT 1 FROM messages WHERE session_id = ?").get(latest.id)) return latest && toSession(latest);
    // Rare (after such a failure): the update-time index is walked back to the first session with a conversation.
    const talked = this.core.db
      .query(`SELECT * FROM sessions s WHERE source = 'own' AND (parent_id IS NOT NULL OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)) ORDER BY updated_at DESC, rowid DESC LIMIT 1`)
      .get() as SessionRow | null;
    return toSession(talked ?? latest);
  }

  private latestRow(): SessionRow | null {
    return this.core.db.query(`SELECT * FROM sessions WHERE source = 'own' AND NOT ${emptyShell("sessions")} ORDER BY updated_at DESC, rowid DESC LIMIT 1`).get() as SessionRow | null;
  }

  /** Every session, most recently updated first, shells ({@link emptyShell}) aside. */
  list(): SessionRecord[] {
    return (this.core.db.query(`SELECT * FROM sessions WHERE NOT ${emptyShell("sessions")} ORDER BY updated_at DESC, rowid DESC`).all() as SessionRow[]).map(toSession);
  }

  /** Whether the session is a shell ({@link emptyShell}); false for one that does not exist. */
  isShell(sessionId: string): boolean {
    return this.core.db.query(`SELECT 1 FROM sessions WHERE id = ? AND ${emptyShell("sessions")}`).get(sessionId) !== null;
  }

  forksOf(sessionId: string): SessionRecord[] {
    return (this.core.db.query("SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, rowid").all(sessionId) as SessionRow[]).map(toSession);
  }

  setModel(sessionId: string, model: string): void {
    this.core.touch(sessionId);
    this.core.db.query("UPDATE sessions SET model = ? WHERE id = ?").run(model, sessionId);
  }

  /** Stores the sticky generation settings; undefined clears them (none stored, as before the session's first turn). */
  setGeneration(sessionId: string, generation: SessionGeneration | undefined): void {
    this.core.touch(sessionId);
    this.core.db.query("UPDATE sessions SET generation = ? WHERE id = ?").run(generation === undefined ? null : JSON.stringify(generation), sessionId);
  }

  /** Deletes one session row (its own rows in other tables go with it by foreign key). */
  delete(sessionId: string): void {
    this.core.db.query("DELETE FROM sessions WHERE id = ?").run(sessionId);
  }

  /** The session and its forks, recursively, parents before children. */
  descendants(root: SessionRecord): SessionRecord[] {
    const out = [root];
    for (let i = 0; i < out.length; i++) out.push(...this.forksOf(out[i]!.id));
    return out;
  }
}
