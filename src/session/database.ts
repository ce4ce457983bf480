/**
 * Opening the store's SQLite file: pragmas (WAL, busy timeout, foreign keys),
 * refusing another program's database, and running the migrations.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { CachetError } from "../errors.ts";
import { MIGRATIONS } from "./schema.ts";

/**
 * Opens (creating if needed) and migrates the store at `path`.
 * @throws CachetError STORE naming the file when it cannot be opened, is not cachet's store, or is newer.
 */
export function openDatabase(path: string): Database {
  let db: Database | undefined;
  try {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    db = new Database(path, { create: true });
    // The busy timeout comes first so that even switching to WAL waits for a concurrent opener.
    db.exec("PRAGMA busy_timeout = 10000");
    // Another program's database (tables, but no cachet schema version) is refused before anything in it changes.
    const unversioned = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version === 0;
    if (unversioned && (db.query("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n > 0) {
      throw new CachetError("STORE", `${path} is an SQLite database, but not cachet's session store`, {
        hint: "move that file away, or set CACHET_HOME to another directory",
      });
    }
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA foreign_keys = ON");
    // In WAL mode NORMAL survives a crash of the process (not of the OS) and avoids an fsync per turn.
    db.exec("PRAGMA synchronous = NORMAL");
    migrate(db, path);
    return db;
  } catch (error) {
    db?.close();
    if (error instanceof CachetError) throw error;
    throw new CachetError("STORE", `cannot open the session store ${path}: ${(error as Error).message}`, {
      hint: "if that file is not cachet's store, move it away, or set CACHET_HOME to another directory",
      cause: error,
    });
  }
}

function migrate(db: Database, path: string): void {
  const version = (): number => (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  if (version() > MIGRATIONS.length) {
    throw new CachetError("STORE", `the session store ${path} was written by a newer cachet (schema ${version()}, this one knows ${MIGRATIONS.length})`, {
      hint: "upgrade cachet, or set CACHET_HOME to another directory",
    });
  }
  while (version() < MIGRATIONS.length) {
    db.transaction(() => {
      // Re-read inside the write lock: another process may have migrated meanwhile.
      const current = version();
      if (current >= MIGRATIONS.length) return;
      db.exec(MIGRATIONS[current]!);
      db.exec(`PRAGMA user_version = ${current + 1}`);
    }).immediate();
  }
}
