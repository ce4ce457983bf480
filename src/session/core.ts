/**
 * What every part of the store shares: the open database, its path, the write
 * transaction and the per-session revision that tells cached reads they are stale.
 */
import type { Database } from "bun:sqlite";
import { CachetError } from "../errors.ts";
import { makeQueryOnly, openDatabase, type OpenOptions } from "./database.ts";

/** The open database and the few operations every table of the store needs. */
export class StoreCore {
  /** Path of the database file. */
  readonly path: string;
  readonly db: Database;
  /**
   * Fencing tokens of the turn leases this process holds, by session. Every
   * write to such a session checks, inside its transaction, that the lease
   * row still carries the token: a process whose lease was taken over (it
   * stalled past the expiry) can no longer write to the session.
   */
  readonly fences = new Map<string, string>();

  /** What runs once the {@link write} running now commits; undefined outside one. */
  private committed: (() => void)[] | undefined;

  /** Writes waiting for the next {@link write} on this connection, by key ({@link defer}). */
  private readonly deferred = new Map<string, () => void>();

  /** The armed test fault (see {@link TEST_STORE_FAULT_ENV}), if any. */
  private readonly testFault = testStoreFault(process.env[TEST_STORE_FAULT_ENV]);

  constructor(path: string, options: OpenOptions = {}) {
    this.path = path;
    this.db = openDatabase(path, options);
  }

  /**
   * The cache named `name`, made by `make` the first time, kept as long as this connection: a resident
   * process (the daemon) keeps its connection open between commands (database.ts keepConnectionsOpen), and
   * with it what its earlier commands read and wrote, so a turn does not read and parse again what the turn
   * before it left. Only what cannot go stale (rows that never change, by key) or is checked against the
   * store before each use (a session's revision) may be kept here, and only a bounded amount of it.
   */
  kept<T>(name: string, make: () => T): T {
    let caches = keptCaches.get(this.db);
    if (caches === undefined) keptCaches.set(this.db, (caches = new Map()));
    let cache = caches.get(name) as T | undefined;
    if (cache === undefined) caches.set(name, (cache = make()));
    return cache;
  }

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction (nested calls join the outer one).
   * A failed write rolls back whole; SQLite failures the user can act on (disk
   * full, read-only or corrupt file) become STORE errors naming the file.
   */
  write<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    const injected = this.testFault?.fired(this.db);
    this.committed = [];
    const deferred = this.deferred.size > 0 ? [...this.deferred] : undefined;
    try {
      // One wrapper per connection: bun:sqlite's transaction() builds four wrappers and their properties on every call.
      const immediate = this.kept("immediate transaction", () => this.db.transaction(<R>(body: () => R): R => body()).immediate as <R>(body: () => R) => R);
      const result = immediate(() => {
        if (injected === "full") throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
        if (deferred) for (const [, run] of deferred) run();
        return fn();
      });
      // Stored with this write; rolled back, they wait for the next one.
      if (deferred) for (const [key] of deferred) this.deferred.delete(key);
      const committed = this.committed;
      this.committed = undefined;
      for (const then of committed) then();
      return result;
    } catch (error) {
      this.committed = undefined;
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string" && /^SQLITE_(FULL|READONLY|CORRUPT|NOTADB|IOERR|CANTOPEN|PERM)/.test(code)) {
        throw new CachetError("STORE", `cannot write the session store ${this.path}: ${(error as Error).message}`, {
          hint: "check free disk space and permissions; this write was rolled back whole, and what was stored before it is kept",
          cause: error,
        });
      }
      throw error;
    }
  }

  /**
   * Makes `run` the first work of the next {@link write} on this connection, whichever write that is, so that what
   * it writes is stored with that write and never alone (Store.beginSession: a session stored with its first turn's
   * prompt). A write that rolls back leaves it waiting for the one after. `key` names it for {@link cancelDeferred}.
   */
  defer(key: string, run: () => void): void {
    this.deferred.set(key, run);
  }

  /** Drops the deferred write `key` (see {@link defer}); whether it was still waiting (false once it committed). */
  cancelDeferred(key: string): boolean {
    return this.deferred.delete(key);
  }

  /**
   * Runs `then` once the {@link write} running now commits (at once outside a transaction); never when it rolls
   * back, nor inside a transaction {@link write} did not start (its outcome is not known here).
   */
  afterCommit(then: () => void): void {
    if (!this.db.inTransaction) then();
    else this.committed?.push(then);
  }

  /**
   * Bumps the session's revision and update time, after the lease fence check. The update time is now
   * (Unix epoch ms) but later than any session's, so the latest session (`-c`) is well defined even for
   * updates in the same millisecond.
   * @throws CachetError SESSION_NOT_FOUND; SESSION_CONFLICT when this process's lease on the session was taken over
   */
  touch(sessionId: string): void {
    this.fence(sessionId);
    const { changes } = this.db.query(`UPDATE sessions SET rev = rev + 1, updated_at = ${NEXT_UPDATE_TIME} WHERE id = ?2`).run(Date.now(), sessionId);
    if (changes === 0) throw sessionNotFound(sessionId);
  }

  /**
   * Checks this process's fencing token on the session's lease, when it holds one.
   * Called inside the write transaction, so no other process can take the lease between the check and the write.
   * @throws CachetError SESSION_CONFLICT naming the process that holds the lease now
   */
  fence(sessionId: string): void {
    const token = this.fences.get(sessionId);
    if (token === undefined) return;
    const row = this.db.query("SELECT token, owner_pid, host FROM turn_leases WHERE session_id = ?").get(sessionId) as { token: string; owner_pid: number; host: string } | null;
    if (row?.token === token) return;
    throw new CachetError("SESSION_CONFLICT", `this process's turn lease on session ${sessionId} was taken over${row ? ` by process ${row.owner_pid} on ${row.host}` : ""}; the write was refused`, {
      hint: "the turn stalled past its lease (another process took the session over); what was stored before stays; run the turn again with -c",
    });
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

/** The caches of {@link StoreCore.kept}, by connection. */
const keptCaches = new WeakMap<Database, Map<string, unknown>>();

/** Sets `key` in `cache` as its most recently used entry, dropping the least recently used beyond `max` entries. */
export function keepRecent<K, V>(cache: Map<K, V>, key: K, value: V, max: number): void {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > max) cache.delete(cache.keys().next().value!);
}

/**
 * SQL of a session's next update time: parameter ?1 (now, Unix epoch ms), but later than any session's
 * update time. Part of the statement that writes it, so that it costs no statement of its own.
 */
export const NEXT_UPDATE_TIME = "max(?1, (SELECT COALESCE(MAX(updated_at), 0) + 1 FROM sessions))";

/** SESSION_NOT_FOUND for an id or name. */
export function sessionNotFound(idOrName: string): CachetError {
  return new CachetError("SESSION_NOT_FOUND", `no session "${idOrName}"`, { hint: "run `cachet sessions` to list sessions" });
}

/**
 * Test hook of the e2e fault matrix (test/e2e/fault-matrix.test.ts); no user
 * sets it. `CACHET_TEST_STORE_FAULT=full@FILE` or `readonly@FILE`: from the
 * first write that starts after FILE exists, every write of this process
 * fails the way SQLite fails on a full disk (`SQLITE_FULL`, "database or disk
 * is full", raised inside the transaction so it rolls back) or on a store
 * that turned read-only (SQLite's own `SQLITE_READONLY`, through
 * `PRAGMA query_only`). The lease keeper's connection is not affected. A
 * running process cannot otherwise be made to hit a full disk or a read-only
 * file at a chosen moment (a chmod does not affect an open file, and root
 * ignores it); the store-level tests use SQLite's `max_page_count` for a real
 * SQLITE_FULL.
 */
export const TEST_STORE_FAULT_ENV = "CACHET_TEST_STORE_FAULT";

function testStoreFault(value: string | undefined): { fired(db: Database): "full" | "readonly" | undefined } | undefined {
  const match = value === undefined ? null : /^(full|readonly)@(.+)$/.exec(value);
  if (!match) return undefined;
  const kind = match[1] as "full" | "readonly";
  const trigger = match[2]!;
  let armed = false;
  return {
    fired(db) {
      if (!armed && process.getBuiltinModule("node:fs").existsSync(trigger)) {
        armed = true;
        if (kind === "readonly") makeQueryOnly(db);
      }
      return armed ? kind : undefined;
    },
  };
}
