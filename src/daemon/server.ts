/**
 * The resident daemon (`cachet daemon run`): a warm process on a unix socket
 * that runs one client's `run` command at a time, with the client's
 * environment, working directory, stdio, signals and exit code, so a turn
 * skips the runtime's cold start, module loading and JIT warm-up. What it
 * cannot do as a fresh process would, it declines (the client then runs the
 * command itself). A command that succeeds, or fails once it has unwound
 * (src/edges.ts finish: an error reported at the command line's top, a run's
 * exit code), ends here as in its own process and the daemon serves on; when
 * a command ends the process its own way (exit(), a signal nobody handles, a
 * signal that reached it, the client gone), a fresh successor takes over, as
 * only a new process abandons what still runs.
 */
import type { Socket, Subprocess, UnixSocketListener } from "bun";
import { bindEdges, type Edges, processEdges } from "../edges.ts";
import { CachetError } from "../errors.ts";
import { asksHelp, commandOf } from "../cli/command-line.ts";
import { type Config, loadConfigKept, pinConfig } from "../config.ts";
import { clientProcessFile } from "../cli/run-files.ts";
import { ask } from "./control.ts";
import { BUILD, VERSION } from "./identity.ts";
import { type Control, encodeFrame, type Exit, FRAME, type Frame, type Hello, json, jsonFrame, pidPath, PROTOCOL_VERSION, type Status } from "./protocol.ts";
import { autostartStampPath, bindingName, removeLeftovers, removePidFile, warmHomeName } from "./leftovers.ts";
import { type RemoteEdges, remoteEdges } from "./remote-edges.ts";
import { namesProcessFile, PROCESS_FILE_REASON } from "./process-files.ts";
import { PREDECESSOR_ENV, spawnServer, UNASKED_ENV } from "./self.ts";
import { ImportedFiles, loadedModuleFiles, otherStateDirs, startEnvDifference } from "./staleness.ts";
import { residentTurnConfig } from "./turn-config.ts";
import { commandEnvironment, keepFetchStable } from "../run/resident-fetch.ts";
import { Wire } from "./wire.ts";
import { workingDirectory, workingDirectoryExists } from "../working-dir.ts";

/** How the server runs. */
export interface ServerOptions {
  /** The socket's path (src/daemon/protocol.ts socketPath). */
  socket: string;
  /** Exit after this long without a command, ms. */
  idleMs: number;
  /**
   * Exit after this long without a command while none has been served yet, ms (then {@link idleMs}); undefined:
   * {@link idleMs} from the start. A daemon a turn started (src/daemon/autostart.ts) waits less for a second turn
   * that a one-off home never sees.
   */
  firstIdleMs?: number;
  /** The arguments a successor is started with (after `daemon run`), e.g. ["--idle", "30m"]. */
  successorArgs: string[];
  /** Restart (a fresh successor) after this many commands, bounding what leaks. */
  maxCommands?: number;
  /** Restart once the resident set is above this many bytes after a command (default {@link MAX_RSS_BYTES}). */
  maxRssBytes?: number;
}

/** The server's life, returned by {@link serve}. */
export interface Server {
  /** Resolves when the server stops listening for good (it exits the process after). */
  stopped: Promise<void>;
}

type Dispatch = (args: string[]) => Promise<void>;

/**
 * Listens on `options.socket` (a stale socket file is replaced) after loading
 * what a run loads. Undefined when another server answered there meanwhile.
 * @throws the socket's error when it cannot be bound (EACCES, EADDRINUSE)
 */
export async function serve(options: ServerOptions): Promise<Server | undefined> {
  // Set by the server this one succeeds; never passed on to a turn or a successor.
  const predecessor = Number(process.env[PREDECESSOR_ENV]) || undefined;
  delete process.env[PREDECESSOR_ENV];
  const path = process.getBuiltinModule("node:path");
  // Not path.resolve alone: in a removed working directory it resolves against the executable's directory, silently.
  const socket = path.isAbsolute(options.socket) ? options.socket : path.resolve(workingDirectory(`the daemon's socket path ${options.socket}`), options.socket);
  // Between commands the daemon sits in its data directory: never in a directory a user may want to remove or unmount.
  const home = path.dirname(socket);
  // What a server killed while it started left here (its process gone) goes before this one adds its own.
  removeLeftovers(home);
  const dispatch = await warmUp();
  await warmTurns(dispatch, path.join(home, warmHomeName(process.pid)));
  const startedAt = Date.now();
  const ownEnv = { ...process.env };
  // A successor starts where this server started, with its environment: a relative CACHET_HOME names the same place.
  // Started in a directory since removed, it starts in the data directory (an absolute CACHET_HOME names it from anywhere).
  const launchCwd = workingDirectoryExists() ? process.cwd() : home;
  process.chdir(home);
  const imported = new ImportedFiles();
  // What the warm-up loaded: a file changed before the first turn is seen too.
  await imported.note(loadedModuleFiles());
  const maxCommands = options.maxCommands ?? 500;
  const maxRss = options.maxRssBytes ?? MAX_RSS_BYTES;
  let served = 0;
  let busy = false;
  let stopping = false;
  /** `daemon stop` asked, or the socket is no longer this server's: it ends for good, and nothing succeeds it. */
  let halted = false;
  /** A successor is about to take over: status says restarting, turns are declined, stop halts it and its successor. */
  let restarting = false;
  /** The successor started, until it took the socket over (or ended without). */
  let successor: Subprocess | undefined;
  /** Connections open now; after a hand-over, the process exits once the last one made before it closed. */
  let connections = 0;
  let drained = false;
  let idle: ReturnType<typeof setTimeout> | undefined;
  let stopped!: () => void;
  const stoppedPromise = new Promise<void>((resolve) => (stopped = resolve));
  const armIdle = () => {
    clearTimeout(idle);
    idle = setTimeout(() => shutdown(), served === 0 && options.firstIdleMs !== undefined ? options.firstIdleMs : options.idleMs);
  };

  const fs = process.getBuiltinModule("node:fs");
  // Another server bound the socket while this one warmed up (two starts at once): it serves; this one is not needed.
  // The server this one succeeds answers as restarting until this one takes the socket over (unless it was stopped).
  const answering = await ask(socket, "status");
  if (answering && !(answering.pid === predecessor && answering.restarting && !answering.stopping)) return undefined;
  if (fs.lstatSync(socket, { throwIfNoEntry: false })?.isDirectory()) {
    throw new CachetError("DAEMON_SOCKET_BLOCKED", `${socket} is a directory, where the daemon's socket goes`, { hint: `remove it (rmdir ${socket}) and start the daemon again` });
  }
  // Bound under a name of its own, then renamed over the socket's: a connection reaches either the server there before
  // (a dead one's stale file, or the predecessor) or this one, never no socket at all. No longer than the socket's name.
  const own = path.join(home, bindingName(process.pid));
  fs.rmSync(own, { force: true });
  // Created owner-only: the umask is narrowed around the bind, and the mode set again in case the platform ignored it.
  const umask = process.umask(0o177);
  let listener: UnixSocketListener<{ wire?: Wire; onFrame?: (f: Frame) => void }>;
  try {
    listener = Bun.listen<{ wire?: Wire; onFrame?: (f: Frame) => void }>({
      unix: own,
      socket: {
        open(socket) {
          connections++;
          const state = socket.data ?? {};
          socket.data = state;
          state.wire = new Wire(
            socket as Socket<unknown>,
            (frame) => state.onFrame?.(frame),
            () => state.onFrame?.({ type: -1, payload: new Uint8Array(0) }),
            true,
          );
          state.onFrame = (frame) => void first(state.wire!, frame, state);
        },
        data: (socket, chunk) => socket.data.wire?.onData(chunk),
        drain: (socket) => socket.data.wire?.onDrain(),
        // A client never half-closes: its end of the stream is its end (a client killed mid-command included).
        end: (socket) => socket.data.wire?.onClose(),
        close: (socket) => {
          connections--;
          socket.data.wire?.onClose();
          if (drained) leave();
        },
        error: (socket) => socket.data.wire?.onClose(),
      },
    });
  } finally {
    process.umask(umask);
  }
  fs.chmodSync(own, 0o600);
  fs.renameSync(own, socket);
  // Named by `daemon status`/`stop` when this server stops answering (src/daemon/control.ts).
  fs.writeFileSync(pidPath(socket), `${process.pid}\n`, { mode: 0o600 });
  // A turn that found no daemon and started one held the next turns back from starting more (src/daemon/autostart.ts):
  // they find this socket now.
  try {
    fs.rmSync(autostartStampPath(home), { force: true });
  } catch {
    // Not removable (another user's file): it goes stale and is replaced.
  }
  const bound = socketIdentity();
  // The predecessor (this process's parent while it lives) exits once its socket is no longer its own.
  if (predecessor !== undefined && process.ppid === predecessor) process.kill(predecessor, "SIGTERM");
  // A socket file removed or replaced (the data directory deleted, another server bound the path) leaves this server
  // unreachable by turns, status and stop: it ends rather than live on unseen, after the command it runs.
  // During a hand-over that is the successor taking over: this one just exits.
  const watch = setInterval(() => socketIdentity() !== bound && (successor ? shutdown() : halt(false)), SOCKET_CHECK_MS);
  watch.unref();

  armIdle();

  /** What tells the socket file from another at its path (an inode number is reused at once), or "" when there is none. */
  function socketIdentity(): string {
    const stat = fs.statSync(socket, { bigint: true, throwIfNoEntry: false });
    return stat ? `${stat.dev}:${stat.ino}:${stat.ctimeNs}` : "";
  }

  /** Stops taking connections; removes the socket file unless another server's replaced it, and the pid file if it names this one. */
  function close(): void {
    if (stopping) return;
    stopping = true;
    clearTimeout(idle);
    clearInterval(watch);
    // A server that took the socket over (a successor, another start) has written its own: that one stays.
    removePidFile(pidPath(socket), process.pid);
    // Bun's stop() unlinks the listener's path, whatever file is there now: another's is left alone (the exit closes this one).
    if (socketIdentity() !== bound) return stopped();
    listener.stop();
    fs.rmSync(socket, { force: true });
    stopped();
  }

  /** Exits; a successor not yet in this server's place is ended too (a SIGTERM to a daemon stops it). */
  function shutdown(): void {
    if (successor && !halted && socketIdentity() !== bound) return handedOver();
    if (socketIdentity() === bound) successor?.kill("SIGTERM");
    close();
    processEdges.exit(0);
  }

  /**
   * The successor holds the socket now. A connection made just before it did waits in this server's queue: it is
   * accepted and answered (status: restarting; a turn: declined; stop: stops both), not dropped as "not running".
   */
  function handedOver(): void {
    if (drained) return;
    clearInterval(watch);
    setTimeout(() => {
      drained = true;
      leave();
    }, HANDOVER_DRAIN_MS);
    // A client that never ends its connection does not keep this process.
    setTimeout(() => processEdges.exit(0), STOP_GRACE_MS).unref();
  }

  function leave(): void {
    if (connections === 0 && !halted) processEdges.exit(0);
  }

  /**
   * A fresh process takes over: this one starts its successor and keeps the socket, answering status as restarting
   * and declining turns, until the successor has taken the socket over (its SIGTERM then ends this one); one that ends
   * without leaves no daemon. A stopped server has no successor: the user (or a removed socket) ended it.
   */
  function restart(): void {
    if (successor) return;
    restarting = true;
    clearTimeout(idle);
    if (halted) return shutdown();
    let started: Subprocess;
    try {
      started = spawnServer(options.successorArgs, { env: { ...ownEnv, [PREDECESSOR_ENV]: String(process.pid), [UNASKED_ENV]: "" }, cwd: launchCwd });
    } catch {
      // Nothing to tell (a start directory removed since): without a daemon, turns run in their own process.
      return shutdown();
    }
    successor = started;
    void started.exited.then(() => {
      successor = undefined;
      if (!halted) shutdown();
    });
  }

  /**
   * Ends this server for good (`daemon stop`, a socket that is no longer its own): at once between commands, once
   * `flushed` resolves. While a command runs it keeps answering status as stopping and declines turns; with
   * `endRunning` the command is ended as the client's SIGTERM would end it, and whatever still runs after
   * {@link STOP_GRACE_MS} is abandoned.
   */
  function halt(endRunning: boolean, flushed: Promise<void> = Promise.resolve()): void {
    if (halted) return;
    halted = true;
    if (successor) {
      // Stop waits for the successor's end too: after it, no daemon runs.
      const ending = successor;
      ending.kill("SIGTERM");
      void Promise.all([ending.exited, flushed]).then(() => shutdown());
      return;
    }
    // An abandoned command's end (abandon) exits, halted: no successor.
    if (restarting) return;
    if (!busy) {
      close();
      void flushed.then(() => processEdges.exit(0));
      return;
    }
    if (!endRunning) return;
    // A command still in its checks has no edges yet: first() declines it once they end.
    running?.deliver({ type: FRAME.SIGNAL, payload: new TextEncoder().encode("SIGTERM") });
    setTimeout(shutdown, STOP_GRACE_MS);
  }

  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, shutdown);
  /** The edges of the command running now, for an error nothing caught. */
  let running: RemoteEdges | undefined;
  // An error nothing caught ends a process that runs one command with the error on its stderr and exit 1: the
  // command running here ends so, on its client's stderr. After exit() the command is being abandoned anyway; between
  // commands (something a finished command left behind, which its own process would not have lived to see) a fresh
  // daemon takes over.
  const crash = (error: unknown) => {
    if (running?.ended) return;
    if (!running) return restart();
    running.edges.writeStderr(`${Bun.inspect(error)}\n`);
    running.edges.exit(1);
  };
  process.on("uncaughtException", crash);
  process.on("unhandledRejection", crash);

  async function first(wire: Wire, frame: Frame, state: { onFrame?: (f: Frame) => void }): Promise<void> {
    if (frame.type === FRAME.CONTROL) return control(wire, json<Control>(frame.payload));
    if (frame.type !== FRAME.HELLO) return void wire.end();
    const hello = json<Hello>(frame.payload);
    if (hello.protocol !== PROTOCOL_VERSION || hello.version !== VERSION || hello.build !== BUILD) {
      // The binary was upgraded (or another one found this socket): this server is stale.
      await decline(wire, `the daemon runs cachet ${VERSION} (build ${BUILD}), this is ${hello.version} (build ${hello.build}); it stops`);
      return retire();
    }
    if (busy || stopping || halted || restarting) {
      return decline(wire, stopping || halted ? "the daemon is stopping" : restarting ? "the daemon is restarting" : "the daemon is running another command");
    }
    // Taken before the checks' awaits: a second client meanwhile is told the daemon is busy.
    busy = true;
    clearTimeout(idle);
    const early: Frame[] = [];
    state.onFrame = (f) => void early.push(f);
    // The config is read in the client's working directory (CACHET_PLUGINS paths are relative to it); the turn runs
    // with that same config (pinConfig), never one edited in between.
    // Read every turn, but parsed again only when the file changed (src/config.ts loadConfigKept).
    // A file a flag names that leads to a file of the client's own process (a symlink to /dev/stdin, `stdin` in /dev,
    // /dev/./fd/3) is asked here, from the client's directory: its client sent the command, as it sends any but the
    // literal forms, which it tells without a system call (src/daemon/process-files.ts).
    const checked =
      refusal(hello) ?? enter(hello.cwd) ?? (await clientProcessFile(hello.argv, hello.terminal[0], hello.cwd)) ?? (await residentTurnConfig(hello.env, loadConfigKept));
    const reason = typeof checked === "string" ? checked : undefined;
    const changed = reason === undefined ? await imported.changed() : undefined;
    // The start waits past the frames already received: a client that cancelled (a signal, no answer in time) or
    // closed meanwhile is never started; the check, ACCEPT and the start are one turn of the loop.
    if (reason === undefined && changed === undefined) await new Promise((resolve) => setImmediate(resolve));
    const cancelled = early.some((f) => f.type === -1 || f.type === FRAME.CANCEL);
    if (typeof checked === "string" || changed !== undefined || halted || cancelled) {
      busy = false;
      process.chdir(home);
      const why = changed !== undefined ? `module file ${changed} changed since the daemon loaded it; it restarts` : cancelled ? "the client cancelled it" : "the daemon is stopping";
      await decline(wire, reason ?? why);
      if (stopping || halted) return shutdown();
      if (changed !== undefined) return restart();
      return armIdle();
    }
    wire.send(encodeFrame(FRAME.ACCEPT));
    await run(wire, hello, state, early, checked);
  }

  /** Moves into the client's working directory; why not when it cannot (it was removed). */
  function enter(cwd: string): string | undefined {
    try {
      process.chdir(cwd);
      return undefined;
    } catch {
      process.chdir(home);
      return `the working directory ${cwd} cannot be entered`;
    }
  }

  /** Stops taking commands, and exits unless one is running (its end exits). */
  function retire(): void {
    close();
    if (!busy) processEdges.exit(0);
  }

  /** Why the daemon will not run `hello`'s command, or undefined when it will. */
  function refusal(hello: Hello): string | undefined {
    if (commandOf(hello.argv, hello.terminal[0]) !== "run") return "the daemon runs only turns (the run command)";
    // citty decides help's colour once, when it loads: the run's help is printed by the client's own process.
    if (asksHelp(hello.argv)) return "help is shown by the client itself";
    if (hello.uid !== (process.getuid?.() ?? -1)) return "the client runs as another user";
    // Such a word is checked against the raw bytes of the process's own command line (src/cli/argv-encoding.ts).
    if (hello.argv.some((word) => word.includes("\ufffd"))) return "a command-line word holds U+FFFD";
    if (hello.argv.some(namesProcessFile)) return PROCESS_FILE_REASON;
    const differs = startEnvDifference(hello.env, ownEnv);
    if (differs !== undefined) return `${differs} differs from the daemon's (read once, when a process starts)`;
    if (otherStateDirs(hello.env, hello.cwd, ownEnv, launchCwd)) return "the client's config or data directory differs from the daemon's";
    return undefined;
  }

  async function run(wire: Wire, hello: Hello, state: { onFrame?: (f: Frame) => void }, early: Frame[], config: { path: string; config: Config }): Promise<void> {
    const saved = { cwd: home, argv: process.argv, exitCode: process.exitCode, umask: process.umask() };
    const remote = remoteEdges(wire, hello, (exit) => abandon(wire, exit));
    running = remote;
    let signalled = false;
    let orphaned: ReturnType<typeof setTimeout> | undefined;
    state.onFrame = (frame) => {
      if (frame.type === FRAME.SIGNAL) signalled = true;
      if (frame.type !== -1) return remote.deliver(frame);
      // The client went away before the command ended: its process is gone, as if killed. Unless it had forwarded a
      // signal first: then it stopped waiting for this server (stopped or hung meanwhile, src/daemon/client.ts
      // SIGNAL_WAIT_MS) and ended as that signal ends the command, which ends here as in its own process, storing
      // what it kept (its watchdog ends it within a second); one that does not end is abandoned after the stop grace.
      if (!signalled || remote.ended) return abandon(wire, undefined);
      orphaned ??= setTimeout(() => abandon(wire, undefined), STOP_GRACE_MS);
    };
    for (const frame of early) state.onFrame(frame);
    // Between commands process.env holds the daemon's own environment (each command's is put back after it): only
    // what differs from it is set, without reading the live environment (a native lookup per variable).
    switchEnv(ownEnv, hello.env);
    commandEnvironment(hello.env);
    process.umask(hello.umask);
    process.argv = [...saved.argv.slice(0, 2), ...hello.argv];
    process.exitCode = undefined;
    const unbind = bindEdges(remote.edges);
    pinConfig(config);
    try {
      await dispatch(hello.argv);
    } catch (error) {
      // dispatch reports every error itself; one escaping it is a bug of the daemon's.
      remote.edges.writeStderr(`cachet: internal error in the daemon: ${(error as Error)?.message ?? String(error)}\n`);
      if (!remote.ended) remote.edges.exit(1);
    }
    // exit() was called: abandon() sends it and restarts; nothing of this process is reused.
    if (remote.ended) return;
    clearTimeout(orphaned);
    running = undefined;
    // A command that unwound with a code (src/edges.ts finish) ends as one that returned: every finally of it ran.
    const finished = remote.edges.finished;
    const code = finished ?? (typeof process.exitCode === "number" ? process.exitCode : 0);
    remote.close();
    unbind();
    pinConfig(undefined);
    commandEnvironment(undefined);
    replaceEnv(ownEnv);
    process.chdir(saved.cwd);
    process.umask(saved.umask);
    process.argv = saved.argv;
    process.exitCode = saved.exitCode;
    state.onFrame = () => {};
    // Its own process would have exited at once, not waiting for the writes stdout had not taken (src/stdout.ts):
    // the client does not wait for a reader that stopped reading either.
    wire.send(jsonFrame(FRAME.EXIT, { code, ...(finished === undefined ? {} : { abrupt: true }) } satisfies Exit));
    await wire.end();
    served++;
    // Every module file loaded from outside the binary: when cachet runs from source, its own and its dependencies'.
    await imported.note(loadedModuleFiles());
    busy = false;
    if (stopping || halted) return shutdown();
    if (served >= maxCommands || process.memoryUsage().rss > maxRss) return restart();
    armIdle();
  }

  /**
   * The command ended the process its own way: `exit` reaches the client
   * after everything it wrote, then a successor takes over. Undefined: the
   * client is gone.
   */
  function abandon(wire: Wire, exit: Exit | undefined): void {
    if (restarting) return;
    restarting = true;
    if (exit) wire.send(jsonFrame(FRAME.EXIT, { ...exit, abrupt: true } satisfies Exit));
    let handed = false;
    const handOver = () => {
      if (handed) return;
      handed = true;
      // Nothing of the command may go on once its client is gone (its own process would be dead): the successor
      // takes over from a process that no longer runs it.
      if (!exit) startSuccessorAndExit();
      else restart();
    };
    if (!exit) return handOver();
    // A client that stopped reading (its process stopped: it reads on otherwise) must not keep the command's end
    // waiting: it gets what the socket took within the second, or, once this server is stopping for good (nothing
    // succeeds it), within the stop's grace: a stopped job continued meanwhile still ends as its turn ended.
    setTimeout(handOver, halted ? STOP_GRACE_MS : 1000).unref();
    void wire.end().then(handOver);
  }

  /** Ends at once, after starting a successor (none once halted), which binds the socket when it has warmed up. */
  function startSuccessorAndExit(): void {
    if (!halted) {
      try {
        spawnServer(options.successorArgs, { env: { ...ownEnv, [UNASKED_ENV]: "" }, cwd: launchCwd });
      } catch {
        // Nothing to tell: without a daemon, turns run in their own process.
      }
    }
    processEdges.exit(0);
  }

  function control(wire: Wire, request: Control): void {
    const status: Status = { pid: process.pid, uptimeMs: Date.now() - startedAt, served, busy, stopping: halted, restarting: restarting && !halted, version: VERSION, build: BUILD };
    wire.send(jsonFrame(FRAME.CONTROL_REPLY, status));
    if (request.op !== "stop") return void wire.end();
    // The asker waits for this connection to close: it closes when the process exits.
    halt(true, wire.flushed());
  }

  return { stopped: stoppedPromise };
}

/**
 * How long `daemon stop` lets a running command end after its SIGTERM, ms: the command's own watchdog ends it within
 * a second (src/run/interrupt.ts), but a client slow to read what the turn still writes (a paused pager, a stopped
 * job) holds its end up; past this the command is abandoned.
 */
const STOP_GRACE_MS = 10_000;

/**
 * The resident set past which a daemon replaces itself after a command, bytes: 384 MiB. Measured (Linux x86-64): a
 * daemon holds ~95 MB once warmed up, ~100 MB after 30 ordinary turns, at most ~165 MB during turns on a session near
 * a 1M-token window (4.8 MB of prompt text); a refused 300 MB prompt leaves it at ~415 MB and a refused 1 GiB stdin at
 * ~1.2 GB, which the engine's heap keeps for later turns rather than give back. More than twice the largest ordinary
 * turn's, so only a command with an input far beyond a context window costs a restart.
 */
const MAX_RSS_BYTES = 384 * 2 ** 20;

/** How long a server handed over still accepts what reached its queue before the successor took the socket, ms. */
const HANDOVER_DRAIN_MS = 50;

/** How often the server checks that its socket file is still its own, ms. */
const SOCKET_CHECK_MS = 1000;

async function decline(wire: Wire, reason: string): Promise<void> {
  wire.send(encodeFrame(FRAME.DECLINE, reason));
  await wire.end();
}

/** Makes process.env, which holds `from`, hold `to` instead: only the variables that differ are touched. */
function switchEnv(from: Record<string, string | undefined>, to: Record<string, string | undefined>): void {
  for (const name in from) if (!(name in to)) delete process.env[name];
  for (const name in to) {
    const value = to[name];
    if (value !== undefined && from[name] !== value) process.env[name] = value;
  }
}

/** Replaces process.env's every variable with `env`'s. */
function replaceEnv(env: Record<string, string | undefined>): void {
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  for (const [name, value] of Object.entries(env)) if (value !== undefined && process.env[name] !== value) process.env[name] = value;
}

/**
 * Loads what a run loads before its request (the command, its stages,
 * every built-in provider adapter with its SDK, the tokenizer), opening nothing of the
 * user's: a file opened now could be replaced before the command that reads it.
 * A store a turn opens is kept open for the next (src/session/database.ts
 * keepConnectionsOpen), which opens it again if the file was replaced; the
 * built-in plugins' host is kept too (src/plugin/loader.ts keepBuiltinHost:
 * every turn the daemon runs loads no other plugin), and with it their SDK clients,
 * since the runtimes of one environment give them one fetch (src/run/resident-fetch.ts).
 */
async function warmUp(): Promise<Dispatch> {
  const [{ dispatch }, { commands }, { builtinPlugins }, { keepConnectionsOpen }, { keepBuiltinHost }] = await Promise.all([
    import("../cli/dispatch.ts"),
    import("../cli/index.ts"),
    import("../../plugins/index.ts"),
    import("../session/database.ts"),
    import("../plugin/loader.ts"),
  ]);
  keepConnectionsOpen();
  keepBuiltinHost();
  keepFetchStable();
  await Promise.all([
    // Data every turn's checks read, the same for every user: the tokenizer's ranks (tens of ms to load).
    import("../tokenizer/o200k.ts").then((m) => m.loadO200k()),
    commands.run!.load(),
    import("../run/command.ts"),
    import("../run/stdin.ts"),
    import("../run/interrupt.ts"),
    import("../cli/argv.ts"),
    import("../cli/tool-results.ts"),
    import("../log.ts"),
    import("citty"),
    import("consola/basic"),
    import("@anthropic-ai/sdk"),
    import("@anthropic-ai/sdk/streaming"),
    import("openai"),
    ...Object.values(builtinPlugins).map((load) => load()),
  ]);
  return dispatch;
}

/** Models whose adapters the warm-up turns run: Anthropic (the default), OpenAI chat and responses, Gemini. */
const WARM_MODELS = ["anthropic/claude-sonnet-4-6", "openai/gpt-5", "openai-responses/gpt-5", "google/gemini-2.5-flash"];

/**
 * Times the warm-up turns run each of {@link WARM_MODELS}: the code every turn shares runs 20 times, each adapter's 5,
 * before a client waits, which the daemon's engine options (src/daemon/self.ts DAEMON_JSC_OPTIONS) make enough for
 * most of it to be optimized. One round takes ~50 ms of the daemon's start (measured, 2-core machine).
 */
const WARM_ROUNDS = 5;

/** Edges that read nothing and write nowhere, for the warm-up turns. */
const nullEdges: Edges = {
  stdin: () => ({ isTTY: false, open: async () => undefined }),
  isTerminal: () => false,
  stdoutSink: () => ({ write: (chunk) => (typeof chunk === "string" ? chunk.length : chunk.byteLength), flush: () => 0 }),
  writeStderr() {},
  onSignal: () => () => {},
  exit(code) {
    throw new Error(`a warm-up turn exited ${code}`);
  },
  // A warm-up turn's failure changes nothing: it ends as its exit does.
  finish(code) {
    throw new Error(`a warm-up turn ended with ${code}`);
  },
  finished: undefined,
  pid: process.pid,
};

/**
 * A few turns against the built-in emulator ({@link WARM_ROUNDS} of each of
 * {@link WARM_MODELS}), stored nowhere (--no-store, an empty temporary
 * CACHET_HOME): the runtime compiles the turn's code before a client waits for
 * it (measured: a daemon's first turn 36 ms, later ones 21-29 ms). A turn that
 * fails here changes nothing; the daemon serves anyway.
 * @param home the temporary CACHET_HOME, made empty here and removed after (src/daemon/leftovers.ts names it, and
 *   removes it when this process was killed first)
 */
async function warmTurns(dispatch: Dispatch, home: string): Promise<void> {
  const fs = process.getBuiltinModule("node:fs");
  // One left by an earlier process of this pid would hold its files.
  fs.rmSync(home, { recursive: true, force: true });
  fs.mkdirSync(home, { mode: 0o700 });
  const saved = { ...process.env };
  // Each turn sets the log level it was given; `daemon run --debug`'s own is put back after.
  const log = await import("../log.ts");
  const level = log.getLogLevel();
  const unbind = bindEdges(nullEdges);
  try {
    const env = Object.fromEntries(Object.entries(saved).filter(([name]) => !name.startsWith("CACHET_")));
    replaceEnv({ ...env, CACHET_HOME: home, CACHET_NO_STORE: "1", NO_COLOR: "1" });
    for (let round = 0; round < WARM_ROUNDS; round++) {
      for (const model of WARM_MODELS) await dispatch(["--emulate", "--no-store", "--quiet", "-m", model, "warm up"]).catch(() => {});
    }
  } finally {
    unbind();
    replaceEnv(saved);
    log.setLogLevel(level);
    process.exitCode = undefined;
    fs.rmSync(home, { recursive: true, force: true });
  }
}
