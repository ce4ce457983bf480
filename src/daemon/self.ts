/**
 * How this process starts another cachet: the compiled binary is its own
 * executable; from source, the runtime runs the entry script.
 */

/** The words that start cachet again (before its arguments). */
export function selfCommand(): string[] {
  const script = process.argv[1];
  // A compiled binary's script lives in Bun's embedded file system (/$bunfs/… on POSIX, B:/~BUN/… on Windows).
  const compiled = script === undefined || script.startsWith("/$bunfs/") || script.includes("~BUN");
  return compiled ? [process.execPath] : [process.execPath, script];
}

/**
 * Starts `cachet daemon run ARGS…` in the background: its own session, no
 * stdio, not waited for. Returns its pid.
 */
export function spawnServer(args: readonly string[]): number {
  const child = Bun.spawn([...selfCommand(), "daemon", "run", ...args], { stdio: ["ignore", "ignore", "ignore"], detached: true });
  child.unref();
  return child.pid;
}
