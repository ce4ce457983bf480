/**
 * The process edges one command runs against: its stdin, stdout and stderr,
 * whether each is a terminal, its signals and its exit. Every module on the
 * run command's path reaches them through {@link edges}, so that a resident
 * process (src/daemon) can bind a client's edges for the one command it runs
 * at a time ({@link bindEdges}) and the process's own otherwise.
 *
 * The process's own edges build nothing at import and only what a call
 * needs: `process.stdout`, `process.stderr` and `process.stdin` are Node
 * streams that load Node's stream modules (~8 ms of CPU in a compiled
 * program on the 2-core bench machine, 3-11 ms measured for stdin), which a
 * run whose output is piped otherwise never needs. Stdout is Bun's native
 * writer of fd 1 (src/stdout.ts says why), terminal checks use Bun's
 * `tty_wrap` binding, and stdin is read per src/run/stdin.ts.
 */
import type { Stats } from "node:fs";
import { CachetError } from "./errors.ts";

/** Stdin as a chunk source; a test may pass its own. */
export interface ChunkSource {
  isTTY: boolean;
  /** A reader, or undefined when stdin is the null device (`< /dev/null`), whose read would only end at once. */
  open(): Promise<ChunkReader | undefined>;
}

/** The part of a stream reader that stdin reading uses. */
export interface ChunkReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(): Promise<void>;
  releaseLock(): void;
}

/** A native stdout writer: each call returns the bytes taken at once, or a promise of them once the pipe took them. */
export interface StdoutSink {
  write(chunk: string | Uint8Array): number | Promise<number>;
  flush(): number | Promise<number>;
}

/** The process edges one command runs against: stdio, terminal facts, signals, exit. */
export interface Edges {
  /** Stdin as a chunk source (isTTY + open(); src/run/stdin.ts reads it). */
  stdin(): ChunkSource;
  /** Whether fd 0 (stdin), 1 (stdout) or 2 (stderr) is a terminal. */
  isTerminal(fd: 0 | 1 | 2): boolean;
  /** The native stdout sink, made on first use; src/stdout.ts is its one writer. */
  stdoutSink(): StdoutSink;
  /**
   * Whether stdout took every piece given to the sink so far, asked where a write in flight is not the process's own
   * (the daemon's client: pieces on their way to it, which a reader still reading takes at once); undefined where a
   * pending write of the sink already means stdout has not taken it.
   */
  stdoutTaken?(): Promise<boolean>;
  /** Writes text to stderr. */
  writeStderr(text: string): void;
  /** Subscribes `handler` to a signal (SIGINT, SIGTERM, SIGHUP); returns the unsubscribe. */
  onSignal(name: NodeJS.Signals, handler: () => void): () => void;
  /**
   * Ends the process with exit code `code` at once, whatever of the command still runs; callers treat it as never
   * returning. A resident process cannot serve on after it (src/daemon/server.ts: a fresh one takes over).
   */
  exit(code: number): never;
  /**
   * Ends a command that has unwound with exit code `code`: the error reached the command line's top
   * (src/cli/dispatch.ts report), or the run got its code back with nothing of the turn left running (src/cli/run.ts),
   * each `finally` on the way having run or running before the caller returns. The process's own edges exit at once,
   * as {@link exit} does. A daemon's client's record the code and return: the caller then returns at once, writing
   * nothing more, and the daemon ends the command as it ends one that succeeded and serves the next (unless a signal
   * reached this one: then it is {@link exit}). Every other end of a command is {@link exit}.
   */
  finish(code: number): void;
  /** The code {@link finish} recorded, once it returned; undefined before, and always for edges whose finish exits. */
  readonly finished: number | undefined;
  /**
   * The id of the process the user sees running the command: this process's own, or the daemon's client's. A
   * session lease the command takes names it (src/session/leases.ts), as does a busy session's message to others.
   */
  readonly pid: number;
}

let sink: StdoutSink | undefined;

/**
 * `process.exit` and `process.reallyExit` (Bun's exit calls it) as the process started with them, taken when this
 * module is first imported, before any plugin loads: src/plugin/exit-trap.ts makes both throw for plugin code, and
 * cachet's own exits must still end the process. Every exit of cachet's goes through {@link processEdges}.exit.
 */
const started = { exit: process.exit, reallyExit: (process as unknown as Record<string, unknown>).reallyExit };

/** Ends the process with `code` through the exits it started with, put back first (nothing runs after). */
function realExit(code: number): never {
  Object.assign(process, started);
  return started.exit.call(process, code);
}

/** The process's own edges (what every command uses unless a daemon bound a client's). */
export const processEdges: Edges = {
  stdin: processStdin,
  isTerminal(fd) {
    const binding = (process as { binding?: (name: string) => { isTTY?: unknown } }).binding;
    const isTTY = binding?.("tty_wrap").isTTY;
    // A runtime without Bun's tty_wrap gets the answer from the stream.
    return typeof isTTY === "function" ? isTTY(fd) === true : (fd === 0 ? process.stdin : fd === 1 ? process.stdout : process.stderr).isTTY === true;
  },
  // One writer of fd 1 for the process, however many commands run in it.
  stdoutSink: () => (sink ??= Bun.stdout.writer()),
  writeStderr(text) {
    process.stderr.write(text);
  },
  onSignal(name, handler) {
    process.on(name, handler);
    return () => void process.off(name, handler);
  },
  exit: (code) => realExit(code),
  // Exits as exit does: in a process of its own a command's end is the process's, at once.
  finish: (code) => realExit(code),
  finished: undefined,
  pid: process.pid,
};

let bound: Edges | undefined;

/** The edges of the command now running: the process's own unless the daemon bound a client's. */
export function edges(): Edges {
  return bound ?? processEdges;
}

/**
 * Binds `e` for the command about to run (the daemon only: it runs one
 * command at a time). Returns the function that restores the process's own edges.
 */
export function bindEdges(e: Edges): () => void {
  bound = e;
  return () => {
    bound = undefined;
  };
}

/**
 * The process's stdin (fd 0) as a chunk source: a redirected file is read by
 * {@link fileReader}, a pipe or device through the runtime's stream, and the
 * null device not at all. What fd 0 is comes from Bun's own stat: node:fs,
 * Bun's JS builtin (~2 ms to load), is loaded only to read a redirected file.
 * @throws CachetError INPUT_INVALID from `open()` when stdin is a directory
 */
export function processStdin(): ChunkSource {
  return {
    isTTY: processEdges.isTerminal(0),
    open: async () => {
      const stat = await stdinStat();
      // `cachet … < DIR`: the shell opens a directory, which no read can serve.
      if (stat?.isDirectory()) throw stdinIsDirectory();
      if (stat?.isFile()) return fileReader(0);
      // Scripts and CI run with `< /dev/null`: a stream, its reader and the first-byte timer cost about 0.7 ms before
      // the request, to read nothing.
      if (stat?.isCharacterDevice() && stat.rdev === (await nullDevice())) return undefined;
      return (Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader() as unknown as ChunkReader;
    },
  };
}

/** The error of a stdin that is a directory (`cachet … < DIR`), whose open no read can serve; the daemon raises it too. */
export function stdinIsDirectory(): CachetError {
  return new CachetError("INPUT_INVALID", "stdin: is a directory, not a file", { hint: 'redirect a file (cachet "PROMPT" < FILE), or pipe text in' });
}

/** Bytes asked of a redirected file at a time. */
const FILE_CHUNK_BYTES = 1 << 20;

/**
 * A redirected file (`cachet … < FILE`) read a chunk when asked, from the
 * shell's offset on, into one buffer reused for every chunk (the collector
 * copies each before the next read): the runtime's stream gives each chunk of
 * a file as a new allocation, so a file read at disk speed left up to its
 * whole size of chunks as garbage next to the collected bytes until a
 * collection (measured: 200 MiB of mixed-script prose peaked 22 MiB lower).
 * @param fd an open file descriptor (the daemon passes a client's stdin it received)
 */
export function fileReader(fd: number, chunkBytes: number = FILE_CHUNK_BYTES): ChunkReader {
  const { read } = process.getBuiltinModule("node:fs");
  const buffer = new Uint8Array(chunkBytes);
  return {
    read: () =>
      new Promise((resolve, reject) =>
        read(fd, buffer, 0, chunkBytes, null, (error, n) => {
          if (error) reject(error);
          else resolve(n === 0 ? { done: true } : { done: false, value: buffer.subarray(0, n) });
        }),
      ),
    cancel: async () => {},
    releaseLock: () => {},
  };
}

/** The device number of /dev/null; undefined where there is none. */
async function nullDevice(): Promise<number | undefined> {
  try {
    return (await Bun.file("/dev/null").stat()).rdev;
  } catch {
    return undefined;
  }
}

/** What fd 0 is; undefined when it cannot be asked. */
async function stdinStat(): Promise<Stats | undefined> {
  try {
    return await Bun.stdin.stat();
  } catch {
    return undefined;
  }
}
