/**
 * The client side of the resident daemon (src/daemon/server.ts): when a
 * daemon listens on `<data dir>/daemon.sock`, a turn is handed to it and this
 * process only relays: the daemon's stdout and stderr to fds 1 and 2, stdin
 * when (and as much as) the daemon asks for it, signals, and the exit code.
 * Anything else (no socket, a declined command) runs in this process as usual.
 */
import type { FileSink, Socket } from "bun";
import { commandOf } from "../cli/command-line.ts";
import { processEdges } from "../edges.ts";
import { envFlag } from "../env-flag.ts";
import { statePaths } from "../paths.ts";
import { BUILD, VERSION } from "./identity.ts";
import { encodeFrame, type Exit, FRAME, type Frame, type Hello, json, jsonFrame, PROTOCOL_VERSION, socketPath, socketPathFits, type StdinKind, splitU32, text, u32Frame } from "./protocol.ts";
import { Wire } from "./wire.ts";

const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * Runs the command line `argv` through the daemon when one is listening and
 * takes it. Returns false when this process must run it itself (no daemon,
 * `CACHET_NO_DAEMON`, not a turn, declined); otherwise exits the process
 * with the command's exit code and never returns.
 */
export async function viaDaemon(argv: string[]): Promise<boolean> {
  if (noDaemon()) return false;
  const stdinTerminal = processEdges.isTerminal(0);
  if (commandOf(argv, stdinTerminal) !== "run") return false;
  // A word that was not UTF-8 is checked against the raw bytes of this process's command line (argv-encoding.ts).
  if (argv.some((word) => word.includes("\ufffd"))) return false;
  const path = socketPath(statePaths().data);
  if (!socketPathFits(path) || !mayExist(path)) return false;
  // The socket connects while the hello is made: the connection opens on a later turn of the event loop.
  const connecting = connect(path);
  const hello: Hello = {
    protocol: PROTOCOL_VERSION,
    version: VERSION,
    build: BUILD,
    argv,
    env: process.env as Record<string, string>,
    cwd: process.cwd(),
    umask: process.umask(),
    uid: process.getuid?.() ?? -1,
    terminal: [stdinTerminal, processEdges.isTerminal(1), processEdges.isTerminal(2)],
  };
  const helloFrame = jsonFrame(FRAME.HELLO, hello);
  const connection = await connecting;
  if (!connection) return false;
  const { wire, frames } = connection;
  // The hello goes first: what stdin is (one or two stats on the runtime's thread pool) is asked while the daemon
  // starts the command, which needs the answer only once it opens stdin; the signal handlers are installed meanwhile
  // (a signal before them ends this process, as it ends a turn in its own process before its handlers).
  wire.send(helloFrame);
  void stdinKind().then((kind) => wire.send(encodeFrame(FRAME.STDIN_KIND, kind)));
  // A signal goes to the daemon at once: a turn may write nothing for a long time (a held session lease, a slow hook,
  // a provider's first byte), so the first frame back cannot be what lets signals through. Until that frame it is also
  // kept: on a decline the daemon drops it, and it reaches this process as if it had run alone.
  const held: NodeJS.Signals[] = [];
  let accepted = false;
  const forward = (name: NodeJS.Signals) => () => {
    if (!accepted) held.push(name);
    wire.send(encodeFrame(FRAME.SIGNAL, name));
  };
  const handlers = FORWARDED.map((name) => [name, forward(name)] as const);
  for (const [name, handler] of handlers) process.on(name, handler);
  const unhook = () => {
    for (const [name, handler] of handlers) process.off(name, handler);
  };
  const firstFrame = await frames.next();
  if (firstFrame === undefined || firstFrame.type === FRAME.DECLINE) {
    unhook();
    if (firstFrame && verbose(argv)) processEdges.writeStderr(`cachet: the daemon declined this command (${text(firstFrame.payload)}); running it in this process\n`);
    void wire.end();
    for (const name of held) process.kill(process.pid, name);
    return false;
  }
  accepted = true;
  const exit = await relay(wire, frames, firstFrame);
  unhook();
  if (exit === undefined) {
    processEdges.writeStderr("cachet: the daemon stopped during this command (its connection closed before the command ended); run it again (CACHET_NO_DAEMON=1 runs it in this process)\n");
    process.exit(1);
  }
  if (exit.signal) process.kill(process.pid, exit.signal);
  process.exit(exit.code);
}

/**
 * CACHET_NO_DAEMON read as every boolean variable is (src/env-flag.ts: 0,
 * false, no, off and empty leave the daemon on). A value it does not take
 * runs the turn in this process, whose run command refuses it (exit 2).
 */
function noDaemon(): boolean {
  try {
    return envFlag(process.env, "CACHET_NO_DAEMON");
  } catch {
    return true;
  }
}

/**
 * Whether a file may be at `path`, asked the cheapest way: a synchronous stat
 * of ~10 µs (Bun.file's lastModified; `exists()` answers false for a socket).
 * A failed connect costs ~0.6 ms, paid by every turn run without a daemon.
 * A missing file reads as Bun's "unknown" time (2^52 - 1 ms): anything not a
 * plausible time counts as missing, and a wrong guess either way only means
 * a connect that fails or a turn that runs in this process.
 */
function mayExist(path: string): boolean {
  const mtime = Bun.file(path).lastModified;
  return mtime > 0 && mtime < 1e14;
}

/** `--debug` or `--verbose` among the flags (before `--`): a decline is said on stderr. */
function verbose(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  const flags = end === -1 ? argv : argv.slice(0, end);
  return flags.includes("--debug") || flags.includes("--verbose");
}

/** Frames as they arrive, one at a time; undefined once the socket closed. */
interface FrameQueue {
  next(): Promise<Frame | undefined>;
}

/** A connection to the daemon at `path`, or undefined when none answers there (no file, a stale one). */
async function connect(path: string): Promise<{ wire: Wire; frames: FrameQueue } | undefined> {
  const arrived: (Frame | undefined)[] = [];
  let waiting: ((f: Frame | undefined) => void) | undefined;
  const push = (frame: Frame | undefined) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w(frame);
    } else arrived.push(frame);
  };
  let wire: Wire | undefined;
  try {
    await Bun.connect({
      unix: path,
      socket: {
        open(socket) {
          wire = new Wire(socket as Socket<unknown>, push, () => push(undefined));
        },
        data: (_socket, chunk) => wire?.onData(chunk),
        drain: () => wire?.onDrain(),
        close: () => wire?.onClose(),
        error: () => wire?.onClose(),
      },
    });
  } catch {
    return undefined;
  }
  if (!wire) return undefined;
  return {
    wire,
    frames: {
      next: () => (arrived.length > 0 ? Promise.resolve(arrived.shift()) : new Promise((resolve) => (waiting = resolve))),
    },
  };
}

/** What fd 0 is, for the daemon: it reads a terminal only when asked, and never the null device. */
async function stdinKind(): Promise<StdinKind> {
  if (processEdges.isTerminal(0)) return "terminal";
  const stat = await Bun.stdin.stat().catch(() => undefined);
  if (!stat) return "null";
  if (stat.isFile()) return "file";
  if (stat.isDirectory()) return "directory";
  if (stat.isCharacterDevice()) {
    const dev = await Bun.file("/dev/null")
      .stat()
      .catch(() => undefined);
    if (stat.rdev === dev?.rdev) return "null";
  }
  return "pipe";
}

/**
 * Relays one command's frames from `first` on until its EXIT (returned) or
 * the socket closing first (undefined).
 */
async function relay(wire: Wire, frames: FrameQueue, first: Frame): Promise<Exit | undefined> {
  const out = new Output(wire, Bun.stdout.writer.bind(Bun.stdout));
  const err = new Output(wire, Bun.stderr.writer.bind(Bun.stderr));
  const stdin = new StdinPump(wire);
  for (let frame: Frame | undefined = first; frame !== undefined; frame = await frames.next()) {
    switch (frame.type) {
      case FRAME.STDOUT: {
        const { n, rest } = splitU32(frame.payload);
        out.write(rest, n);
        break;
      }
      case FRAME.STDERR:
        err.write(frame.payload);
        break;
      case FRAME.STDIN_CREDIT:
        stdin.credit(splitU32(frame.payload).n);
        break;
      case FRAME.STDIN_CANCEL:
        stdin.cancel();
        break;
      case FRAME.EXIT:
        stdin.cancel();
        await Promise.all([out.drained(), err.drained()]);
        return json<Exit>(frame.payload);
    }
  }
  stdin.cancel();
  await Promise.all([out.drained(), err.drained()]);
  return undefined;
}

/**
 * One of this process's output fds, written through Bun's native writer as
 * src/stdout.ts writes: each piece written and flushed in order. Stdout
 * pieces are acknowledged (their failure, EPIPE included, goes back to the
 * daemon); while the fd does not take what it was given, the socket is not read.
 */
class Output {
  private sink: FileSink | undefined;
  private pending = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly wire: Wire,
    private readonly open: () => FileSink,
  ) {}

  write(bytes: Uint8Array, seq?: number): void {
    this.sink ??= this.open();
    this.pending++;
    const sink = this.sink;
    const attempt = <T>(run: () => T): T | Promise<never> => {
      try {
        return run();
      } catch (error) {
        return Promise.reject(error);
      }
    };
    const wrote = attempt(() => sink.write(bytes) as number | Promise<number>);
    const flushed = attempt(() => sink.flush());
    const slow = wrote instanceof Promise || flushed instanceof Promise;
    if (slow) this.wire.pause();
    Promise.all([wrote, flushed]).then(
      () => this.done(seq, undefined, slow),
      (error: unknown) => this.done(seq, error as NodeJS.ErrnoException, slow),
    );
  }

  private done(seq: number | undefined, error: NodeJS.ErrnoException | undefined, slow: boolean): void {
    if (seq !== undefined) {
      const failure = error ? JSON.stringify({ code: error.code ?? "EIO", message: error.message }) : "";
      this.wire.send(u32Frame(FRAME.STDOUT_ACK, seq, failure));
    }
    if (slow) this.wire.resume();
    if (--this.pending === 0) for (const done of this.idle.splice(0)) done();
  }

  drained(): Promise<void> {
    return this.pending === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }
}

/** This process's stdin, read only under the daemon's credit, so neither side holds more than its window. */
class StdinPump {
  private reader: { read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>; cancel(): Promise<void> } | undefined;
  private allowance = 0;
  private pumping = false;
  private stopped = false;

  constructor(private readonly wire: Wire) {}

  credit(bytes: number): void {
    this.allowance += bytes;
    void this.pump();
  }

  cancel(): void {
    if (this.stopped) return;
    this.stopped = true;
    void this.reader?.cancel().catch(() => {});
  }

  private async pump(): Promise<void> {
    if (this.pumping || this.stopped) return;
    this.pumping = true;
    try {
      const reader = (this.reader ??= (Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader() as unknown as NonNullable<StdinPump["reader"]>);
      while (this.allowance > 0 && !this.stopped) {
        const next = await reader.read();
        if (this.stopped) break;
        if (next.done) {
          this.stopped = true;
          this.wire.send(encodeFrame(FRAME.STDIN_END));
          break;
        }
        this.allowance -= next.value.byteLength;
        this.wire.send(encodeFrame(FRAME.STDIN_DATA, next.value));
      }
    } catch (error) {
      if (!this.stopped) {
        const e = error as NodeJS.ErrnoException;
        this.wire.send(encodeFrame(FRAME.STDIN_END, JSON.stringify({ code: e?.code ?? "EIO", message: e?.message ?? String(error) })));
      }
      this.stopped = true;
    } finally {
      this.pumping = false;
    }
  }
}
