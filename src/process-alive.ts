/**
 * Whether a process still runs, for the records cachet leaves with a pid in
 * them (a session lease, a daemon's files, a plugin install's staging
 * directory): a record whose process is gone may be taken over or removed.
 */

/**
 * Whether process `pid` exists and has not exited. Another user's process
 * counts as running (signal 0 answers EPERM). On Linux an exited process not
 * yet reaped by its parent (a zombie: a daemon's parent is init, which may take
 * a while) counts as gone, read from /proc/PID/stat (proc(5)).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  if (process.platform !== "linux") return true;
  try {
    // proc(5): "pid (comm) state …", where comm may hold spaces and parentheses.
    const stat = process.getBuiltinModule("node:fs").readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    // Reaped meanwhile: gone; /proc unreadable: as signal 0 said.
    return existsProc(pid);
  }
}

/** Whether /proc lists `pid`, or /proc cannot tell (not mounted). */
function existsProc(pid: number): boolean {
  const fs = process.getBuiltinModule("node:fs");
  return !fs.existsSync("/proc/self") || fs.existsSync(`/proc/${pid}`);
}
