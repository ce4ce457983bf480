/**
 * `cachet export [SESSION]`: the session (default: the latest of cachet's own) as JSON lines
 * on stdout: one `session` line, its `prefix` versions, a `summary` line when
 * it has one, its `message` lines and its `request` (ledger) lines, in order.
 *
 * `cachet export --otlp URL`: the ledger rows the collector at URL has not
 * received yet, as OpenTelemetry spans over OTLP/HTTP (src/telemetry).
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "export", description: "Write a session as JSON lines, or send the ledger to an OpenTelemetry collector" },
  args: {
    session: { type: "positional", required: false, description: "Session ID or NAME (default: the latest of cachet's own)" },
    otlp: { type: "string", description: "Send the ledger rows not sent yet to this OTLP/HTTP collector URL (e.g. http://localhost:4318)" },
    "otlp-format": { type: "enum", options: ["protobuf", "json"] as string[], description: "OTLP/HTTP body encoding (default protobuf)" },
    "with-content": { type: "boolean", description: "Include prompt and answer text in the spans (off by default)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args: a }) {
    const { openStore } = await import("../session/store.ts");
    if (a.otlp === undefined && (a["otlp-format"] !== undefined || a["with-content"] === true)) {
      throw new CachetError("BAD_FLAG", `${a["otlp-format"] !== undefined ? "--otlp-format" : "--with-content"} needs --otlp URL`, { hint: "e.g. cachet export --otlp http://localhost:4318" });
    }
    if (a.otlp !== undefined) {
      if (a.session !== undefined) throw new CachetError("BAD_FLAG", "--otlp exports the whole ledger, not one session", { hint: "run `cachet export --otlp URL` without SESSION" });
      const { exportOtlp } = await import("../telemetry/export-otlp.ts");
      const { info } = await import("../log.ts");
      const { storeFile } = await import("../paths.ts");
      const { existsSync } = await import("node:fs");
      // No store yet: an empty one in memory exports its zero rows, and no store file is made.
      const store = openStore(existsSync(storeFile()) ? storeFile() : ":memory:");
      try {
        const result = await exportOtlp(store, { url: a.otlp, format: (a["otlp-format"] as "protobuf" | "json" | undefined) ?? "protobuf", withContent: a["with-content"] === true });
        if (a.json) stdout().write(`${JSON.stringify({ endpoint: result.endpoint, exported: result.exported, busy: result.busy })}\n`);
        else if (result.busy) await info(`another export to ${result.endpoint} is running; nothing sent (its rows go with it or the next export)`);
        else await info(`exported ${result.exported} ledger row${result.exported === 1 ? "" : "s"} to ${result.endpoint}`);
      } finally {
        store.close();
      }
      return;
    }
    const { exportPieces } = await import("../session/session-report.ts");
    const { writeOut } = await import("./write-out.ts");
    const store = openStore(undefined, { readonly: true });
    // One snapshot: a turn writing the session meanwhile is exported as it was, or not at all, never half.
    const endSnapshot = store.readSnapshot();
    try {
      const ref = a.session ?? store.latestSession()?.id;
      if (ref === undefined) {
        const { onlyRecordedError } = await import("../session/recorded-refusal.ts");
        throw onlyRecordedError(store, "cachet export", "there is no session of cachet's own to export", "exports") ??
          new CachetError("SESSION_NOT_FOUND", "there are no sessions to export", { hint: 'start one with `cachet "PROMPT"`' });
      }
      // Written as read, a stored part of a message at a time: the peak is a part's, not the session's.
      await writeOut(exportPieces(store, ref));
    } finally {
      endSnapshot();
      store.close();
    }
  },
});
