/**
 * Opening the store's SQLite file: pragmas (WAL, busy timeout, foreign keys),
 * refusing another program's database, and running the migrations.
 *
 * Creation and every migration are serialized across processes: whether the
 * file is cachet's, and which migrations it still needs, is decided inside
 * one `BEGIN IMMEDIATE` transaction (SQLite's write lock), so a process never
 * sees another one's half-made schema. Read commands open the file read-only
 * and work in a read-only state directory.
 */
import { Database, constants } from "bun:sqlite";
import { CachetError } from "../errors.ts";
import { keepPrivate, preparePrivateDatabase } from "../private-files.ts";
import { retryWhileBusy } from "../sqlite-busy.ts";
import { MIGRATIONS } from "./schema.ts";

/** Options of {@link openDatabase}. */
export interface OpenOptions {
  /**
   * Open for reading only: nothing is created or changed, a missing store reads
   * as empty, and a read-only directory is read as of the store's last checkpoint
   * (SQLite's `immutable` mode, since the WAL index cannot be created there).
   */
  readonly?: boolean;
  /**
   * Leave making an existing store's files private (see {@link keepPrivate}: a store an older cachet
   * created 0644) to the caller, who calls keepPrivate once its request has left: opening an existing
   * store then loads no node:fs. A store the open creates is made private at once, as without it.
   */
  keepPrivateLater?: boolean;
}

/**
 * Opens (creating if needed) and migrates the store at `path`; with `readonly`,
 * opens it for reading only (an in-memory empty store when the file does not exist).
 * @throws CachetError STORE naming the file when it cannot be opened, is not cachet's store,
 *   is newer than this cachet, or (for writing) lives in a read-only place.
 */
export function openDatabase(path: string, options: OpenOptions = {}): Database {
  keepStatementsPrepared();
  if (options.readonly && path !== ":memory:") return openForReading(path);
  if (resident && path !== ":memory:") return residentConnection(resident, path, options.keepPrivateLater === true);
  return retryWhileBusy(() => openForWriting(path, options.keepPrivateLater === true), BUSY_TIMEOUT_MS, (error) => readOnlyInWritablePlace(error, path));
}

/**
 * Read-write connections a resident process keeps open between its commands,
 * by path, with the file's device and inode when it was opened. Undefined in
 * a process that runs one command (every cachet but the daemon).
 */
let resident: Map<string, { db: Database; file: string }> | undefined;

/** Most stores a resident process keeps open (one per state directory its clients use). */
const RESIDENT_MAX = 4;

/**
 * Keeps read-write store connections open between commands for the rest of
 * the process (the daemon, src/daemon/server.ts): a turn then skips opening
 * the file, its pragmas and preparing its statements again, and the close
 * that would checkpoint the WAL. Each open still checks that the file is the
 * one opened and its schema; that it can be written was probed when it was
 * opened (residentConnection).
 */
export function keepConnectionsOpen(): void {
  resident ??= new Map();
}

/**
 * Whether a kept connection can serve again: still open (bun:sqlite's inTransaction throws once it is closed; closing
 * it twice is harmless); one left query-only (a test's store fault, core.ts, makes it so through
 * {@link makeQueryOnly}) is made writable again. Asked without running a statement: reading `PRAGMA query_only`
 * was one more statement before every turn's request (~45 µs in the daemon, measured), and setting a flag pragma
 * unasked would expire every statement the connection keeps prepared (SQLite codes OP_Expire after one; a 2 µs
 * query took 24 µs after it, and each turn prepared its ~40 statements again).
 */
function usable(db: Database): boolean {
  try {
    void db.inTransaction;
    if (queryOnly.delete(db)) db.exec("PRAGMA query_only = OFF");
    return true;
  } catch {
    return false;
  }
}

/** Connections {@link makeQueryOnly} made query-only, which {@link usable} makes writable again before they are reused. */
const queryOnly = new WeakSet<Database>();

/**
 * Makes `db` refuse every write as a read-only store does (SQLite's own SQLITE_READONLY, through `PRAGMA query_only`):
 * the test fault of src/session/core.ts. The one way cachet sets that pragma, so that a kept connection is known to
 * be writable again without asking SQLite before each turn.
 */
export function makeQueryOnly(db: Database): void {
  db.exec("PRAGMA query_only = ON");
  queryOnly.add(db);
}

/** Closes `db`, unless it is a connection kept open between commands ({@link keepConnectionsOpen}). */
export function closeDatabase(db: Database): void {
  for (const kept of resident?.values() ?? []) if (kept.db === db) return;
  db.close();
}

/**
 * The kept connection to `path` when the file is still the one it opened (same
 * device and inode: not deleted, not replaced by another file), checked as a
 * new connection is; else a new connection, kept.
 * @throws CachetError STORE as {@link openDatabase}
 */
function residentConnection(kept: NonNullable<typeof resident>, path: string, keepPrivateLater: boolean): Database {
  const identity = () => {
    const stat = process.getBuiltinModule("node:fs").statSync(path, { throwIfNoEntry: false });
    return stat ? `${stat.dev}:${stat.ino}` : "";
  };
  const entry = kept.get(path);
  if (entry) {
    kept.delete(path);
    if (entry.file !== "" && entry.file === identity() && usable(entry.db)) {
      try {
        // No write probe: this connection passed one when it was opened, and SQLite decides at the open whether a
        // connection can write; a chmod does not affect an open file (core.ts), and the one flag that can take
        // writing away later, query_only, usable() just cleared. The probe was a write transaction every turn
        // (~20-50 µs measured before the request).
        if (check(writableSchemaState(entry.db), path)) migrate(entry.db, path);
        kept.set(path, entry);
        return entry.db;
      } catch (error) {
        entry.db.close();
        throw storeOpenError(error, path);
      }
    }
    entry.db.close();
  }
  const db = retryWhileBusy(() => openForWriting(path, keepPrivateLater), BUSY_TIMEOUT_MS, (error) => readOnlyInWritablePlace(error, path));
  if (kept.size >= RESIDENT_MAX) {
    const [oldest, first] = kept.entries().next().value!;
    kept.delete(oldest);
    first.db.close();
  }
  kept.set(path, { db, file: identity() });
  return db;
}

function openForWriting(path: string, keepPrivateLater: boolean): Database {
  let db: Database | undefined;
  try {
    db = openFile(path, keepPrivateLater);
    // The busy timeout comes first so that even switching to WAL waits for a concurrent opener.
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Another program's database is refused before anything in it changes (even its journal mode),
    // from a consistent snapshot (one read transaction).
    const due = check(writableSchemaState(db), path);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA foreign_keys = ON");
    // The process's first write starts a new WAL (the last close checkpointed it away), whose header NORMAL
    // would fsync, with the directory: 3-8 ms measured before every run's request. That write changes nothing
    // lasting, or is the schema; a power loss can only lose it (the checkpoint syncs the WAL before copying it
    // into the database), as NORMAL allows for any commit in WAL mode.
    db.exec("PRAGMA synchronous = OFF");
    // A current store takes no write lock for migrating; but a file SQLite could only open read-only
    // (a read-only directory or file) is refused now, before a turn sends anything it could not store.
    if (due) migrate(db, path);
    else probeWritable(db);
    // In WAL mode NORMAL survives a crash of the process (not of the OS) and avoids an fsync per turn.
    db.exec("PRAGMA synchronous = NORMAL");
    return db;
  } catch (error) {
    db?.close();
    throw storeOpenError(error, path);
  }
}

/**
 * The file opened read-write. An existing one is opened as it is (with `keepPrivateLater`, nothing else
 * touches the file system); a missing one, or its directory, is created private first (private-files.ts).
 */
function openFile(path: string, keepPrivateLater: boolean): Database {
  if (path === ":memory:") return new Database(path);
  try {
    const db = new Database(path, { readwrite: true });
    if (!keepPrivateLater) keepPrivate(path);
    return db;
  } catch (error) {
    if ((error as { code?: unknown }).code !== "SQLITE_CANTOPEN") throw error;
  }
  preparePrivateDatabase(path);
  return new Database(path, { create: true });
}

/**
 * `Database.query` keeps the statements of the last MAX_QUERY_CACHE_SIZE
 * distinct SQL texts prepared per connection, least recently used dropped
 * first (https://bun.com/reference/bun/sqlite/Database/MAX_QUERY_CACHE_SIZE).
 * Bun's default of 20 is below the ~40 distinct statements one turn runs, so
 * in their cyclic order every one of them was dropped before its next use and
 * prepared again on every call. The limit is per connection; a statement
 * costs a few KB.
 */
function keepStatementsPrepared(): void {
  if (Database.MAX_QUERY_CACHE_SIZE < QUERY_CACHE_SIZE) Database.MAX_QUERY_CACHE_SIZE = QUERY_CACHE_SIZE;
}

/** Distinct SQL texts whose statements a connection keeps prepared: every statement of the store's modules, with room. */
const QUERY_CACHE_SIZE = 256;

/** How long a connection waits for another process's write lock, ms. */
const BUSY_TIMEOUT_MS = 10_000;

/** What decides whether a file is cachet's store and what it still needs. */
interface SchemaState {
  version: number;
  /** Tables and indexes in the file; NaN when not counted (a store at the current version). */
  tables: number;
}

function schemaState(db: Database): SchemaState {
  const { user_version: version } = db.query("PRAGMA user_version").get() as { user_version: number };
  const { n: tables } = db.query("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
  return { version, tables };
}

/**
 * The schema state of a store opened for writing. A file at the current version is cachet's and needs
 * nothing: one read of the header's user_version says so. Any other is read again in one read transaction,
 * version and tables from the same snapshot (another process may be creating the schema meanwhile).
 */
function writableSchemaState(db: Database): SchemaState {
  const { user_version: version } = db.query("PRAGMA user_version").get() as { user_version: number };
  if (version === MIGRATIONS.length) return { version, tables: Number.NaN };
  return db.transaction(() => schemaState(db)).deferred();
}

/**
 * Refuses another program's database (tables but no cachet schema version) and a newer store.
 * @returns true when migrations are due
 */
function check(state: SchemaState, path: string): boolean {
  if (state.version === 0 && state.tables > 0) {
    throw new CachetError("STORE", `${path} is an SQLite database, but not cachet's session store`, {
      hint: "move that file away, or set CACHET_HOME to another directory",
    });
  }
  if (state.version > MIGRATIONS.length) {
    throw new CachetError("STORE", `the session store ${path} was written by a newer cachet (schema ${state.version}, this one knows ${MIGRATIONS.length})`, {
      hint: "upgrade cachet, or set CACHET_HOME to another directory",
    });
  }
  return state.version < MIGRATIONS.length;
}

function migrate(db: Database, path: string): void {
  // The check and every migration under the write lock, in one transaction: a concurrent opener
  // waits for all of it and then sees the finished schema, never an unversioned set of tables.
  db.transaction(() => {
    const state = schemaState(db);
    if (!check(state, path)) return;
    for (let version = state.version; version < MIGRATIONS.length; version++) db.exec(MIGRATIONS[version]!);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/**
 * Writes nothing lasting but needs write access: SQLite opens an unwritable file read-only without a word. Run on
 * every new connection (a kept one is not probed again, see residentConnection): its statements are cached
 * (db.query), and its transaction is begun and ended by hand, since bun:sqlite's transaction() builds its wrappers
 * on every call.
 */
function probeWritable(db: Database): void {
  db.query("BEGIN IMMEDIATE").run();
  try {
    const { user_version: version } = db.query("PRAGMA user_version").get() as { user_version: number };
    db.query(`PRAGMA user_version = ${version}`).run();
    db.query("COMMIT").run();
  } catch (error) {
    if (db.inTransaction) db.query("ROLLBACK").run();
    throw error;
  }
}

function openForReading(path: string): Database {
  const fs = process.getBuiltinModule("node:fs");
  if (!fs.existsSync(path)) {
    // A state directory that is a file (CACHET_HOME set to one) holds no store, but "no sessions" would hide the mistake.
    const file = fileInTheWay(process.getBuiltinModule("node:path").dirname(path));
    if (file !== undefined) throw notADirectory(file, path);
    return emptyStore();
  }
  let db: Database | undefined;
  try {
    db = new Database(path, { readonly: true });
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    let state: SchemaState;
    try {
      state = db.transaction(() => schemaState(db!)).deferred();
    } catch (error) {
      // WAL readers need the -shm index beside the file: in a read-only directory it cannot be made, nor on a full disk.
      // There the file is read without it only when the log holds nothing the file lacks (no -wal file, or an empty
      // one: the last writer checkpointed it as it closed); else the error stands, its hint saying to free space.
      if (!unwritablePlace(error) && !(noSpace(error) && logIsEmpty(path))) throw error;
      db.close();
      db = new Database(`file:${encodeURI(path)}?immutable=1`, constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI);
      state = schemaState(db);
    }
    if (state.version === 0 && state.tables === 0) {
      db.close();
      return emptyStore();
    }
    if (check(state, path)) {
      // An older schema: upgrade it once (serialized like any migration), then read.
      db.close();
      db = undefined;
      closeDatabase(openDatabase(path));
      return openForReading(path);
    }
    return db;
  } catch (error) {
    db?.close();
    throw storeOpenError(error, path);
  }
}

/** Whether `error` says the disk (or the user's quota) is full: SQLite's own code, or one of making its -shm file. */
function noSpace(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^(SQLITE_FULL|SQLITE_IOERR_SHM(SIZE|OPEN|MAP)|ENOSPC|EDQUOT)/.test(code);
}

/** Whether the write-ahead log beside the store at `path` holds nothing: there is none, or it is empty. */
function logIsEmpty(path: string): boolean {
  return !process.getBuiltinModule("node:fs").statSync(`${path}-wal`, { throwIfNoEntry: false })?.size;
}

/** A store with no sessions, for reading before the first turn created the file. */
function emptyStore(): Database {
  const db = new Database(":memory:");
  migrate(db, ":memory:");
  return db;
}

/**
 * Whether opening for writing failed with SQLITE_READONLY although the file and its directory are writable by this
 * process: eight processes opening a fresh store at once under load (src/session/database.test.ts) saw it about once
 * in ten runs, from SQLite's setup of a file another process was creating; opened again, it is writable. A file or
 * place that is really read-only (its mode, a read-only mount) fails access(2) and is reported at once.
 */
function readOnlyInWritablePlace(error: unknown, path: string): boolean {
  const cause = (error as { cause?: { code?: unknown } }).cause ?? error;
  if (!String((cause as { code?: unknown }).code ?? "").startsWith("SQLITE_READONLY")) return false;
  const fs = process.getBuiltinModule("node:fs");
  try {
    fs.accessSync(path, fs.constants.W_OK);
    fs.accessSync(process.getBuiltinModule("node:path").dirname(path), fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function unwritablePlace(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  // EACCES, EPERM and EROFS come from creating the file 0600 before SQLite opens it (src/private-files.ts).
  return typeof code === "string" && /^(SQLITE_(READONLY|CANTOPEN)|EACCES|EPERM|EROFS)/.test(code);
}

/**
 * The STORE error for a failure to open the store at `path`, its hint fitting
 * the cause: a full disk (SQLite's `SQLITE_FULL`, or `ENOSPC`/`EDQUOT` making
 * the file), a failing read or write (`SQLITE_IOERR` and its extended codes,
 * https://sqlite.org/rescode.html#ioerr), an unwritable place, or a file that
 * may not be cachet's (any other cause, e.g. `SQLITE_NOTADB`). A CachetError
 * passes through as it is.
 */
export function storeOpenError(error: unknown, path: string): CachetError {
  if (error instanceof CachetError) return error;
  const directory = process.getBuiltinModule("node:path").dirname(path);
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message;
  // Making the state directory where a file stands (EEXIST), or a path through a file (ENOTDIR).
  const file = code === "EEXIST" || code === "ENOTDIR" ? fileInTheWay(directory) : undefined;
  if (file !== undefined) return notADirectory(file, path);
  if (unwritablePlace(error)) {
    return new CachetError("STORE", `cannot open the session store ${path} for writing: ${message}`, {
      hint: `make ${directory} and the files in it writable, or set CACHET_HOME to a writable directory (sessions, cost, why, stats and export only read)`,
      cause: error,
    });
  }
  // Opening writes (the schema, WAL mode, a probe of write access): on a full disk it fails, rolled back, and nothing stored is lost.
  if (typeof code === "string" && /^(SQLITE_FULL|ENOSPC|EDQUOT)/.test(code)) {
    return new CachetError("STORE", `cannot open the session store ${path}: ${message}`, {
      hint: `free disk space on the file system holding ${directory}, or set CACHET_HOME to a directory on another one; nothing stored was changed`,
      cause: error,
    });
  }
  if (typeof code === "string" && code.startsWith("SQLITE_IOERR")) {
    return new CachetError("STORE", `cannot open the session store ${path}: ${message} (${code})`, {
      // A full disk fails some of SQLite's writes this way too (growing the WAL index: SQLITE_IOERR_SHMSIZE).
      hint: `free disk space on the file system holding ${directory} and check the system log for disk errors, or set CACHET_HOME to a directory on another disk`,
      cause: error,
    });
  }
  return new CachetError("STORE", `cannot open the session store ${path}: ${message}`, {
    hint: "if that file is not cachet's store, move it away, or set CACHET_HOME to another directory",
    cause: error,
  });
}

/** The nearest of `directory` and its parents that exists, when it is not a directory (a file in the state directory's way). */
function fileInTheWay(directory: string): string | undefined {
  const { dirname } = process.getBuiltinModule("node:path");
  const fs = process.getBuiltinModule("node:fs");
  for (let at = directory; ; at = dirname(at)) {
    try {
      return fs.statSync(at).isDirectory() ? undefined : at;
    } catch {
      if (at === dirname(at)) return undefined;
    }
  }
}

/** The STORE error for a state directory that a file stands in the way of. */
function notADirectory(file: string, path: string): CachetError {
  return new CachetError("STORE", `cannot open the session store ${path}: ${file} is a file, not a directory`, {
    hint: "set CACHET_HOME to a directory (it is made if missing), or move that file away",
  });
}
