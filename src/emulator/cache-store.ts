/**
 * The emulator's cache state: entries keyed by scope and prefix hash, with an
 * expiry on the emulated clock, plus per-minute request counters for
 * OpenAI-style routing, and the stored Responses API conversations. Kept in
 * SQLite (bun:sqlite, WAL) so several processes using the same file see one
 * cache, as they would see one provider; `null` path keeps it in memory.
 */
import { Database, type Statement } from "bun:sqlite";
import { preparePrivateDatabase } from "../private-files.ts";
import { retryWhileBusy } from "../sqlite-busy.ts";
import { jsonPieces } from "../wire/json-pieces.ts";

/**
 * A stored conversation's JSON is kept in rows of about this many UTF-16 code
 * units (4 Mi) or a little more, never written as one string: JavaScriptCore's
 * JSON.stringify reserves six code units per character of a string it must
 * escape and throws "Out of memory" for one of more than 2^31 / 6 (about 358
 * million) characters, such as a 500 MiB input of prose with line breaks.
 */
export const RESPONSE_PART_CHARS = 1 << 22;

/** One cache entry. */
export interface CacheEntry {
  /** Tokens of the cached prefix. */
  tokens: number;
  /** Emulated ms since epoch after which the entry is gone. */
  expiresAt: number;
  /** TTL the entry was written with, in ms (reads refresh by it). */
  ttlMs: number;
}

/** Reads and writes cache entries; every method is synchronous and cheap. */
export class CacheStore {
  private readonly db: Database;
  private readonly getStmt: Statement;
  private readonly putStmt: Statement;
  private readonly refreshStmt: Statement;
  private readonly bumpStmt: Statement;

  /**
   * @param path SQLite file (created with its directory), or null for memory.
   * @throws Error when the file cannot be opened.
   */
  constructor(path: string | null) {
    if (path !== null) preparePrivateDatabase(path);
    // Several processes (eight `cachet --emulate` runs on a fresh CACHET_HOME) may create the file at once.
    this.db = retryWhileBusy(() => openState(path), BUSY_TIMEOUT_MS);
    this.getStmt = this.db.prepare("SELECT tokens, expires_at AS expiresAt, ttl_ms AS ttlMs FROM cache_entries WHERE key = ?");
    // An entry never loses lifetime by being written again: keep the later expiry.
    this.putStmt = this.db.prepare(
      "INSERT INTO cache_entries (key, tokens, expires_at, ttl_ms) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at), ttl_ms = max(ttl_ms, excluded.ttl_ms), tokens = excluded.tokens",
    );
    this.refreshStmt = this.db.prepare("UPDATE cache_entries SET expires_at = max(expires_at, ?2 + ttl_ms) WHERE key = ?1");
    this.bumpStmt = this.db.prepare(
      "INSERT INTO route_counts (key, minute, count) VALUES (?1, ?2, 1) ON CONFLICT(key) DO UPDATE SET count = CASE WHEN minute = excluded.minute THEN count + 1 ELSE 1 END, minute = excluded.minute RETURNING count",
    );
  }

  /** The live entry under `key` at emulated time `now`, or undefined (absent or expired). */
  get(key: string, now: number): CacheEntry | undefined {
    const row = this.getStmt.get(key) as CacheEntry | null;
    return row && row.expiresAt > now ? row : undefined;
  }

  /** Writes (or extends) an entry living `ttlMs` from `now`. */
  put(key: string, tokens: number, now: number, ttlMs: number): void {
    this.putStmt.run(key, tokens, now + ttlMs, ttlMs);
  }

  /** Restarts a read entry's lifetime at `now` (reads refresh the TTL). */
  refresh(key: string, now: number): void {
    this.refreshStmt.run(key, now);
  }

  /** Runs `fn` in one transaction (one fsync for a request's writes). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /**
   * Counts one request for a routing key in the emulated minute of `now` and
   * returns the count so far in that minute (1 for the first).
   */
  countRequest(key: string, now: number): number {
    const row = this.bumpStmt.get(key, Math.floor(now / 60_000)) as { count: number };
    return row.count;
  }

  /**
   * Keeps a stored response's conversation (its input and output items, plain
   * JSON data) under its id, replacing one stored before under that id: its
   * JSON in rows of about {@link RESPONSE_PART_CHARS} code units.
   */
  putResponse(id: string, items: readonly unknown[]): void {
    this.transaction(() => {
      this.db.query("DELETE FROM stored_response_parts WHERE id = ?").run(id);
      const insert = this.db.query("INSERT INTO stored_response_parts (id, part, json) VALUES (?, ?, ?)");
      let part = 0;
      let pieces: string[] = [];
      let chars = 0;
      for (const piece of jsonPieces(items)) {
        pieces.push(piece);
        chars += piece.length;
        if (chars < RESPONSE_PART_CHARS) continue;
        insert.run(id, part++, pieces.join(""));
        pieces = [];
        chars = 0;
      }
      if (pieces.length > 0) insert.run(id, part, pieces.join(""));
    });
  }

  /**
   * The conversation stored under a response id, or undefined (never stored, or forgotten).
   * @throws RangeError when its JSON is longer than a JavaScript string can be (2^31 − 1 code units).
   */
  response(id: string): unknown[] | undefined {
    const rows = this.db.query("SELECT json FROM stored_response_parts WHERE id = ? ORDER BY part").all(id) as { json: string }[];
    if (rows.length === 0) return undefined;
    return JSON.parse(rows.length === 1 ? rows[0]!.json : rows.map((row) => row.json).join("")) as unknown[];
  }

  /** Forgets stored responses: the ids given, or every one. */
  forgetResponses(ids: readonly string[] | "all"): void {
    if (ids === "all") this.db.run("DELETE FROM stored_response_parts");
    else for (const id of ids) this.db.query("DELETE FROM stored_response_parts WHERE id = ?").run(id);
  }

  /** Forgets every entry, counter and stored response. */
  clear(): void {
    this.db.run("DELETE FROM cache_entries");
    this.db.run("DELETE FROM route_counts");
    this.db.run("DELETE FROM stored_response_parts");
  }

  /**
   * Closes the database. Its prepared statements are finalized first: SQLite defers closing a connection that still
   * has some (sqlite3_close_v2) until they are garbage-collected, and a resident process (the daemon runs many
   * `--emulate` turns) kept the file and its WAL open once per turn meanwhile.
   */
  close(): void {
    for (const statement of [this.getStmt, this.putStmt, this.refreshStmt, this.bumpStmt]) statement.finalize();
    this.db.close();
  }
}

/** Milliseconds in a TTL written as `5m` / `1h` / `30m` / `24h`. */
export function ttlMs(ttl: string): number {
  const match = /^(\d+)([smh])$/.exec(ttl);
  if (!match) throw new Error(`bad TTL ${ttl}`);
  const n = Number(match[1]);
  return n * (match[2] === "s" ? 1_000 : match[2] === "m" ? 60_000 : 3_600_000);
}

/** How long opening the state waits for another process's lock, ms. */
const BUSY_TIMEOUT_MS = 5_000;

function openState(path: string | null): Database {
  const db = new Database(path ?? ":memory:", { create: true, strict: true });
  try {
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    if (path !== null) {
      db.run("PRAGMA journal_mode = WAL");
      db.run("PRAGMA synchronous = NORMAL");
    }
    db.run("CREATE TABLE IF NOT EXISTS cache_entries (key TEXT PRIMARY KEY, tokens INTEGER NOT NULL, expires_at INTEGER NOT NULL, ttl_ms INTEGER NOT NULL) WITHOUT ROWID");
    db.run("CREATE TABLE IF NOT EXISTS route_counts (key TEXT PRIMARY KEY, minute INTEGER NOT NULL, count INTEGER NOT NULL) WITHOUT ROWID");
    // Stored Responses API conversations (stored-responses.ts): the JSON of a response's input and output items, in
    // parts numbered from 0. (Earlier versions kept it in one row of stored_responses, a table no longer read.)
    db.run("CREATE TABLE IF NOT EXISTS stored_response_parts (id TEXT NOT NULL, part INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY (id, part))");
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
