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
 * JavaScriptCore options a daemon is started with: tier-up thresholds a fifth of the engine's defaults (500 before
 * the baseline JIT, 1000 before the optimizing one, in execution-counter units of about 15 per call). A turn's code
 * runs once per command, so with the defaults a daemon ran most of it unoptimized for its first few hundred
 * commands; measured on test/bench/first-byte.ts's kind of turn, two daemons side by side on one 2-core machine,
 * process start → first request byte over commands 60–120: 10.5 ms with the defaults, 9.5 ms with these (the first
 * ten commands, which pay for the extra compiling, 1–2 ms slower). A process that runs one command keeps the
 * defaults: it has nothing to warm.
 *
 * Bun reads BUN_JSC_* variables when it starts; their names are JavaScriptCore's (Source/JavaScriptCore/runtime/
 * OptionsList.h, https://github.com/oven-sh/webkit/blob/main/Source/JavaScriptCore/runtime/OptionsList.h), which
 * may change with a Bun release, and a name Bun does not know ends the process at start: build/build.ts starts
 * every binary it builds with these, so such an upgrade fails the build instead of every daemon.
 */
export const DAEMON_JSC_OPTIONS: Readonly<Record<string, string>> = {
  BUN_JSC_thresholdForJITAfterWarmUp: "100",
  BUN_JSC_thresholdForOptimizeAfterWarmUp: "200",
  BUN_JSC_thresholdForOptimizeAfterLongWarmUp: "200",
};

/**
 * The internal environment variable that lists (comma-separated) the {@link DAEMON_JSC_OPTIONS} a daemon was started
 * with by {@link spawnServer}; `daemon run` removes them and it before serving ({@link dropDaemonOptions}).
 */
export const DAEMON_OPTIONS_ENV = "CACHET_DAEMON_JSC";

/**
 * `env` with the {@link DAEMON_JSC_OPTIONS} it does not set already (a user's own value of one is kept), and
 * {@link DAEMON_OPTIONS_ENV} naming those added. A new object; `env` is not changed.
 */
export function daemonEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const added = Object.keys(DAEMON_JSC_OPTIONS).filter((name) => env[name] === undefined);
  if (added.length === 0) return { ...env };
  return { ...env, ...Object.fromEntries(added.map((name) => [name, DAEMON_JSC_OPTIONS[name]])), [DAEMON_OPTIONS_ENV]: added.join(",") };
}

/**
 * Removes from `env` (in place) what {@link daemonEnv} added: the options {@link DAEMON_OPTIONS_ENV} lists (only those
 * of {@link DAEMON_JSC_OPTIONS}) and that variable itself. The runtime read them at start; left in the environment, a
 * daemon would pass them to its turns and tell its clients, which do not have them, that a start-only variable
 * (BUN_*) differs (src/daemon/staleness.ts).
 */
export function dropDaemonOptions(env: Record<string, string | undefined>): void {
  for (const name of (env[DAEMON_OPTIONS_ENV] ?? "").split(",")) if (Object.hasOwn(DAEMON_JSC_OPTIONS, name)) delete env[name];
  delete env[DAEMON_OPTIONS_ENV];
}

/**
 * Starts `cachet daemon run ARGS…` in the background: its own session, no
 * stdio, not waited for (unref'd), with the {@link DAEMON_JSC_OPTIONS}.
 * Returns the process (its pid, exited and kill).
 * @param from the environment and working directory to start it with (default: this process's)
 * @throws the spawn's error (ENOENT when `from.cwd` is gone)
 */
export function spawnServer(args: readonly string[], from: { env?: Record<string, string | undefined>; cwd?: string } = {}): Subprocess {
  const child = Bun.spawn([...selfCommand(), "daemon", "run", ...args], {
    stdio: ["ignore", "ignore", "ignore"],
    detached: true,
    ...from,
    env: daemonEnv(from.env ?? process.env),
  });
  child.unref();
  return child;
}
