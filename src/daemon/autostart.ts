/**
 * Starting the resident daemon (src/daemon/server.ts) for the next turns, after a turn that found none
 * (src/cli/launch.ts): a turn in its own process spends ~3.5× a trivial program's whole run before its first request
 * byte, one through the daemon ~1.3–1.6× (issue 18). As Nx, Turborepo, Gradle and sccache start theirs, it is on by
 * default on a developer's machine, off in CI, and CACHET_DAEMON_AUTOSTART=0 turns it off (README "Resident daemon").
 */
import { asksHelp } from "../cli/command-line.ts";
import { processEdges } from "../edges.ts";
import { envFlag } from "../env-flag.ts";
import { getLogLevel } from "../log.ts";
import { statePaths } from "../paths.ts";
import { autostartStampPath, autostartStampStale } from "./leftovers.ts";
import { spawnServer } from "./self.ts";
import { residentTurnConfig } from "./turn-config.ts";

/**
 * The `--idle` of a daemon a turn started, shorter than `cachet daemon start`'s 30m: nobody asked for this one, so
 * its memory goes back soon after a script's burst of turns or a working session ends, while the pauses between the
 * turns of one stay covered.
 */
const AUTOSTART_IDLE = "10m";

/**
 * Whether a turn that found no daemon starts one, by the environment `env`: CACHET_DAEMON_AUTOSTART when it is set
 * (read as every boolean variable is, src/env-flag.ts: 1, true, yes, on start one; 0, false, no, off, empty do not);
 * unset, yes unless `CI` is set to anything but "", "0" or "false": a CI job's turns are one-off on a machine that
 * goes away, and a daemon left there only holds memory (Nx and Turborepo keep their daemons off in CI too).
 * CACHET_NO_DAEMON is not read here: a turn under it never looks for a daemon (src/daemon/client.ts "unsent").
 * @throws CachetError BAD_FLAG (exit 2) for a CACHET_DAEMON_AUTOSTART value that is none of those words
 */
export function autostartWanted(env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.CACHET_DAEMON_AUTOSTART !== undefined) return envFlag(env, "CACHET_DAEMON_AUTOSTART");
  const ci = env.CI?.trim().toLowerCase();
  return ci === undefined || ci === "" || ci === "0" || ci === "false";
}

/**
 * Starts a daemon in the background (src/daemon/self.ts spawnServer, `--idle` {@link AUTOSTART_IDLE}) for the turns
 * after the one of `argv`, which ran in this process because no daemon answered (src/daemon/client.ts "absent"), once
 * its output was settled. Resolves once the daemon is spawned, never waiting for it to listen; the turn's stdout,
 * stderr and exit code stay as they were: under `--verbose` (or `--debug`) one stderr line says it started one, or
 * why it could not. Starts none when {@link autostartWanted} says no; after a run's help (no turn); when the data
 * directory does not exist (the turn stored nothing, e.g. `--no-store` in a new home); when the daemon would decline
 * the turn anyway (src/daemon/turn-config.ts: a third-party plugin, a config it cannot read); or while the daemon
 * another turn started still warms up: an `O_EXCL` stamp in the data directory (src/daemon/leftovers.ts), younger
 * than 30 s, stands for it, so a burst of turns before the first daemon listens starts one, not one each. Two started
 * at once (a stamp replaced by two turns together) are harmless: the second finds the socket taken and exits.
 */
export async function autostart(argv: readonly string[]): Promise<void> {
  const said = getLogLevel() === "verbose" || getLogLevel() === "debug";
  try {
    if (!autostartWanted(process.env) || asksHelp(argv)) return;
    const data = statePaths().data;
    const fs = process.getBuiltinModule("node:fs");
    if (!fs.statSync(data, { throwIfNoEntry: false })?.isDirectory()) return;
    if (typeof (await residentTurnConfig(process.env)) === "string") return;
    const stamp = autostartStampPath(data);
    const fd = claimStamp(stamp);
    if (fd === undefined) return;
    let pid: number;
    try {
      pid = spawnServer(["--idle", AUTOSTART_IDLE]).pid;
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
    if (said) processEdges.writeStderr(`cachet: started the daemon (pid ${pid}) for the next turns; it exits after ${AUTOSTART_IDLE} idle (CACHET_DAEMON_AUTOSTART=0 turns auto-start off)\n`);
  } catch (error) {
    if (said) processEdges.writeStderr(`cachet: could not start the daemon for the next turns (${(error as Error)?.message ?? String(error)})\n`);
  }
}

/**
 * Creates the auto-start stamp at `path` (O_CREAT | O_EXCL, owner-only) and returns its open fd; undefined when
 * another turn's stamp is there and not stale ({@link autostartStampStale}), or when it cannot be created.
 * A stale one is removed and the creation tried once more.
 */
function claimStamp(path: string): number | undefined {
  const fs = process.getBuiltinModule("node:fs");
  for (let attempt = 0; ; attempt++) {
    try {
      return fs.openSync(path, "wx", 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0 || !autostartStampStale(path, false)) return undefined;
    }
    fs.rmSync(path, { force: true });
  }
}
