/**
 * The process's working directory, for the few things that need one: a
 * relative path given on the command line or in CACHET_PLUGINS, a daemon's
 * start. Everything else (the store, config and plugins under an absolute
 * CACHET_HOME or the platform's directories) works without one, so a command
 * started in a directory that was since removed reads it only when it must.
 */
import { CachetError } from "./errors.ts";

/**
 * The working directory, absolute.
 * @param why what needs it, for the message (e.g. `the relative path "acme"`)
 * @throws CachetError WORKING_DIR_GONE (exit 1) when it was removed (or cannot be read)
 */
export function workingDirectory(why: string): string {
  try {
    return process.cwd();
  } catch (error) {
    throw new CachetError("WORKING_DIR_GONE", `the current working directory no longer exists (${(error as NodeJS.ErrnoException).code ?? "unreadable"}), and ${why} needs it`, {
      hint: "cd into an existing directory and run the command again, or give an absolute path",
      cause: error,
    });
  }
}

/** Whether the working directory can be read (false when it was removed since the process started in it). */
export function workingDirectoryExists(): boolean {
  try {
    process.cwd();
    return true;
  } catch {
    return false;
  }
}

/**
 * A directory to resolve `path` against: any one for an absolute path (which
 * needs none), else the working directory.
 * @throws CachetError WORKING_DIR_GONE for a relative `path` when the working directory was removed
 */
export function baseFor(path: string): string {
  const { isAbsolute, dirname } = process.getBuiltinModule("node:path");
  return isAbsolute(path) ? dirname(path) : workingDirectory(`the relative path "${path}"`);
}
