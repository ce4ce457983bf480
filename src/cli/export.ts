/**
 * `cachet export [SESSION]`: the session (default: the latest) as JSON lines
 * on stdout: one `session` line, its `prefix` versions, a `summary` line when
 * it has one, its `message` lines and its `request` (ledger) lines, in order.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs } from "./_args.ts";

export default defineCommand({
  meta: { name: "export", description: "Write a session as JSON lines" },
  args: {
    session: { type: "positional", required: false, description: "Session ID or NAME (default: the latest)" },
    ...globalArgs,
  },
  async run({ args: a }) {
    const { openStore } = await import("../session/store.ts");
    const { exportLines, sessionDetails } = await import("../session/session-report.ts");
    const store = openStore();
    try {
      const ref = a.session ?? store.latestSession()?.id;
      if (ref === undefined) throw new CachetError("SESSION_NOT_FOUND", "there are no sessions to export", { hint: 'start one with `cachet "PROMPT"`' });
      const lines = exportLines(sessionDetails(store, ref));
      process.stdout.write(`${lines.join("\n")}\n`);
    } finally {
      store.close();
    }
  },
});
