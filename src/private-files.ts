/**
 * cachet's state holds prompts, answers and recorded traffic: the directories
 * it creates are its owner's only (0700) and so are its SQLite files (0600,
 * with their -wal and -shm companions), whichever command creates them first.
 * An existing directory keeps its mode: it may be one the user chose to share
 * (CACHET_HOME=.). No-op for modes on Windows (no POSIX modes).
 *
 * node:fs and node:path are loaded at the first call, not with this module:
 * Bun's JS builtins cost milliseconds to load, and a run whose store already
 * exists needs none of this before its request.
 */

/** Creates `dir` and its missing parents 0700 (before the umask); an existing one is left as it is. */
export function makePrivateDir(dir: string): void {
  process.getBuiltinModule("node:fs").mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Readies the SQLite file at `path` for opening: its directory created as
 * {@link makePrivateDir} does, the file created 0600 when missing (SQLite
 * gives its -wal and -shm files the mode of the main file), and the file and
 * any companions made private as {@link keepPrivate} does.
 * @throws the file system's error (EACCES, EROFS, ...) when the directory or file cannot be made
 */
export function preparePrivateDatabase(path: string): void {
  const fs = process.getBuiltinModule("node:fs");
  makePrivateDir(process.getBuiltinModule("node:path").dirname(path));
  fs.closeSync(fs.openSync(path, "a", 0o600));
  keepPrivate(path);
}

/**
 * Strips group and other bits from the SQLite file at `path` and its -wal
 * and -shm companions (a store an older cachet created 0644); a file made
 * read-only on purpose stays read-only, a missing one is skipped.
 * @throws the file system's error when a mode cannot be changed
 */
export function keepPrivate(path: string): void {
  if (process.platform === "win32") return;
  const fs = process.getBuiltinModule("node:fs");
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    const mode = fs.statSync(file, { throwIfNoEntry: false })?.mode;
    if (mode !== undefined && mode & 0o077) fs.chmodSync(file, mode & 0o700);
  }
}
