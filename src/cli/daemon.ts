/**
 * `cachet daemon [start|run|stop|status] [--idle DURATION]`: the resident
 * daemon (src/daemon/server.ts) that turns run in, to skip the start-up cost
 * of a new process. A turn that finds none starts one itself
 * (src/daemon/autostart.ts: not in CI, nor under CACHET_DAEMON_AUTOSTART=0);
 * `start` puts one in the background, `run` keeps it in the foreground
 * (systemd, tmux, tests). A `run` nobody asked for (a turn's, a successor's:
 * src/daemon/self.ts UNASKED_ENV) never creates the data directory.
 */
import { defineCommand } from "citty";
import { CachetError, EXIT } from "../errors.ts";
import { globalArgs, refuseMisplacedFlags } from "./_args.ts";
import { parseDuration } from "../duration.ts";
import { stdout } from "../stdout.ts";
import { processAlive } from "../process-alive.ts";

/** The words of the ACTION positional (`cachet help daemon ACTION` checks them too). */
export const actions = ["start", "run", "stop", "status"] as const;

const DEFAULT_IDLE = "30m";

const args = {
  action: { type: "positional", required: false, description: "start (default: in the background), run (in the foreground), stop or status" },
  idle: { type: "string", description: `start, run: exit after this long without a command, e.g. 10m, 2h (default ${DEFAULT_IDLE})` },
  ...globalArgs,
} as const;

export default defineCommand({
  meta: { name: "daemon", description: "Start, stop or show the resident daemon that turns run in (a turn starts one)" },
  args,
  async run({ args: a }) {
    const action = a.action ?? "start";
    if (!(actions as readonly string[]).includes(action)) {
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${action}" for \`cachet daemon\``, { hint: `use ${actions.join(", ")}` });
    }
    refuseMisplacedFlags(`daemon ${action}`, a, { idle: ["daemon start", "daemon run"] });
    const idleMs = idleFlag(a.idle);
    const [{ statePaths }, { socketPath, socketPathFits, SOCKET_PATH_MAX }, { ask, DaemonUnanswered }, { UNASKED_ENV, dropDaemonOptions }] = await Promise.all([
      import("../paths.ts"),
      import("../daemon/protocol.ts"),
      import("../daemon/control.ts"),
      import("../daemon/self.ts"),
    ]);
    // Read once and removed: the daemon's turns and successors never inherit it (a successor is given its own).
    const unasked = action === "run" ? process.env[UNASKED_ENV] : undefined;
    delete process.env[UNASKED_ENV];
    // The engine options it was started with (src/daemon/self.ts) were read at start; a successor is given them again.
    dropDaemonOptions(process.env);
    const data = statePaths().data;
    const fs = process.getBuiltinModule("node:fs");
    const dataExists = () => fs.statSync(data, { throwIfNoEntry: false })?.isDirectory() === true;
    // Removed since the turn that started it ended (tens of ms before this line): the home is not to be made again.
    if (unasked !== undefined && !dataExists()) return;
    const path = socketPath(data);
    // What a daemon killed while it started left next to the socket (a server starting removes it too, src/daemon/server.ts).
    if (action === "status" || action === "stop") (await import("../daemon/leftovers.ts")).removeLeftovers(data);
    if (!socketPathFits(path) && (action === "start" || action === "run")) {
      throw new CachetError("SOCKET_PATH_TOO_LONG", `the daemon's socket path ${path} is longer than this platform's limit of ${SOCKET_PATH_MAX} bytes`, {
        hint: "set CACHET_HOME to a shorter directory (the socket is CACHET_HOME/daemon.sock)",
      });
    }
    let status;
    try {
      const op = action === "stop" ? "stop" : "status";
      status = socketPathFits(path) ? await ask(path, op) : undefined;
      // A daemon a turn started (src/daemon/autostart.ts) listens once warmed up: waited for, so that status and stop
      // answer for it, and start and run do not start a second. That daemon's own `daemon run` is this process.
      const starting = status || !socketPathFits(path) ? undefined : (await import("../daemon/leftovers.ts")).startingDaemon(data);
      if (starting && starting.pid !== process.pid && (await waitForServer(path, starting.pid, starting.until))) status = await ask(path, op);
    } catch (error) {
      // A stopped or hung daemon: said as the one thing to do about it, whatever the action.
      if (!(error instanceof DaemonUnanswered)) throw error;
      const { edges } = await import("../edges.ts");
      edges().writeStderr(`${error.message}\n`);
      process.exitCode = EXIT.failure;
      return;
    }
    // A daemon killed (SIGKILL, a crash) left its socket, which refuses connections, and its pid file: removed, so
    // that what is left in the data directory says what runs.
    if (!status && socketPathFits(path)) await (await import("../daemon/leftovers.ts")).removeDeadDaemon(path);
    // What status prints is the command's answer (stdout); start, run and stop say what they did as diagnostics (stderr, silenced by -q).
    const { info } = await import("../log.ts");
    if (action === "status") {
      if (!status) {
        stdout().write("cachet daemon: not running\n");
        process.exitCode = EXIT.failure;
        return;
      }
      if (status.stopping) {
        stdout().write(`cachet daemon: stopping (pid ${status.pid}, socket ${path}; it exits once its running turn has ended)\n`);
        return;
      }
      if (status.restarting) {
        stdout().write(`cachet daemon: restarting (pid ${status.pid}, socket ${path}; a fresh daemon takes over)\n`);
        return;
      }
      stdout().write(`cachet daemon: running (pid ${status.pid}, socket ${path}, up ${formatUptime(status.uptimeMs)}, ${status.served} command${status.served === 1 ? "" : "s"} served${status.busy ? ", one running now" : ""})\n`);
      return;
    }
    if (action === "stop") {
      await info(status ? `cachet daemon: stopped (pid ${status.pid})` : "cachet daemon: not running");
      return;
    }
    // A daemon being stopped is waited for (a stop request resolves once its process exited): this start replaces it.
    if (status?.stopping) {
      await ask(path, "stop");
      status = undefined;
    }
    // A daemon restarting is running: only the successor it started (a `daemon run`) takes its socket over (serve checks).
    if (status && !(action === "run" && status.restarting)) {
      if (unasked !== undefined) await releaseStamp(data);
      await info(`cachet daemon: already running (pid ${status.pid}, socket ${path})`);
      return;
    }
    // Its socket, pid file and warm-up home go there: said as such, before anything is tried (or started) there.
    const leftovers = await import("../daemon/leftovers.ts");
    const unwritable = leftovers.unwritableDataDir(data);
    if (unwritable !== undefined) throw unwritableError(unwritable);
    if (unasked === undefined) (await import("../private-files.ts")).makePrivateDir(data);
    const successorArgs = ["--idle", a.idle ?? DEFAULT_IDLE];
    if (action === "run") {
      const { serve } = await import("../daemon/server.ts");
      let server;
      try {
        server = await serve({ socket: path, idleMs, firstIdleMs: unasked ? firstIdle(unasked) : undefined, successorArgs });
      } catch (error) {
        // Made read-only (or taken away from this user) since the check above.
        const unwritable = ["EROFS", "EACCES", "EPERM"].includes((error as NodeJS.ErrnoException)?.code ?? "") ? leftovers.unwritableDataDir(data) : undefined;
        if (unwritable !== undefined) throw unwritableError(unwritable);
        if (unasked === undefined) throw error;
        // Removed while it warmed up: what failed was making its files there; it leaves quietly (a listener may be open).
        if (!dataExists()) return (await import("../edges.ts")).processEdges.exit(0);
        // Another error (a blocked socket path) would fail every daemon a turn starts: its stamp holds them back a while.
        leftovers.holdAutostarts(data, process.pid);
        throw error;
      }
      if (!server) {
        if (unasked !== undefined) await releaseStamp(data);
        await info(`cachet daemon: already running (socket ${path})`);
        return;
      }
      await info(`cachet daemon: running (pid ${process.pid}, socket ${path}); Ctrl-C stops it`);
      await server.stopped;
      return;
    }
    const { spawnServer } = await import("../daemon/self.ts");
    const pid = spawnServer(successorArgs).pid;
    const started = await waitForServer(path, pid);
    if (!started) {
      throw new CachetError("DAEMON_START", `the daemon (pid ${pid}) did not start answering on ${path}`, { hint: "run `cachet daemon run --debug` to see why it stops" });
    }
    await info(`cachet daemon: running (pid ${started.pid}, socket ${path})`);
  },
});

/** The error of `daemon start`/`run` in a data directory it cannot write (`why`: src/daemon/leftovers.ts unwritableDataDir). */
function unwritableError(why: string): CachetError {
  return new CachetError("DAEMON_START", `${why}: the daemon keeps its socket, pid file and warm-up files there`, {
    hint: "make it writable, or set CACHET_HOME to a writable directory (without a daemon, each turn runs in its own process)",
  });
}

/**
 * Waits until a server answers on `path`, or the process `pid` (the one
 * starting) is gone without one answering, or the time is past `until` (ms
 * since the epoch).
 */
async function waitForServer(path: string, pid: number, until = Infinity): Promise<{ pid: number } | undefined> {
  const { ask } = await import("../daemon/control.ts");
  for (;;) {
    const status = await ask(path, "status");
    if (status) return status;
    if (!processAlive(pid) || Date.now() > until) return undefined;
    // The socket appears once the server has loaded what a turn loads: checked again at the next turn of the clock.
    await Bun.sleep(20);
  }
}

/**
 * Removes the auto-start stamp in the data directory `data` when it names this process: a daemon a turn started that
 * found another serving (two turns started one each) leaves no stamp naming a process that is gone.
 */
async function releaseStamp(data: string): Promise<void> {
  const { autostartStampPath, removePidFile } = await import("../daemon/leftovers.ts");
  removePidFile(autostartStampPath(data), process.pid);
}

/**
 * The first idle src/daemon/self.ts UNASKED_ENV gives, ms: at least {@link MIN_IDLE_MS}; a value that is no duration
 * (it is set by cachet only) is none.
 */
function firstIdle(value: string): number | undefined {
  const ms = parseDuration(value);
  return ms === undefined ? undefined : Math.max(ms, MIN_IDLE_MS);
}

/**
 * The shortest `--idle`, ms: below it a daemon could exit before its start is confirmed (it answers only once it has
 * loaded what a turn loads), or between one turn and the next of a script.
 */
const MIN_IDLE_MS = 1000;

/** `--idle`, as ms; a text that is no duration, or one under {@link MIN_IDLE_MS}, is a usage error. */
function idleFlag(value: string | undefined): number {
  const ms = parseDuration(value ?? DEFAULT_IDLE);
  if (ms !== undefined && ms < MIN_IDLE_MS) {
    throw new CachetError("BAD_FLAG", `--idle ${value}: the daemon's idle time is at least 1s`, { hint: "use a duration such as 30m, 2h or 90s" });
  }
  if (ms === undefined || ms > 2 ** 31 - 1) {
    throw new CachetError("BAD_FLAG", `--idle ${value}: expected a duration such as 30m, 2h or 90s (at most about 24 days)`, { hint: "run `cachet daemon --help` for the flags" });
  }
  return ms;
}

function formatUptime(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${s % 60}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}
