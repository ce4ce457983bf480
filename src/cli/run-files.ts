/**
 * The files a run's flags name (`-s @FILE`, `--overlay @FILE`, `--tools FILE`, `--schema FILE`,
 * `--tool-result ID=@FILE`), asked where they lead before any is read: to the turn's own stdin (the flag then reads
 * it, src/cli/run.ts), to a descriptor that is not open (refused), or, in the daemon, to a file of
 * the client's own process or a stream such as a FIFO (the daemon declines the turn and its client runs it,
 * src/daemon/server.ts).
 */
import type { ArgsDef } from "citty";
import type { Stats } from "node:fs";
import { CachetError, type ErrorCode } from "../errors.ts";
import { fdIsOpen, processFileOf } from "../input/process-path.ts";
import { isInlineSchema } from "../schema/inline-schema.ts";
import { flagValues, lastFlag, parseCommandArgv } from "./argv.ts";
import { readCommandLine } from "./command-line.ts";
import { commands } from "./index.ts";

/** A file named by a run's flag. */
export interface FlagFile {
  /** The flag with its value as written, as messages name it: `--system @x`, `--tool-result call_1=@/dev/stdin`. */
  flag: string;
  /** The path as given (relative to the working directory unless absolute). */
  path: string;
  /** The error code of a file this flag cannot read (SCHEMA_INVALID for `--schema`, else INPUT_INVALID; both exit 3). */
  code: ErrorCode;
}

/** The flags whose value is a file, and those whose value is TEXT or @FILE. */
type FileFlag = "system" | "overlay" | "tools" | "schema";

/**
 * The files a run's flags name, in flag order; usually none.
 * @param value the value of a flag (its last), undefined when not given
 * @param toolResults every `--tool-result` value, in order (only `ID=@FILE` names a file)
 */
export function runFlagFiles(value: (flag: FileFlag) => string | undefined, toolResults: readonly string[]): FlagFile[] {
  const files: FlagFile[] = [];
  // Plain loops and no array builtin: this runs before every turn's request, and a builtin's first call compiles it.
  const system = value("system");
  if (system !== undefined && system.startsWith("@")) files.push({ flag: `--system ${system}`, path: system.slice(1), code: "INPUT_INVALID" });
  const overlay = value("overlay");
  if (overlay !== undefined && overlay.startsWith("@")) files.push({ flag: `--overlay ${overlay}`, path: overlay.slice(1), code: "INPUT_INVALID" });
  const tools = value("tools");
  if (tools !== undefined) files.push({ flag: `--tools ${tools}`, path: tools, code: "INPUT_INVALID" });
  const schema = value("schema");
  if (schema !== undefined && !isInlineSchema(schema)) files.push({ flag: `--schema ${schema}`, path: schema, code: "SCHEMA_INVALID" });
  for (let i = 0; i < toolResults.length; i++) {
    const result = toolResults[i]!;
    const at = result.indexOf("=@");
    if (at >= 0) files.push({ flag: `--tool-result ${result}`, path: result.slice(at + 2), code: "INPUT_INVALID" });
  }
  return files;
}

/** Paths that are this process's stdin as written: told without a system call. */
const STDIN_PATHS = new Set(["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);

/**
 * The flags (as written) whose file is this process's stdin, in flag order: `-s @/dev/stdin`, `--tools /dev/fd/0`, or
 * a path that leads there (`-s @x` with x linked to /dev/stdin, `--tools stdin` in /dev, `--schema /dev/./fd/0`).
 * A path is followed (lstat and readlink, node:fs loaded) only when it may lead to a file of the process's own in a
 * way that matters: when read as written it names one, or as {@link worthFollowing} tells; a plain file costs one
 * stat.
 * @param files the run's flag files ({@link runFlagFiles}), at least one
 * @param ownProcess whether the turn runs in a process of its own (its stdin is fd 0), not in the daemon
 * @throws CachetError the file's code (exit 3) for a path to a descriptor that is not open (`--schema /dev/fd/7` with
 *   no fd 7 given): by the time the file is read, that number may be one of the turn's own files (its store)
 */
export async function stdinFileFlags(files: readonly FlagFile[], ownProcess: boolean): Promise<string[]> {
  const readers: string[] = [];
  let cwd: string | undefined;
  try {
    cwd = process.cwd();
  } catch {
    // Removed since the process started there: a relative path opens nothing, and is left to its read to report.
  }
  let stdin: Promise<Stats | undefined> | undefined;
  for (let i = 0; i < files.length; i++) {
    const file = files[i]!;
    if (STDIN_PATHS.has(file.path)) {
      readers.push(file.flag);
      continue;
    }
    // A turn the daemon runs has none that leads to a file of its client's own (the daemon declines such a turn), and
    // its fd 0 is not the turn's stdin: nothing to ask.
    if (!ownProcess || (cwd === undefined && !file.path.startsWith("/"))) continue;
    if (processFileOf(file.path, cwd ?? "/", false) === undefined && !(await worthFollowing(file.path, (stdin ??= statOf(Bun.file(0)))))) continue;
    const fd = processFileOf(file.path, cwd ?? "/", true)?.fd;
    if (fd === undefined) continue;
    // Asked before the turn opens its store, session or connection (src/cli/run.ts), which may take that number.
    if (!fdIsOpen(fd)) {
      throw new CachetError(file.code, `${file.flag}: fd ${fd} is not open (no redirection opened it for the command), so the file would be one cachet opens itself`, {
        hint: `open the file on fd ${fd} for the command (cachet … ${fd}< FILE), or give the file's path`,
      });
    }
    if (fd === 0) readers.push(file.flag);
  }
  return readers;
}

/**
 * Whether `path`, which as written names no per-process file, may still lead to one through a symlink in a way that
 * matters: its file is the one fd 0 is (`x` linked to /dev/stdin, or the same file redirected to stdin, which only
 * following it tells apart), or there is none (a link to /dev/fd/7 with no fd 7, which the store may take before the
 * file is read). Any other file is read as it is: a descriptor a link leads to is open before the turn opens its own
 * files, so it is one the process was given, or one of the runtime's (epoll, eventfd, /dev/null), which hold no text.
 * @param stdin fd 0's stat
 */
async function worthFollowing(path: string, stdin: Promise<Stats | undefined>): Promise<boolean> {
  const file = await statOf(Bun.file(path));
  if (file === undefined) return true;
  const own = await stdin;
  return own !== undefined && file.dev === own.dev && file.ino === own.ino;
}

/** `file`'s stat (symlinks followed), or undefined when it cannot be asked. */
function statOf(file: Bun.BunFile): Promise<Stats | undefined> {
  return file.stat().catch(() => undefined);
}

/**
 * Why the daemon cannot run the turn of `argv`: a file one of its flags names leads, through a symlink or as resolved
 * from the client's working directory, to a file of the process that opens it, which the daemon would open as its
 * own, or is a stream (a FIFO, a character device, a socket: {@link streamKind}); undefined when none does (or the command line is not a turn's, or is one its own parse refuses: no file is
 * read then). Each path is followed part by part (src/input/process-path.ts), which costs an lstat per part, and its
 * target asked with one stat.
 * @param argv the client's command line (process.argv without the runtime and script)
 * @param stdinIsTerminal whether the client's fd 0 is a terminal (a bare line is then the root help)
 * @param cwd the client's working directory, absolute
 */
export async function clientProcessFile(argv: readonly string[], stdinIsTerminal: boolean, cwd: string): Promise<string | undefined> {
  if (!mayNameFile(argv)) return undefined;
  const line = readCommandLine(argv, stdinIsTerminal);
  if (line.kind !== "command" || line.name !== "run") return undefined;
  const { default: run } = await commands.run!.load();
  const defs: ArgsDef = (typeof run.args === "function" ? await run.args() : await run.args) ?? {};
  const view = parseCommandArgv("run", line.rest, defs);
  if (view.error) return undefined;
  const files = runFlagFiles((flag) => {
    const value = lastFlag(view, flag)?.value;
    return typeof value === "string" ? value : undefined;
  }, flagValues(view, "tool-result"));
  for (let i = 0; i < files.length; i++) {
    const reached = processFileOf(files[i]!.path, cwd, true);
    if (reached) return `${files[i]!.flag} leads to ${reached.path}, a file of the client's own process, which the daemon would open as its own`;
    const kind = streamKind(files[i]!.path, cwd);
    if (kind) return `${files[i]!.flag} is ${kind}, a stream that the process opening it reads, which the daemon would hold open past an interrupted turn`;
  }
  return undefined;
}

/**
 * What the file at `path` (from `cwd` when relative; symlinks followed) is when it is a stream rather than stored
 * text: a FIFO, a character device or a socket, whose data goes to whichever process reads it. A daemon that opened
 * one for a turn its client interrupted would keep the open (or its read) pending, and take the next writer's data;
 * its client runs such a turn in its own process, whose end ends the read. Undefined for any other file, or none
 * (its read fails alike in either process). One stat.
 */
function streamKind(path: string, cwd: string): string | undefined {
  const stat = process.getBuiltinModule("node:fs").statSync(path.startsWith("/") ? path : `${cwd}/${path}`, { throwIfNoEntry: false });
  if (stat?.isFIFO()) return "a FIFO";
  if (stat?.isCharacterDevice()) return "a character device";
  if (stat?.isSocket()) return "a socket";
  return undefined;
}

/**
 * Whether a word of `argv` may give a flag a file: `@FILE` (-s, --overlay, --tool-result ID=@FILE) holds an `@`, and
 * --tools and --schema have no letter. A turn without one (most) is not parsed a second time before the daemon takes
 * it (the parse costs ~40 µs).
 */
function mayNameFile(argv: readonly string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word.includes("@") || word.startsWith("--tools") || word.startsWith("--schema")) return true;
  }
  return false;
}
