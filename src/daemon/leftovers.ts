/**
 * What a server keeps next to its socket while it starts, named by its pid: the socket it binds before renaming it
 * over `daemon.sock` (src/daemon/server.ts), and the empty CACHET_HOME of its warm-up turns. A server removes both
 * itself; one killed meanwhile (SIGKILL, a crash, a SIGTERM during its warm-up) leaves them, and the next server
 * to start, or `daemon status`/`stop`, removes those whose process is gone.
 */

/** The name, in the socket's directory, of the socket server `pid` binds before it renames it over `daemon.sock`. */
export function bindingName(pid: number): string {
  return `.s${pid}`;
}

/** The name, in the socket's directory, of the empty CACHET_HOME of server `pid`'s warm-up turns. */
export function warmHomeName(pid: number): string {
  return `.w${pid}`;
}

/**
 * Removes from `dir` (the socket's directory) the bound sockets and warm-up homes of servers whose process is gone.
 * Those of a live process (a server starting now, or an unrelated process that was given a dead server's pid) are
 * left. Nothing to remove, or a directory that cannot be read, is no error: these files only take space.
 */
export function removeLeftovers(dir: string): void {
  const fs = process.getBuiltinModule("node:fs");
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const match = /^\.([sw])([1-9]\d*)$/.exec(name);
    if (!match || alive(Number(match[2]))) continue;
    const path = `${dir}/${name}`;
    const stat = fs.lstatSync(path, { throwIfNoEntry: false });
    // Only what a server makes under that name: a socket, or a directory (its warm-up home holds nothing of the user's).
    if (match[1] === "s" ? stat?.isSocket() !== true : stat?.isDirectory() !== true) continue;
    try {
      fs.rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed meanwhile, or not this user's to remove.
    }
  }
}

/** Whether process `pid` exists (another user's included). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
