/**
 * `cachet compact [--session S] [--emulate] [--json]`: compacts a session now
 * (the latest of cachet's own by default; one `cachet proxy` recorded is refused). The log keeps every message (`cachet export` shows
 * them all); the summary zone grows by one entry and the next turn sends
 * Z0 + Z1 + the kept tail. A summary call, when the render is large, is a
 * ledger row of role `compaction`.
 */
import { defineCommand } from "citty";
import { edges } from "../edges.ts";
import { CachetError } from "../errors.ts";
import { emulateArg, globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "compact", description: "Compact a session now: move its older turns into the summary zone" },
  args: {
    session: { type: "string", description: "Session ID or NAME (default: the latest of cachet's own)" },
    ...jsonArg,
    ...emulateArg,
    ...globalArgs,
  },
  async run({ args: a }) {
    const { envFlag } = await import("../env-flag.ts");
    if (envFlag(process.env, "CACHET_NO_STORE")) {
      // A script that set it keeps nothing: a compaction would write to the store (and may make a paid summary call).
      throw new CachetError("BAD_FLAG", "cachet compact writes to the session store, which CACHET_NO_STORE=1 keeps untouched", { hint: "unset CACHET_NO_STORE to compact a stored session" });
    }
    const { openRuntime } = await import("../run/runtime.ts");
    const { compactSession } = await import("../run/compact-session.ts");
    const { warn } = await import("../log.ts");
    const runtime = await openRuntime({ emulate: a.emulate === true, storedSessionOnly: true }, (m) => void warn(m));
    try {
      // A running turn finishes first (the turn lease), as for `sessions rm`: said on stderr, never a silent wait.
      const waiting = (id: string, holder: { pid: number; host: string }) =>
        edges().writeStderr(`cachet: session ${id} is running a turn (process ${holder.pid} on ${holder.host}): waiting for it to finish before compacting it\n`);
      const { sessionId, compaction: done, event, why } = await compactSession(runtime, a.session, (m) => void warn(m), waiting);
      if (a.json) {
        // The names of the run's `compaction` line (README, --json), whose `type` this line does not need.
        const { type: _type, ...fields } = event ?? { type: "" };
        stdout().write(`${JSON.stringify(done ? { compacted: true, session: sessionId, ...fields } : { compacted: false, session: sessionId, why })}\n`);
      } else if (done) stdout().write(`${done.id}: messages ${done.firstCollapsed}…${done.lastCollapsed} moved into the summary zone (${done.summarySource}); next request ~${done.tokensBefore} → ~${done.tokensAfter} tokens\n`);
      else stdout().write(`nothing to compact: ${why}\n`);
    } finally {
      await runtime.close();
    }
  },
});
