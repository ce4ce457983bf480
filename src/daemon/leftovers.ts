/**
 * What a server keeps next to its socket while it starts, named by its pid: the socket it binds before renaming it
 * over `daemon.sock` (src/daemon/server.ts), and the empty CACHET_HOME of its warm-up turns. A server removes both
 * itself; one killed meanwhile (SIGKILL, a crash, a SIGTERM during its warm-up) leaves them, and the next server
 * to start, or `daemon status`/`stop`, removes those whose process is gone. Likewise `daemon.sock` and `daemon.pid`,
 * which a server removes when it exits of its own accord, and a killed one leaves ({@link removeDeadDaemon}). And
 * `daemon.autostart`, the stamp a turn that found no daemon leaves while the one it started warms up
 * (src/daemon/autostart.ts), which that server removes once it listens, or when it finds another server listening
 * (it was started second); one whose server died first is removed by the next `daemon status`/`stop` or server start,
 * or replaced by a turn, once stale.
 */
import { pidPath } from "./protocol.ts";
import { processAlive } from "../process-alive.ts";

/** The name, in the socket's directory, of the socket server `pid` binds before it renames it over `daemon.sock`. */
export function bindingName(pid: number): string {
  return `.s${pid}`;
}

/** The name, in the socket's directory, of the empty CACHET_HOME of server `pid`'s warm-up turns. */
export function warmHomeName(pid: number): string {
  return `.w${pid}`;
}

/**
 * Why no daemon can keep its files in the data directory `dir` (the socket's): its socket, pid file, warm-up home and
 * the auto-start stamp all go there. The nearest directory that exists is asked (access(2) W_OK: EROFS on a read-only
 * file system whoever asks, EACCES for a user without write permission), so a data directory still to be made under a
 * read-only one is told too. One system call per level.
 * @returns a phrase naming the directory and why, e.g. "the data directory /x is on a read-only file system (EROFS)";
 *   undefined when it can be written (or nothing above it can be asked)
 */
export function unwritableDataDir(dir: string): string | undefined {
  const fs = process.getBuiltinModule("node:fs");
  for (let at = dir; ; ) {
    try {
      fs.accessSync(at, fs.constants.W_OK);
      return undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const named = at === dir ? `the data directory ${dir}` : `${at}, where the data directory ${dir} would be made,`;
      if (code === "EROFS") return `${named} is on a read-only file system (EROFS)`;
      if (code === "EACCES" || code === "EPERM") return `${named} is not writable by this user (${code})`;
      const up = at.slice(0, Math.max(at.lastIndexOf("/"), 1));
      if (code !== "ENOENT" || up === at) return undefined;
      at = up;
    }
  }
}

/** The auto-start stamp's name in the data directory (the socket's). */
const AUTOSTART_STAMP = "daemon.autostart";

/** The path of the auto-start stamp in the data directory `dir` (the socket's). */
export function autostartStampPath(dir: string): string {
  return `${dir}/${AUTOSTART_STAMP}`;
}

/**
 * How long an auto-start stamp keeps other turns from starting a daemon, ms. A daemon warms up before it listens
 * (loading what a turn loads, a few warm-up turns): under a second on an idle machine, several seconds on a loaded
 * one. A stamp older than this is one whose daemon did not get to listen (it died, or it found the socket taken):
 * the next turn that finds no daemon replaces it and starts one, so a daemon that cannot start is tried at most
 * twice a minute.
 */
export const AUTOSTART_STAMP_FRESH_MS = 30_000;

/**
 * Whether the auto-start stamp at `path` no longer stands for a daemon starting: older than
 * {@link AUTOSTART_STAMP_FRESH_MS}, or, with `orGone`, naming a process that is gone (a stamp naming none yet is
 * one whose writer is starting the daemon now, or one {@link holdAutostarts} emptied). A turn passes `orGone`: a
 * daemon gone without listening (killed, or a second one that found the socket taken) must not keep the next turns
 * from starting one for 30 s. False when there is no stamp.
 */
export function autostartStampStale(path: string, orGone: boolean): boolean {
  const stat = process.getBuiltinModule("node:fs").lstatSync(path, { throwIfNoEntry: false });
  if (!stat?.isFile()) return false;
  if (Date.now() - stat.mtimeMs >= AUTOSTART_STAMP_FRESH_MS) return true;
  const pid = orGone ? recordedPid(path) : undefined;
  return pid !== undefined && !processAlive(pid);
}

/**
 * The daemon a turn started that is still warming up in the data directory `dir`: the pid its stamp names while
 * the stamp is fresh and that process runs, and until when (ms since the epoch) the stamp stands for it; undefined
 * otherwise (no stamp, a stale one, one naming no process yet).
 */
export function startingDaemon(dir: string): { pid: number; until: number } | undefined {
  const path = autostartStampPath(dir);
  const stat = process.getBuiltinModule("node:fs").lstatSync(path, { throwIfNoEntry: false });
  if (!stat?.isFile() || autostartStampStale(path, true)) return undefined;
  const pid = recordedPid(path);
  return pid === undefined ? undefined : { pid, until: stat.mtimeMs + AUTOSTART_STAMP_FRESH_MS };
}

/**
 * Empties the auto-start stamp in `dir` if it names process `pid` (a daemon a turn started that failed to start, a
 * blocked socket path, say), renewing its time: it then holds turns back for {@link AUTOSTART_STAMP_FRESH_MS} as one
 * naming no process yet does, so a daemon that cannot start is tried at most twice a minute, not once per turn. Any
 * error is ignored: the stamp is then only stale sooner.
 */
export function holdAutostarts(dir: string, pid: number): void {
  const path = autostartStampPath(dir);
  try {
    // Truncated, never written: a file is not created again after its removal, and its time is renewed.
    if (recordedPid(path) === pid) process.getBuiltinModule("node:fs").truncateSync(path, 0);
  } catch {
    // Removed meanwhile, or not this user's.
  }
}

/** The name, in the socket's directory, that process `pid` moves `daemon.pid` to while it reads it ({@link removePidFile}). */
function asideName(pid: number): string {
  return `.p${pid}`;
}

/**
 * Removes from `dir` (the socket's directory) the bound sockets, warm-up homes and set-aside pid files of processes
 * that are gone, and an auto-start stamp that no longer stands for a daemon starting ({@link autostartStampStale}).
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
  const stamp = autostartStampPath(dir);
  try {
    if (names.includes(AUTOSTART_STAMP) && autostartStampStale(stamp, true)) fs.rmSync(stamp, { force: true });
  } catch {
    // Not this user's to remove: a stamp only holds auto-starts back for a while.
  }
  for (const name of names) {
    const match = /^\.([spw])([1-9]\d*)$/.exec(name);
    if (!match || processAlive(Number(match[2]))) continue;
    const path = `${dir}/${name}`;
    const stat = fs.lstatSync(path, { throwIfNoEntry: false });
    // Only what is made under that name: a socket, a pid file, or a directory (a warm-up home holds nothing of the user's).
    const made = match[1] === "s" ? stat?.isSocket() : match[1] === "p" ? stat?.isFile() : stat?.isDirectory();
    if (made !== true) continue;
    try {
      fs.rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed meanwhile, or not this user's to remove.
    }
  }
}

/**
 * Removes the pid file `file` (src/daemon/protocol.ts pidPath) if it names process `pid`: a server's own when it exits
 * (src/daemon/server.ts), a dead server's when its socket is found dead ({@link removeDeadDaemon}). A pid file that
 * names another process (a server that took the socket over, or one starting now) is left, even one written between
 * the check and the removal: the file is first moved aside under a name of this process's, read there, and linked
 * back when it is not the one to remove (a link, unlike a rename, never replaces a newer file written meanwhile).
 * A missing file, or one that cannot be moved, is no error: it is left as it is.
 */
export function removePidFile(file: string, pid: number): void {
  const fs = process.getBuiltinModule("node:fs");
  const aside = `${process.getBuiltinModule("node:path").dirname(file)}/${asideName(process.pid)}`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return;
  }
  try {
    if (recordedPid(aside) !== pid) fs.linkSync(aside, file);
  } catch {
    // EEXIST: a newer pid file was written meanwhile, and it stays; what was set aside was a stale one.
  }
  fs.rmSync(aside, { force: true });
}

/**
 * Removes `daemon.sock` at `socket` and its `daemon.pid` when the server that made them is gone (killed, crashed):
 * the socket only when connecting to it is refused (ECONNREFUSED: nothing listens there) and the pid file names a
 * process that no longer runs, or is missing; a pid file naming a process that no longer runs, when no socket is
 * there either. A live server's files are never removed, nor another user's, nor anything but a socket at the
 * socket's path. Nothing to remove, or a file that cannot be removed, is no error: a dead socket only reads as no
 * daemon.
 */
export async function removeDeadDaemon(socket: string): Promise<void> {
  const fs = process.getBuiltinModule("node:fs");
  const uid = process.getuid?.();
  const file = pidPath(socket);
  const pidStat = fs.lstatSync(file, { throwIfNoEntry: false });
  let dead: number | undefined;
  if (pidStat) {
    const pid = pidStat.isFile() && pidStat.uid === uid ? recordedPid(file) : undefined;
    // A pid file naming a live process (or not cachet's, or another user's): its server may only be starting.
    if (pid === undefined || processAlive(pid)) return;
    dead = pid;
  }
  const before = identity(socket);
  if (before === null) return;
  if (before !== undefined) {
    if (!(await refused(socket))) return;
    // Removed only when the file that refused is still the one there: a server starting now renames its own socket
    // over this path, and a listening one is never removed (the check and the unlink are two system calls apart).
    if (identity(socket) !== before) return;
    fs.rmSync(socket, { force: true });
  }
  if (dead !== undefined) removePidFile(file, dead);
}

/**
 * What tells the socket file at `path` from another (device, inode, change time), undefined when there is no file,
 * null when the file there is not one of this user's sockets.
 */
function identity(path: string): string | undefined | null {
  const stat = process.getBuiltinModule("node:fs").lstatSync(path, { bigint: true, throwIfNoEntry: false });
  if (!stat) return undefined;
  if (!stat.isSocket() || Number(stat.uid) !== process.getuid?.()) return null;
  return `${stat.dev}:${stat.ino}:${stat.ctimeNs}`;
}

/** Whether connecting to the unix socket `path` is refused (ECONNREFUSED): no process listens on it. */
async function refused(path: string): Promise<boolean> {
  try {
    const socket = await Bun.connect({ unix: path, socket: { data() {} } });
    socket.end();
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ECONNREFUSED";
  }
}

/** The positive pid the file `file` holds, or undefined when it cannot be read or holds none. */
function recordedPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(process.getBuiltinModule("node:fs").readFileSync(file, "utf8"), 10);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
