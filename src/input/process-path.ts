/**
 * Where a path leads when a file of the process that opens it is on its way:
 * `x` linked to /dev/stdin, `stdin` in /dev, `/dev/./fd/3`,
 * `/proc/self/../self/fd/0`. The daemon asks it of each file a client's turn
 * names (src/daemon/server.ts: it declines such a turn, whose client runs it
 * itself); a turn asks it of a path that may lead to its own stdin or to an
 * fd that is not open (src/cli/run-files.ts).
 */
import { PROCESS_ROOTS } from "../daemon/process-files.ts";

/** A file of the process that opens it, as a path leads to it. */
export interface ProcessFile {
  /**
   * The path it is reached as: one of PROCESS_ROOTS, then the rest of the path with `.`, `..` and empty parts resolved
   * (`/dev/fd/3`, `/proc/self/fd/0` for /proc/self/../self/fd/0); the per-process path it went through when a `..`
   * there leads where only the opening process can tell (`/dev/fd` for /dev/fd/../stdin).
   */
  path: string;
  /**
   * The file descriptor it names, when it names one: /dev/stdin 0, /dev/stdout 1, /dev/stderr 2, /dev/fd/N,
   * /proc/self/fd/N and /proc/thread-self/fd/N N; absent for any other (/proc/self/environ).
   */
  fd?: number;
}

/**
 * How many symlinks a path may pass through: Linux's limit (MAXSYMLINKS, 40), past which its open fails ELOOP in any
 * process.
 */
const MAX_LINKS = 40;

/**
 * The file of the opening process that `path` leads to, or undefined when it leads to none (or nowhere: a part that is
 * missing or cannot be read fails the open alike in every process of the same user).
 *
 * The path is taken part by part from `cwd` (when relative), `.` and empty parts dropped and `..` going up. A part that
 * is one of PROCESS_ROOTS, or under one, is never asked of the system: /proc/self and /dev/stdin are symlinks to the
 * asking process's own files, so the rest is read as written there (a `..` only where the kernel reads it so). With `follow`, each other part is asked with lstat and a symlink is replaced by its target (a relative one
 * from the link's directory), as an open resolves it, so `..` goes up from where a link led; without it the path is
 * only read as written (no system call), which tells whether it may lead to one.
 * @param path a path as a flag gives it
 * @param cwd the absolute directory a relative `path` is resolved from
 * @param follow follow symlinks (loads node:fs; one lstat per part, a readlink per link)
 */
export function processFileOf(path: string, cwd: string, follow: boolean): ProcessFile | undefined {
  const fs = follow ? process.getBuiltinModule("node:fs") : undefined;
  // Parts still to take, the next one last (pop), and the directories taken so far from /.
  const pending = (path.startsWith("/") ? path : `${cwd}/${path}`).split("/").reverse();
  const taken: string[] = [];
  let through: string | undefined;
  let links = 0;
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (part === "" || part === ".") continue;
    if (part === "..") {
      // Under a per-process path `..` is read as written only where that is what the kernel does: /proc/self and
      // /proc/self/fd are directories of the process's own (/proc/PID, /proc/PID/fd). Elsewhere it would leave a
      // symlink's target (/dev/fd is /proc/self/fd on Linux, /proc/self/cwd any directory), which only the opening
      // process can follow: the path is then where it went through, naming no descriptor.
      const here = `/${taken.join("/")}`;
      if (underRoot(here) && !LEXICAL_PARENTS.includes(here)) return { path: through! };
      taken.pop();
      continue;
    }
    taken.push(part);
    const at = `/${taken.join("/")}`;
    if (underRoot(at)) {
      through ??= at;
      continue;
    }
    if (!fs) continue;
    let link: string;
    try {
      if (!fs.lstatSync(at).isSymbolicLink()) continue;
      link = fs.readlinkSync(at);
    } catch {
      return undefined;
    }
    if (++links > MAX_LINKS) return undefined;
    taken.pop();
    if (link.startsWith("/")) taken.length = 0;
    const parts = link.split("/");
    for (let i = parts.length - 1; i >= 0; i--) pending.push(parts[i]!);
  }
  if (through === undefined) return undefined;
  const reached = `/${taken.join("/")}`;
  if (!underRoot(reached)) return { path: through };
  const fd = fdOf(reached);
  return fd === undefined ? { path: reached } : { path: reached, fd };
}

/** The per-process directories whose `..` is their parent as written. */
const LEXICAL_PARENTS = ["/proc/self", "/proc/self/fd"];

/** Whether the normalized absolute path `at` is one of PROCESS_ROOTS or under one. */
function underRoot(at: string): boolean {
  for (let i = 0; i < PROCESS_ROOTS.length; i++) {
    const root = PROCESS_ROOTS[i]!;
    if (at === root || (at.startsWith(root) && at.charCodeAt(root.length) === 47)) return true;
  }
  return false;
}

/** The file descriptor the per-process path `at` (normalized) names, if it names one. */
function fdOf(at: string): number | undefined {
  const std = STD_PATHS.indexOf(at);
  if (std !== -1) return std;
  const fd = /^\/(?:dev|proc\/self|proc\/thread-self)\/fd\/(\d{1,9})$/.exec(at);
  return fd ? Number(fd[1]) : undefined;
}

/** The paths of fds 0, 1 and 2, in that order. */
const STD_PATHS = ["/dev/stdin", "/dev/stdout", "/dev/stderr"];

/**
 * Whether file descriptor `fd` is open in this process now (fstat answers). A turn asks it before it opens its store,
 * session or connection: a descriptor not open then was never given to the process (nothing closes one it was given),
 * so its number can only name a file the process opens later, of its own.
 */
export function fdIsOpen(fd: number): boolean {
  try {
    process.getBuiltinModule("node:fs").fstatSync(fd);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "EBADF";
  }
}
