/**
 * cachet's state holds prompts, answers and recorded traffic: the directories
 * it creates are its owner's only (0700) and so are its SQLite files (0600,
 * with their -wal and -shm companions), whichever command creates them first.
 * An existing directory keeps its mode: it may be one the user chose to share
 * (CACHET_HOME=.). No-op for modes on Windows (no POSIX modes).
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";

/** Creates `dir` and its missing parents 0700 (before the umask); an existing one is left as it is. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Readies the SQLite file at `path` for opening: its directory created as
 * {@link makePrivateDir} does, the file created 0600 when missing (SQLite
 * gives its -wal and -shm files the mode of the main file), and the file and
 * any companions stripped of group and other bits (a store an older cachet
 * created 0644; a file made read-only on purpose stays read-only).
 * @throws the file system's error (EACCES, EROFS, ...) when the directory or file cannot be made
 */
export function preparePrivateDatabase(path: string): void {
  makePrivateDir(dirname(path));
  closeSync(openSync(path, "a", 0o600));
  if (process.platform === "win32") return;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    const mode = statSync(file).mode & 0o777;
    if (mode & 0o077) chmodSync(file, mode & 0o700);
  }
}
