/**
 * The client side of the resident daemon (src/daemon/server.ts): when a
 * daemon listens on `<data dir>/daemon.sock`, a turn is handed to it and this
 * process only relays: the daemon's stdout and stderr to fds 1 and 2, stdin
 * when (and as much as) the daemon asks for it, signals, and the exit code.
 * Anything else (no socket, a declined command) runs in this process as usual;
 * after a turn that found no daemon, src/cli/launch.ts starts one for the next.
 */
import type { BunFile, FileSink, Socket } from "bun";
import type { Stats } from "node:fs";
import { commandOf } from "../cli/command-line.ts";
import { fileReader, processEdges } from "../edges.ts";
import { envFlag } from "../env-flag.ts";
import { statePaths } from "../paths.ts";
import { BUILD, VERSION } from "./identity.ts";
import { encodeFrame, type Exit, FRAME, type Frame, type Hello, json, jsonFrame, PROTOCOL_VERSION, socketPath, socketPathFits, type StdinKind, splitU32, text, u32Frame } from "./protocol.ts";
import { namesProcessFile, PROCESS_FILE_REASON } from "./process-files.ts";
import { Wire } from "./wire.ts";

const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * Why a command was left to this process to run: "absent", no daemon answered for its state directory (no socket
 * file, one whose connect failed: a daemon killed, or one not yet listening, or a connection closed before any answer:
 * a daemon that died as it was reached); "declined", a daemon answered but did not take it (running another turn,
 * another build, an environment that differs, no answer within {@link ACCEPT_WAIT_MS}, …); "unsent", it was never
 * offered (CACHET_NO_DAEMON, not a turn, a U+FFFD word, a removed working directory, a socket path too long for the
 * platform). Only "absent" leads to starting one (src/daemon/autostart.ts).
 */
export type LeftToProcess = "absent" | "declined" | "unsent";

/**
 * Runs the command line `argv` through the daemon when one is listening and
 * takes it: then exits the process with the command's exit code and never
 * returns. Otherwise resolves to why this process must run it itself
 * ({@link LeftToProcess}).
 */
export async function viaDaemon(argv: string[]): Promise<LeftToProcess> {
  if (noDaemon()) return "unsent";
  const stdinTerminal = processEdges.isTerminal(0);
  if (commandOf(argv, stdinTerminal) !== "run") return "unsent";
  // A word that was not UTF-8 is checked against the raw bytes of this process's command line (argv-encoding.ts).
  // A loop, not some(): some()'s first call in a process compiles the builtin (measured: ~0.12 ms of this client's way
  // to its hello).
  for (let i = 0; i < argv.length; i++) if (argv[i]!.includes("\ufffd")) return "unsent";
  // A file of this process's own (`--tools <(…)`, `-s @/dev/stdin`): the daemon would open its own.
  for (let i = 0; i < argv.length; i++) {
    if (!namesProcessFile(argv[i]!)) continue;
    if (verbose(argv) && daemonMayListen()) processEdges.writeStderr(`cachet: the daemon cannot take this command (${PROCESS_FILE_REASON}); running it in this process\n`);
    return "unsent";
  }
  // The daemon runs a turn in the client's working directory: one removed since leaves the turn to this process
  // (which also says so when a relative CACHET_HOME needs it, src/paths.ts); with a daemon there to take it, the reason
  // is said under --verbose as the daemon's own declines are.
  const cwd = workingDirectoryOrUndefined();
  if (cwd === undefined) {
    if (verbose(argv) && daemonMayListen()) processEdges.writeStderr("cachet: the daemon cannot take this command (the working directory was removed, and the daemon runs a turn in its client's); running it in this process\n");
    return "unsent";
  }
  const path = socketPath(statePaths().data);
  if (!socketPathFits(path)) return "unsent";
  if (!mayExist(path)) return "absent";
  // fd 0 is asked what it is, and the socket connects, while the hello is made: both answer on a later turn of the
  // event loop (the stats first: they run on another thread, which is started meanwhile).
  const kind = stdinKind(stdinTerminal);
  const connecting = connect(path);
  const hello: Hello = {
    protocol: PROTOCOL_VERSION,
    version: VERSION,
    build: BUILD,
    argv,
    env: process.env as Record<string, string>,
    cwd,
    umask: process.umask(),
    uid: process.getuid?.() ?? -1,
    pid: process.pid,
    terminal: [stdinTerminal, processEdges.isTerminal(1), processEdges.isTerminal(2)],
  };
  const helloFrame = jsonFrame(FRAME.HELLO, hello);
  // Installed before the hello leaves, while the connect is awaited anyway, and kept until the command's end: once
  // the hello is out the daemon may send the request at once, and a client descheduled right after its write (a
  // loaded machine) met a signal sent meanwhile with no handler, dying of it silently.
  const signals = signalRelay();
  const connection = await connecting;
  if (!connection) {
    const held = signals.remove();
    if (held) return interruptedUnsent(held);
    return "absent";
  }
  const { wire, frames } = connection;
  // What stdin is follows the hello in the same write: the daemon opens stdin a few hundred microseconds into the
  // command and waits for the answer there, and a frame in a later read waits until the daemon's event loop comes
  // round to reading it.
  const stdinIs = await kind;
  wire.send(joined(helloFrame, encodeFrame(FRAME.STDIN_KIND, stdinIs)));
  const answer = await accepted(wire, frames, signals);
  if (answer.kind !== "accepted") signals.remove();
  if (answer.kind === "interrupted") {
    void wire.end();
    return interruptedUnsent(answer.signal);
  }
  if (answer.kind !== "accepted") {
    if (answer.kind === "declined" && verbose(argv)) processEdges.writeStderr(`cachet: the daemon declined this command (${answer.reason}); running it in this process\n`);
    if (answer.kind === "unanswered") processEdges.writeStderr(`cachet: the daemon did not answer within ${ACCEPT_WAIT_MS / 1000} s (stopped or hung? \`cachet daemon status\` tells); running this command in this process\n`);
    void wire.end();
    // Closed unanswered, the connection went to a daemon that died as it was reached (SIGKILL ends a process's threads
    // one by one, and the last holds the listener open a while): none answered, and the next turns need one started.
    return answer.kind === "closed" ? "absent" : "declined";
  }
  // From here on the daemon runs the command: a signal is the command's, and the client never runs it itself.
  let unanswered: ReturnType<typeof setTimeout> | undefined;
  const unhook = () => {
    clearTimeout(unanswered);
    signals.remove();
  };
  signals.handle((name) => {
    wire.send(encodeFrame(FRAME.SIGNAL, name));
    // The command ends within a second of a signal, as in its own process (src/run/interrupt.ts); one not ended long
    // after is in a stopped or hung daemon, and the client stops waiting for it, as the command's own watchdog would
    // have ended its own process.
    unanswered ??= setTimeout(() => {
      unhook();
      processEdges.writeStderr(
        `cachet: interrupted by ${name}; the command did not end within ${SIGNAL_WAIT_MS / 1000} s in the daemon (stopped or hung?), so this client stops waiting: what the turn stored is kept (\`cachet sessions show\` and \`cachet export\` show it)\n`,
      );
      if (name === "SIGHUP") process.kill(process.pid, name);
      processEdges.exit(name === "SIGINT" ? 130 : 143);
    }, SIGNAL_WAIT_MS);
  });
  const exit = await relay(wire, frames, stdinIs);
  clearTimeout(unanswered);
  // The command is over: a signal from here on comes as the process exits, and changes nothing, as in the command's
  // own process. The handlers stay to the exit: removed, a signal in the few ms the exit takes met its default
  // action, and the client died of it silently after a whole answer (1 run in about 200 under load).
  signals.handle(() => {});
  if (exit === undefined) {
    processEdges.writeStderr(
      "cachet: the daemon stopped during this command, so its output here was cut short; what the turn stored is kept (`cachet sessions show` and `cachet export` show it)\n",
    );
    processEdges.exit(1);
  }
  if (exit.signal) {
    signals.remove();
    process.kill(process.pid, exit.signal);
  }
  processEdges.exit(exit.code);
}

/** Ends this process as a command interrupted by `signal` before it started ends in its own process: nothing was sent. */
async function interruptedUnsent(signal: NodeJS.Signals): Promise<never> {
  if (signal === "SIGHUP") process.kill(process.pid, signal);
  const { NOTHING_SENT } = await import("../run/interrupt.ts");
  processEdges.writeStderr(`cachet: interrupted by ${signal} ${NOTHING_SENT}\n`);
  return processEdges.exit(signal === "SIGINT" ? 130 : 143);
}

/**
 * How long a client waits for the daemon's ACCEPT (or DECLINE) before it runs the command itself, ms. A live daemon
 * answers within milliseconds (its checks stat a few files); what may take long (a held session lease, a slow hook,
 * the provider) comes after ACCEPT.
 */
const ACCEPT_WAIT_MS = 2000;

/** How long a client waits for an accepted command to end after forwarding it a signal, ms (it ends within 1 s). */
const SIGNAL_WAIT_MS = 3000;

/** How long a client that cancelled waits for the daemon to show whether it had already accepted, ms. */
const CANCEL_WAIT_MS = 500;

/** What became of a command handed to the daemon, up to its start. */
type Answer = { kind: "accepted" } | { kind: "declined"; reason: string } | { kind: "closed" } | { kind: "unanswered" } | { kind: "interrupted"; signal: NodeJS.Signals };

/**
 * Waits for the daemon to accept the command. A signal before that (SIGINT, SIGTERM, SIGHUP), or no answer within
 * {@link ACCEPT_WAIT_MS}, cancels it: the client sends the signal and CANCEL, and a daemon that reads them before it
 * starts the command never starts it (it checks for them right before its ACCEPT, in the same turn of its loop as
 * the start). An ACCEPT the daemon sent before it read them arrives within {@link CANCEL_WAIT_MS} from a live
 * daemon; then the command runs there, and the forwarded signal interrupts it as it would in its own process.
 * Without that ACCEPT the command never started: a signal ends the client as the command ends when interrupted
 * before sending ("interrupted" — a second signal ends the wait at once), no answer runs it in the client
 * ("unanswered"); a stopped daemon that wakes later finds the CANCEL and does nothing.
 */
async function accepted(wire: Wire, frames: FrameQueue, relay: SignalRelay): Promise<Answer> {
  const next = frames.next();
  let signals = 0;
  let interrupt!: (signal: NodeJS.Signals) => void;
  let again!: () => void;
  const signalled = new Promise<NodeJS.Signals>((resolve) => (interrupt = resolve));
  const secondSignal = new Promise<"again">((resolve) => (again = () => resolve("again")));
  relay.handle((name) => (signals++ === 0 ? interrupt(name) : again()));
  const timer = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms).unref());
  const answerOf = (frame: Frame | undefined): Answer =>
    frame === undefined ? { kind: "closed" } : frame.type === FRAME.ACCEPT ? { kind: "accepted" } : { kind: "declined", reason: text(frame.payload) };
  try {
    const first = await Promise.race([next, signalled, timer(ACCEPT_WAIT_MS, "late" as const)]);
    if (typeof first === "object") return answerOf(first);
    const signal = first === "late" ? undefined : first;
    if (signal) wire.send(encodeFrame(FRAME.SIGNAL, signal));
    wire.send(encodeFrame(FRAME.CANCEL));
    const after = await Promise.race([next, timer(CANCEL_WAIT_MS, "late" as const), ...(signal ? [secondSignal] : [])]);
    if (typeof after === "object" && after?.type === FRAME.ACCEPT) return { kind: "accepted" };
    // A decline or a close after CANCEL is the daemon's answer to it; "late" a daemon that reads nothing.
    if (signal) return { kind: "interrupted", signal };
    return after === "late" ? { kind: "unanswered" } : answerOf(after as Frame | undefined);
  } finally {
    relay.handle(undefined);
  }
}

/** This process's handlers of the forwarded signals, from the hello to the command's end; what they do is set per phase. */
interface SignalRelay {
  /** Sets what a signal does from now on; undefined holds signals back until the next handler is set, which gets them. */
  handle(handler: ((name: NodeJS.Signals) => void) | undefined): void;
  /**
   * Removes the handlers: a signal from now on has its default action (or the handlers installed later).
   * @returns the first signal held back since the last handler was set (none is once a handler was set after it)
   */
  remove(): NodeJS.Signals | undefined;
}

/**
 * Installs the handlers once, before the hello leaves, and keeps them to the command's end. A client that swapped its
 * accept-wait handlers for its forwarding ones died of a signal sent meanwhile, its command's line never printed: in
 * Bun a signal whose last listener was removed meets its default action even when the next listener is added in the
 * same synchronous step (measured: 27 of 30 SIGTERMs sent during such swaps killed the process).
 */
function signalRelay(): SignalRelay {
  let current: ((name: NodeJS.Signals) => void) | undefined;
  const held: NodeJS.Signals[] = [];
  const handlers: (() => void)[] = [];
  // Indexed loops: the first map() or for-of of a process compiles that builtin (map measured at ~0.15 ms of the way
  // to the hello).
  for (let i = 0; i < FORWARDED.length; i++) {
    const name = FORWARDED[i]!;
    handlers.push(() => (current ? current(name) : held.push(name)));
    process.on(name, handlers[i]!);
  }
  return {
    handle(handler) {
      current = handler;
      if (handler) for (const name of held.splice(0)) handler(name);
    },
    remove() {
      for (let i = 0; i < FORWARDED.length; i++) process.off(FORWARDED[i]!, handlers[i]!);
      return held.splice(0)[0];
    },
  };
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

/** Frames `a` and `b` as one buffer, for one write. */
function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const both = new Uint8Array(a.byteLength + b.byteLength);
  both.set(a);
  both.set(b, a.byteLength);
  return both;
}

/**
 * Whether a daemon may be listening for this process's state directory (its socket file is there); false too when
 * that directory cannot be resolved without the working directory (a relative CACHET_HOME): the turn's own process
 * reports that.
 */
function daemonMayListen(): boolean {
  try {
    const path = socketPath(statePaths().data);
    return socketPathFits(path) && mayExist(path);
  } catch {
    return false;
  }
}

/** This process's working directory, or undefined when it was removed since the process started there. */
function workingDirectoryOrUndefined(): string | undefined {
  try {
    return process.cwd();
  } catch {
    return undefined;
  }
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

/**
 * What fd 0 is, for the daemon: it reads a terminal only when asked, and never the null device. Asked with Bun's own
 * stats, which answer on a later turn of the event loop (the socket's connect is awaited meanwhile): node:fs's
 * synchronous ones cost loading node:fs, Bun's JS builtin (~1.5 ms on the client's way to its hello, measured), and
 * Bun.stdin's stat builds the Bun.stdin object first (~1 ms).
 * @param terminal whether fd 0 is a terminal (already asked)
 */
async function stdinKind(terminal: boolean): Promise<StdinKind> {
  if (terminal) return "terminal";
  // Both asked at once; awaited in turn, not with Promise.all (whose first call compiles the builtin).
  const own = statOrUndefined(Bun.file(0));
  const nullDevice = statOrUndefined(Bun.file("/dev/null"));
  const stat = await own;
  if (!stat) return "null";
  if (stat.isFile()) return "file";
  if (stat.isDirectory()) return "directory";
  if (stat.isCharacterDevice() && stat.rdev === (await nullDevice)?.rdev) return "null";
  return "pipe";
}

/** `file`'s stat, or undefined when it cannot be asked. */
function statOrUndefined(file: BunFile): Promise<Stats | undefined> {
  return file.stat().catch(() => undefined);
}

/**
 * Relays one accepted command's frames until its EXIT (returned) or
 * the socket closing first (undefined).
 * @param stdinIs what fd 0 is, as told to the daemon
 */
async function relay(wire: Wire, frames: FrameQueue, stdinIs: StdinKind): Promise<Exit | undefined> {
  const out = new Output(wire, Bun.stdout.writer.bind(Bun.stdout));
  const err = new Output(wire, Bun.stderr.writer.bind(Bun.stderr));
  const stdin = new StdinPump(wire, stdinIs === "file");
  for (let frame = await frames.next(); frame !== undefined; frame = await frames.next()) {
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
      case FRAME.STDOUT_SYNC:
        // Each STDOUT frame before it was given to the writer, and acknowledged already if the writer took it at once.
        wire.send(u32Frame(FRAME.STDOUT_SYNCED, splitU32(frame.payload).n));
        break;
      case FRAME.EXIT: {
        stdin.cancel();
        const exit = json<Exit>(frame.payload);
        // A command that ended its process at once (exit(), a signal) would not have waited for a reader that stopped
        // reading (a full pipe): what such a reader left is given up, what a reader takes is written out.
        await Promise.all(exit.abrupt ? [out.drainedUnlessStuck(), err.drainedUnlessStuck()] : [out.drained(), err.drained()]);
        return exit;
      }
    }
  }
  stdin.cancel();
  // The daemon is gone: nothing more comes, and a reader that stopped reading does not keep this process.
  await Promise.all([out.drainedUnlessStuck(), err.drainedUnlessStuck()]);
  return undefined;
}

/**
 * How long an output fd may take nothing before a command that ended abruptly stops waiting for it, ms: the
 * command's own process would have exited at once, leaving a stopped reader what its pipe held (64 KiB on Linux);
 * this process writes out, past that, what a reader still reading takes.
 */
const STUCK_OUTPUT_MS = 1000;

/**
 * One of this process's output fds, written through Bun's native writer as
 * src/stdout.ts writes: each piece written and flushed in order. Stdout
 * pieces are acknowledged (their failure, EPIPE included, goes back to the
 * daemon). The socket is read on while the fd does not take what it was
 * given: the writer holds it, as the command's own process would, and the
 * command's end (its EXIT, a stop's SIGTERM) reaches this process however
 * long its reader stopped reading.
 */
class Output {
  private sink: FileSink | undefined;
  private pending = 0;
  /** Pieces written (or failed) so far: whether the fd still takes what it is given. */
  private written = 0;
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
    // Taken at once (a pipe with room, a file): acknowledged now, so before anything the next frames bring
    // (a STDOUT_SYNC the daemon sends to learn, after a signal, whether stdout took the answer).
    if (typeof wrote === "number" && typeof flushed === "number") return this.done(seq, undefined);
    Promise.all([wrote, flushed]).then(
      () => this.done(seq, undefined),
      (error: unknown) => this.done(seq, error as NodeJS.ErrnoException),
    );
  }

  private done(seq: number | undefined, error: NodeJS.ErrnoException | undefined): void {
    this.written++;
    if (seq !== undefined) {
      const failure = error ? JSON.stringify({ code: error.code ?? "EIO", message: error.message }) : "";
      this.wire.send(u32Frame(FRAME.STDOUT_ACK, seq, failure));
    }
    if (--this.pending === 0) for (const done of this.idle.splice(0)) done();
  }

  /** Resolves once every piece given so far was written (or failed). */
  drained(): Promise<void> {
    return this.pending === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  /** {@link drained}, or sooner once no piece was written for {@link STUCK_OUTPUT_MS} (the fd's reader stopped reading). */
  drainedUnlessStuck(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => {
      let seen = this.written;
      const check = setInterval(() => {
        if (this.written === seen) done();
        seen = this.written;
      }, STUCK_OUTPUT_MS);
      const done = () => {
        clearInterval(check);
        resolve();
      };
      this.idle.push(done);
    });
  }
}

/** This process's stdin, read only under the daemon's credit, so neither side holds more than its window. */
class StdinPump {
  private reader: { read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>; cancel(): Promise<void> } | undefined;
  private allowance = 0;
  private pumping = false;
  private stopped = false;

  /**
   * @param wire the connection to the daemon
   * @param file whether fd 0 is a redirected file: it is then read from the shell's offset on, and that shared offset
   *   advanced, as the command's own process reads it (`{ read -r header; cachet …; cat; } < FILE`); the runtime's
   *   stream reads a file from its start and leaves the offset where it was
   */
  constructor(
    private readonly wire: Wire,
    private readonly file: boolean,
  ) {}

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
      const reader = (this.reader ??= this.file ? fileReader(0) : ((Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader() as unknown as NonNullable<StdinPump["reader"]>));
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
