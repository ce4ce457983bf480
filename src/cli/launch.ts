/**
 * Every command line the entry (src/cli/main.ts) does not answer itself: a
 * turn goes to the resident daemon when one listens (src/daemon/client.ts),
 * everything else (and a turn the daemon declines) to src/cli/dispatch.ts in
 * this process. Without a daemon this costs one failed connect, and a turn
 * then starts one for the next turns (src/daemon/autostart.ts).
 */
import { viaDaemon } from "../daemon/client.ts";

/**
 * Runs `argv` (process.argv without the runtime and script); `failed` is the
 * entry's own failed write of `--version` or `--help`, reported as every command's is.
 */
export async function launch(argv: string[], failed: unknown): Promise<void> {
  if (failed !== undefined) return (await import("./dispatch.ts")).reportStdoutFailure(failed);
  const left = await viaDaemon(argv);
  await (await import("./dispatch.ts")).dispatch(argv);
  // Once the turn's answer is out (dispatch settled stdout); a turn that ended its process (an error's exit) starts none.
  if (left === "absent") await (await import("../daemon/autostart.ts")).autostart(argv);
}
