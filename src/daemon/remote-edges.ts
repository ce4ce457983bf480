/**
 * A client's process edges inside the daemon (src/edges.ts): the command the
 * server runs for it reads the client's stdin, writes its stdout and stderr,
 * gets its signals and ends with its exit code, all through one connection.
 * A command ends the process its own way (exit(), a signal nobody handles),
 * or finishes: returns, or unwinds with a code (finish()), which the server
 * sends as a normal end before it serves on.
 */
import { type ChunkReader, type ChunkSource, type Edges, type StdoutSink, stdinIsDirectory } from "../edges.ts";
import { encodeFrame, type Exit, FRAME, type Frame, type Hello, json, splitU32, type StdinKind, text, u32Frame } from "./protocol.ts";
import type { Wire } from "./wire.ts";

/**
 * Stdin bytes the client may send ahead of the command's reads: what either side holds at most, besides one read's
 * chunk. 4 MiB, not 1: a 2.6 MB piped stdin then never waits for a credit's round trip between the processes
 * (measured once, six alternating daemon turns on a loaded 2-core machine: 1 MiB 460-950 ms, 4 MiB 397-817 ms,
 * the larger window faster in every pair).
 */
export const STDIN_WINDOW_BYTES = 1 << 22;

/** Signal numbers, for the exit code a signal nobody handles gives (128 + n, as shells report it). */
const SIGNAL_NUMBER: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/** The edges bound for one command, and what the server feeds them. */
export interface RemoteEdges {
  /** The edges; `edges.finished` is the code a command that unwound ended with (src/edges.ts finish). */
  edges: Edges;
  /** Hands a client frame (stdin, an acknowledgement, a signal) to the edges. */
  deliver(frame: Frame): void;
  /**
   * How the command ended the process its own way: {@link Edges.exit}, a signal nobody handled, or
   * {@link Edges.finish} after a signal had reached it; undefined while it has not.
   */
  readonly ended: Exit | undefined;
  /** The command is over: stdin reads end, and a signal has no handler. */
  close(): void;
}

/**
 * The edges of the client behind `wire`.
 * @param hello the client's header (its terminal facts and what its stdin is)
 * @param onEnd called once when the command ends the process its own way (exit(), a signal it does not handle, or
 *   finish() once a signal reached it): the daemon must then send the exit and restart, as only a fresh process
 *   abandons what still runs
 */
export function remoteEdges(wire: Wire, hello: Hello, onEnd: (exit: Exit) => void): RemoteEdges {
  let ended: Exit | undefined;
  let finished: number | undefined;
  /** A signal reached the command before it finished. */
  let signalled = false;
  const end = (exit: Exit) => {
    if (ended) return;
    // An exit after finish(): the command's own process had already exited with finish's code.
    ended = finished === undefined ? exit : { code: finished };
    onEnd(ended);
  };
  /** Past the command's end: its own process would be gone, so nothing it writes from here exists. */
  const over = () => ended !== undefined || finished !== undefined;
  const stdin = remoteStdin(wire, hello);
  const stdout = remoteStdout(wire, over);
  const handlers = new Map<NodeJS.Signals, Set<() => void>>();

  const edges: Edges = {
    stdin: () => stdin.source,
    isTerminal: (fd) => hello.terminal[fd],
    stdoutSink: () => stdout.sink,
    stdoutTaken: () => stdout.taken(),
    writeStderr(chunk) {
      // What deep code writes after exit() or finish() would not exist in a process that exited.
      if (!over() && chunk !== "") wire.send(encodeFrame(FRAME.STDERR, chunk));
    },
    onSignal(name, handler) {
      let set = handlers.get(name);
      if (!set) handlers.set(name, (set = new Set()));
      set.add(handler);
      return () => void set.delete(handler);
    },
    exit(code) {
      end({ code });
      // The caller goes on until the server has sent what it wrote and exits; what it writes from here is dropped.
      return undefined as never;
    },
    finish(code) {
      if (over()) return;
      // A signal's handler or its watchdog may have set work going (an abort in flight, a timer) that only the end of
      // the command's own process would have stopped: the command ends as by exit().
      if (signalled) return void end({ code });
      finished = code;
    },
    get finished() {
      return finished;
    },
    pid: hello.pid,
  };

  return {
    edges,
    get ended() {
      return ended;
    },
    deliver(frame) {
      if (frame.type === FRAME.STDIN_DATA || frame.type === FRAME.STDIN_END || frame.type === FRAME.STDIN_KIND) stdin.deliver(frame);
      else if (frame.type === FRAME.STDOUT_ACK) stdout.deliver(frame);
      else if (frame.type === FRAME.STDOUT_SYNCED) stdout.synced(frame);
      else if (frame.type === FRAME.SIGNAL) {
        // After finish() the command's own process would have exited: the signal comes too late to end anything.
        if (finished !== undefined) return;
        signalled = true;
        const name = text(frame.payload) as NodeJS.Signals;
        const set = handlers.get(name);
        // Nobody listens: the signal's default action ends the process, as it would have ended the client's own.
        if (!set || set.size === 0) end({ code: 128 + (SIGNAL_NUMBER[name] ?? 0), signal: name });
        else for (const handler of [...set]) handler();
      }
    },
    close() {
      handlers.clear();
      stdin.close();
      stdout.close();
    },
  };
}

/** The client's stdin as a chunk source: read only when the command opens and reads it, under a credit window. */
function remoteStdin(wire: Wire, hello: Hello) {
  const chunks: Uint8Array[] = [];
  let buffered = 0;
  /** Credit given and not yet used by the client, bytes. */
  let outstanding = 0;
  let done = false;
  let failure: Error | undefined;
  let waiting: { resolve: (r: Awaited<ReturnType<ChunkReader["read"]>>) => void; reject: (e: unknown) => void } | undefined;

  const settle = () => {
    if (!waiting) return;
    const w = waiting;
    if (chunks.length > 0) {
      waiting = undefined;
      const value = chunks.shift()!;
      buffered -= value.byteLength;
      w.resolve({ done: false, value });
    } else if (failure) {
      waiting = undefined;
      w.reject(failure);
    } else if (done) {
      waiting = undefined;
      w.resolve({ done: true });
    }
  };
  // Tops the client's credit up to the window once what it may still send and what is held fell below half of it.
  const grant = () => {
    if (done) return;
    const room = STDIN_WINDOW_BYTES - outstanding - buffered;
    if (room < STDIN_WINDOW_BYTES / 2) return;
    outstanding += room;
    wire.send(u32Frame(FRAME.STDIN_CREDIT, room));
  };
  const reader: ChunkReader = {
    read: () =>
      new Promise((resolve, reject) => {
        waiting = { resolve, reject };
        settle();
        if (waiting) grant();
      }).then((r) => {
        grant();
        return r as Awaited<ReturnType<ChunkReader["read"]>>;
      }),
    async cancel() {
      if (!done) wire.send(encodeFrame(FRAME.STDIN_CANCEL));
      done = true;
      chunks.length = 0;
      buffered = 0;
      settle();
    },
    releaseLock() {},
  };
  let knownKind!: (kind: StdinKind) => void;
  const kind = new Promise<StdinKind>((resolve) => (knownKind = resolve));
  const source: ChunkSource = {
    isTTY: hello.terminal[0],
    // As src/edges.ts's own source: a directory cannot be read, the null device is not.
    open: async () => {
      const what = await kind;
      if (what === "directory") throw stdinIsDirectory();
      return what === "null" ? undefined : reader;
    },
  };
  return {
    source,
    deliver(frame: Frame) {
      if (frame.type === FRAME.STDIN_KIND) return knownKind(text(frame.payload) as StdinKind);
      if (done) return;
      if (frame.type === FRAME.STDIN_DATA) {
        outstanding = Math.max(0, outstanding - frame.payload.byteLength);
        chunks.push(frame.payload);
        buffered += frame.payload.byteLength;
      } else if (frame.payload.byteLength > 0) {
        const e = json<{ code?: string; message?: string }>(frame.payload);
        failure = Object.assign(new Error(e.message ?? "stdin read failed"), { code: e.code });
      } else done = true;
      settle();
    },
    close() {
      if (!done && outstanding > 0) wire.send(encodeFrame(FRAME.STDIN_CANCEL));
      done = true;
      settle();
    },
  };
}

/**
 * The client's stdout as a native-writer-like sink: each write is one STDOUT
 * frame the client acknowledges once its own writer took it, so a write
 * fails as the client's write failed (EPIPE once its reader closed the pipe).
 */
function remoteStdout(wire: Wire, exited: () => boolean) {
  let seq = 0;
  const pending = new Map<number, { resolve: (n: number) => void; reject: (e: unknown) => void; bytes: number }>();
  let failure: Error | undefined;
  let idle: (() => void)[] = [];
  const encoder = new TextEncoder();
  let syncs = 0;
  /** Asks waiting for the client's STDOUT_SYNCED, by id. */
  const asking = new Map<number, (taken: boolean) => void>();

  const sink: StdoutSink = {
    write(chunk) {
      if (failure) return Promise.reject(failure);
      const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
      // Written after exit(): a process that exited would not have written it.
      if (exited()) return bytes.byteLength;
      const id = ++seq >>> 0;
      wire.send(u32Frame(FRAME.STDOUT, id, bytes));
      return new Promise<number>((resolve, reject) => pending.set(id, { resolve, reject, bytes: bytes.byteLength }));
    },
    flush() {
      return pending.size === 0 ? 0 : new Promise<number>((resolve) => idle.push(() => resolve(0)));
    },
  };
  return {
    sink,
    /**
     * Whether the client's stdout took every piece sent so far: asked across the connection, as a piece the client's
     * reader takes at once is acknowledged only once the client read its frame. False once the command is over.
     */
    taken(): Promise<boolean> {
      if (pending.size === 0) return Promise.resolve(true);
      if (exited()) return Promise.resolve(false);
      const id = ++syncs >>> 0;
      wire.send(u32Frame(FRAME.STDOUT_SYNC, id));
      return new Promise<boolean>((resolve) => asking.set(id, resolve));
    },
    synced(frame: Frame) {
      const { n } = splitU32(frame.payload);
      const answer = asking.get(n);
      asking.delete(n);
      answer?.(pending.size === 0);
    },
    close() {
      for (const answer of asking.values()) answer(false);
      asking.clear();
    },
    deliver(frame: Frame) {
      const { n, rest } = splitU32(frame.payload);
      const write = pending.get(n);
      if (!write) return;
      pending.delete(n);
      if (rest.byteLength === 0) write.resolve(write.bytes);
      else {
        const e = json<{ code?: string; message?: string }>(rest);
        failure ??= Object.assign(new Error(e.message ?? "write failed"), { code: e.code });
        write.reject(failure);
      }
      if (pending.size === 0) for (const done of idle.splice(0)) done();
    },
  };
}
