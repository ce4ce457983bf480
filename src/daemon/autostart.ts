/**
 * Starting the resident daemon (src/daemon/server.ts) for the next turns, after a turn that found none
 * (src/cli/launch.ts): a turn in its own process spends ~3.5× a trivial program's whole run before its first request
 * byte, one through the daemon ~1.3–1.6× (issue 18). As Nx, Turborepo, Gradle and sccache start theirs, it is on by
 * default on a developer's machine, off in CI, and CACHET_DAEMON_AUTOSTART=0 turns it off (README "Resident daemon").
 */
import { isCI, name as ciName } from "ci-info";
import { asksHelp } from "../cli/command-line.ts";
import { processEdges } from "../edges.ts";
import { envFlag } from "../env-flag.ts";
import { getLogLevel } from "../log.ts";
import { statePaths } from "../paths.ts";
import { autostartStampPath, autostartStampStale, unwritableDataDir } from "./leftovers.ts";
import { socketPath } from "./protocol.ts";
import { spawnServer, UNASKED_ENV } from "./self.ts";
import { residentTurnConfig } from "./turn-config.ts";

/**
 * The `--idle` of a daemon a turn started, shorter than `cachet daemon start`'s 30m: nobody asked for this one, so
 * its memory goes back soon after a script's burst of turns or a working session ends, while the pauses between the
 * turns of one stay covered.
 */
const AUTOSTART_IDLE = "10m";

/**
 * How long a daemon a turn started waits for its first turn before it exits (then {@link AUTOSTART_IDLE} once it has
 * served one): a home used for one turn only (a test suite giving each test its own CACHET_HOME, a one-off script)
 * never sees a second, and its daemon's ~74 MB would otherwise stay 10 minutes, one per home (12 homes: 893 MB).
 * A minute still covers the pause between a first turn and the next of someone working by hand.
 */
const AUTOSTART_FIRST_IDLE = "1m";

/**
 * Whether a turn that found no daemon starts one, by the environment `env`: CACHET_DAEMON_AUTOSTART when it is set
 * (read as every boolean variable is, src/env-flag.ts: 1, true, yes, on start one; 0, false, no, off, empty do not);
 * unset, yes unless this is CI: a CI job's turns are one-off on a machine that goes away, and a daemon left there only
 * holds memory (Nx and Turborepo keep their daemons off in CI too). CI is `env.CI` read as a boolean variable is (0,
 * false, no, off, empty: not CI; any other value, e.g. a vendor's name: CI) when it is set; unset, the npm library
 * ci-info's isCI (https://github.com/watson/ci-info: Jenkins' BUILD_NUMBER, Azure Pipelines' TF_BUILD, TeamCity,
 * CodeBuild…), which reads process.env once, when it loads, not `env`: callers pass process.env.
 * CACHET_NO_DAEMON is not read here: a turn under it never looks for a daemon (src/daemon/client.ts "unsent").
 * @throws CachetError BAD_FLAG (exit 2) for a CACHET_DAEMON_AUTOSTART value that is none of those words
 */
export function autostartWanted(env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.CACHET_DAEMON_AUTOSTART !== undefined) return envFlag(env, "CACHET_DAEMON_AUTOSTART");
  if (env.CI === undefined) return !isCI;
  try {
    return !envFlag(env, "CI");
  } catch {
    // A value no boolean takes (a vendor's name, "woodpecker"): set by a CI system.
    return false;
  }
}

/**
 * Starts a daemon in the background (src/daemon/self.ts spawnServer, `--idle` {@link AUTOSTART_IDLE}, its first idle
 * {@link AUTOSTART_FIRST_IDLE} through {@link UNASKED_ENV}) for the turns after the one of `argv`, which ran in this
 * process because no daemon answered (src/daemon/client.ts "absent"), once its output was settled. Resolves once the
 * daemon is spawned, never waiting for it to listen; the turn's stdout, stderr and exit code stay as they were: under
 * `--verbose` (or `--debug`) one stderr line says it started one, why it started none when one was wanted, or why it
 * could not. Starts none when {@link autostartWanted} says no; after a run's help (no turn); from a turn run at a lowered priority (nice, a batch or idle scheduling policy); when the data directory
 * does not exist (the turn stored nothing, e.g. `--no-store` in a new home); when the daemon would decline the turn anyway
 * (src/daemon/turn-config.ts: a third-party plugin, a config it cannot read); or while the daemon another turn started
 * still warms up: an `O_EXCL` stamp in the data directory (src/daemon/leftovers.ts) stands for it while it is younger
 * than 30 s and names no process that is gone, so a burst of turns before the first daemon listens starts one, not
 * one each. A turn that claims the stamp just after that daemon listened (and removed it) finds its socket answering,
 * and gives the stamp back. Two started at once all the same are harmless: the second finds the socket taken, removes
 * the stamp if it names it, and exits.
 */
export async function autostart(argv: readonly string[]): Promise<void> {
  const said = getLogLevel() === "verbose" || getLogLevel() === "debug";
  const none = (why: string) => said && processEdges.writeStderr(`cachet: started no daemon for the next turns: ${why}\n`);
  try {
    if (asksHelp(argv)) return;
    if (!autostartWanted(process.env)) {
      if (process.env.CACHET_DAEMON_AUTOSTART !== undefined) return void none("CACHET_DAEMON_AUTOSTART turns auto-start off");
      // Named, since a variable such as BUILD_NUMBER may be set outside CI too.
      const seen = process.env.CI !== undefined ? `CI=${process.env.CI}` : `${ciName ?? "a CI system"}'s variables`;
      return void none(`this looks like CI (${seen}; CACHET_DAEMON_AUTOSTART=1 starts one there too)`);
    }
    if (loweredPriority()) return void none("this turn runs at a lowered priority (nice, or a batch or idle scheduling policy), which a daemon started from it would keep for every later turn");
    const data = statePaths().data;
    const fs = process.getBuiltinModule("node:fs");
    if (!fs.statSync(data, { throwIfNoEntry: false })?.isDirectory()) return void none(`the data directory ${data} does not exist (this turn stored nothing)`);
    const config = await residentTurnConfig(process.env);
    if (typeof config === "string") return void none(`the daemon would not run these turns (${config})`);
    const unwritable = unwritableDataDir(data);
    if (unwritable !== undefined) return void none(`${unwritable}, where the daemon keeps its socket`);
    const stamp = autostartStampPath(data);
    const fd = claimStamp(stamp);
    if (fd === undefined) return void none(`another turn's daemon is still starting (${stamp})`);
    let pid: number;
    try {
      if (await listening(socketPath(data))) {
        fs.closeSync(fd);
        fs.rmSync(stamp, { force: true });
        return void none("a daemon listens now (another turn's, started meanwhile)");
      }
      pid = spawnServer(["--idle", AUTOSTART_IDLE], { env: { ...process.env, [UNASKED_ENV]: AUTOSTART_FIRST_IDLE } }).pid;
    } catch (error) {
      fs.closeSync(fd);
      fs.rmSync(stamp, { force: true });
      throw error;
    }
    // Empty, the stamp stood for a start under way; naming the daemon, it is removed once that process is gone.
    try {
      fs.writeSync(fd, `${pid}\n`);
    } finally {
      fs.closeSync(fd);
    }
    if (said) {
      processEdges.writeStderr(
        `cachet: started the daemon (pid ${pid}) for the next turns; it exits after ${AUTOSTART_FIRST_IDLE} without a first turn, ${AUTOSTART_IDLE} idle after one (CACHET_DAEMON_AUTOSTART=0 turns auto-start off)\n`,
      );
    }
  } catch (error) {
    if (said) processEdges.writeStderr(`cachet: could not start the daemon for the next turns (${(error as Error)?.message ?? String(error)})\n`);
  }
}

/**
 * Whether this process runs at a lowered priority: a positive nice value, or on Linux the SCHED_BATCH or SCHED_IDLE
 * scheduling policy (`chrt -b`, `chrt -i`; field 41 of /proc/self/stat, https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html).
 * A daemon keeps the priority of the process that started it, and an unprivileged process cannot raise it again:
 * started from such a turn, it would run every later turn at that priority.
 */
function loweredPriority(): boolean {
  if (process.getBuiltinModule("node:os").getPriority() > 0) return true;
  try {
    const stat = process.getBuiltinModule("node:fs").readFileSync("/proc/self/stat", "utf8");
    // Fields from the third on follow the command name's closing parenthesis (the name itself may hold spaces).
    const policy = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[41 - 3]);
    return policy === SCHED_BATCH || policy === SCHED_IDLE;
  } catch {
    return false;
  }
}

/** Linux's scheduling policy numbers (sched.h). */
const SCHED_BATCH = 3;
const SCHED_IDLE = 5;

/**
 * Whether a daemon listens on the socket `path` now: its file is there and a connection to it is not refused (a
 * killed daemon's file, which refuses, counts as none). Asked after the stamp is claimed: a turn that found no daemon
 * may claim it only after the daemon another turn started listened and removed it.
 */
async function listening(path: string): Promise<boolean> {
  if (!process.getBuiltinModule("node:fs").lstatSync(path, { throwIfNoEntry: false })?.isSocket()) return false;
  try {
    (await Bun.connect({ unix: path, socket: { data() {} } })).end();
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates the auto-start stamp at `path` (O_CREAT | O_EXCL, owner-only) and returns its open fd; undefined when
 * another turn's stamp is there and not stale ({@link autostartStampStale}: old, or naming a process that is gone),
 * or when it cannot be created.
 * A stale one is removed and the creation tried once more.
 */
function claimStamp(path: string): number | undefined {
  const fs = process.getBuiltinModule("node:fs");
  for (let attempt = 0; ; attempt++) {
    try {
      return fs.openSync(path, "wx", 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0 || !autostartStampStale(path, true)) return undefined;
    }
    fs.rmSync(path, { force: true });
  }
}
