/**
 * How this process starts another cachet: the compiled binary is its own
 * executable; from source, the runtime runs the entry script.
 */
import type { Subprocess } from "bun";

/**
 * The internal environment variable that marks a `cachet daemon run` nobody asked for: one a turn auto-started
 * (src/daemon/autostart.ts) or one a daemon started to succeed it ({@link PREDECESSOR_ENV}). Such a daemon never
 * creates its data directory: gone (a home removed just after its turn: `rm -rf "$CACHET_HOME"`), it exits 0 and
 * leaves nothing (src/cli/daemon.ts). Its value is the daemon's first idle, a duration (src/duration.ts) it waits for
 * its first turn before it exits (then `--idle` once it served one), or empty for none (a successor). Removed from the
 * daemon's environment before it serves: never passed on to a turn. Not for users: `cachet daemon start`/`run` without
 * it make the data directory and wait `--idle` from the start.
 */
export const UNASKED_ENV = "CACHET_DAEMON_UNASKED";

/**
 * The internal environment variable that names, to a successor, the server it takes the socket over from (its pid);
 * set by src/daemon/server.ts with {@link UNASKED_ENV}, read and removed by the successor's serve().
 */
export const PREDECESSOR_ENV = "CACHET_DAEMON_PREDECESSOR";

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
