/**
 * What every part of the store shares: the open database, its path, the write
 * transaction and the per-session revision that tells cached reads they are stale.
 */
import type { Database } from "bun:sqlite";
import { CachetError } from "../errors.ts";
import { openDatabase, type OpenOptions } from "./database.ts";

/** The open database and the few operations every table of the store needs. */
export class StoreCore {
  /** Path of the database file. */
  readonly path: string;
  readonly db: Database;

  constructor(path: string, options: OpenOptions = {}) {
    this.path = path;
    this.db = openDatabase(path, options);
  }

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction (nested calls join the outer one).
   * A failed write rolls back whole; SQLite failures the user can act on (disk
   * full, read-only or corrupt file) become STORE errors naming the file.
   */
  write<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    try {
      return this.db.transaction(fn).immediate();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string" && /^SQLITE_(FULL|READONLY|CORRUPT|NOTADB|IOERR|CANTOPEN|PERM)/.test(code)) {
        throw new CachetError("STORE", `cannot write the session store ${this.path}: ${(error as Error).message}`, {
          hint: "check free disk space and permissions; nothing already stored was changed",
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Bumps the session's revision and update time. @throws CachetError SESSION_NOT_FOUND */
  touch(sessionId: string): void {
    const { changes } = this.db.query("UPDATE sessions SET rev = rev + 1, updated_at = ? WHERE id = ?").run(this.nextUpdateTime(), sessionId);
    if (changes === 0) throw sessionNotFound(sessionId);
  }

  /**
   * Now, in Unix epoch ms, but later than any session's update time, so the
   * latest session (`-c`) is well defined even for updates in the same millisecond.
   */
  nextUpdateTime(): number {
    const { latest } = this.db.query("SELECT MAX(updated_at) AS latest FROM sessions").get() as { latest: number | null };
    return Math.max(Date.now(), (latest ?? 0) + 1);
  }

  /** The session's revision (bumped by every write to it). @throws CachetError SESSION_NOT_FOUND */
  rev(sessionId: string): number {
    const row = this.db.query("SELECT rev FROM sessions WHERE id = ?").get(sessionId) as { rev: number } | null;
    if (!row) throw sessionNotFound(sessionId);
    return row.rev;
  }

  /** The STORE error for a reference between rows that no longer holds. */
  inconsistent(what: string): CachetError {
    return new CachetError("STORE", `the store is inconsistent: ${what}`, { hint: `move ${this.path} away and report the problem` });
  }
}

/** SESSION_NOT_FOUND for an id or name. */
export function sessionNotFound(idOrName: string): CachetError {
  return new CachetError("SESSION_NOT_FOUND", `no session "${idOrName}"`, { hint: "run `cachet sessions` to list sessions" });
}
