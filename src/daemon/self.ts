/**
 * How this process starts another cachet: the compiled binary is its own
 * executable; from source, the runtime runs the entry script.
 */
import type { Subprocess } from "bun";

/** The words that start cachet again (before its arguments). */
export function selfCommand(): string[] {
  const script = process.argv[1];
  // A compiled binary's script lives in Bun's embedded file system (/$bunfs/… on POSIX, B:/~BUN/… on Windows).
  const compiled = script === undefined || script.startsWith("/$bunfs/") || script.includes("~BUN");
  return compiled ? [process.execPath] : [process.execPath, script];
}

/**
 * Starts `cachet daemon run ARGS…` in the background: its own session, no
 * stdio, not waited for (unref'd). Returns the process (its pid, exited and kill).
 * @param from the environment and working directory to start it with (default: this process's)
 * @throws the spawn's error (ENOENT when `from.cwd` is gone)
 */
export function spawnServer(args: readonly string[], from: { env?: Record<string, string | undefined>; cwd?: string } = {}): Subprocess {
  const child = Bun.spawn([...selfCommand(), "daemon", "run", ...args], { stdio: ["ignore", "ignore", "ignore"], detached: true, ...from });
  child.unref();
  return child;
}
