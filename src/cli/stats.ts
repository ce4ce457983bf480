/**
 * `cachet stats [--session ID] [--since 7d] [--by session|model|role|day|request|client] [--recorded] [--json]`:
 * tokens per category, hit rate, cache efficiency, cost, savings against no
 * caching and output tokens per second over the ledger: cachet's own
 * sessions, or with `--recorded` those `cachet proxy` recorded (a named
 * `--session` is shown whatever its source).
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";

const GROUPS = ["session", "model", "role", "day", "request", "client"] as const;

export default defineCommand({
  meta: { name: "stats", description: "Tokens, hit rate, cache efficiency and cost over the ledger" },
  args: {
    session: { type: "string", description: "Only this session (id or name)" },
    since: { type: "string", description: "Only requests since a duration ago (90m, 36h, 7d, 2w) or an ISO date" },
    by: { type: "enum", options: [...GROUPS], description: "Group by session (default), model, role, day, request or client (the user-agent of recorded sessions)" },
    recorded: { type: "boolean", description: "Sessions recorded by `cachet proxy` instead of cachet's own" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const [{ openStore }, { loadConfig }, { loadCatalog }, { ledgerStats, ledgerTotal, parseSince, formatStats }] = await Promise.all([
      import("../session/store.ts"),
      import("../config.ts"),
      import("../meter/catalog.ts"),
      import("../meter/stats.ts"),
    ]);
    const since = args.since === undefined ? undefined : parseSince(args.since);
    if (args.since !== undefined && since === undefined) {
      throw new CachetError("BAD_FLAG", `--since "${args.since}" is neither a duration nor a date`, { hint: "use e.g. --since 7d, --since 36h or --since 2026-01-31" });
    }
    const store = openStore();
    const { RecordedStore } = await import("../session/recorded.ts");
    const recorded = new RecordedStore(store.path);
    try {
      const sessionId = args.session === undefined ? undefined : store.findSession(args.session).id;
      const sources = recorded.sources();
      // Recorded traffic is other clients': it is shown apart, never mixed into cachet's own figures.
      const wanted = args.recorded ? "recorded" : "own";
      const rows = store.ledger({ ...(sessionId ? { sessionId } : {}), ...(since !== undefined ? { since } : {}) }).filter((row) => sessionId !== undefined || sources.get(row.sessionId) === wanted);
      const [{ catalog }, config] = await Promise.all([loadCatalog(), loadConfig()]);
      const options = { catalog, overrides: config.prices };
      const by = (args.by as (typeof GROUPS)[number] | undefined) ?? "session";
      let groups;
      if (by === "client") {
        const { statsByClient } = await import("../meter/client-stats.ts");
        const clients = new Map(recorded.sessions().map((s) => [s.id, s.client]));
        groups = statsByClient(rows, (id) => (sources.get(id) === "own" ? "cachet" : clients.get(id)), options);
      } else {
        groups = ledgerStats(rows, { ...options, by });
      }
      const total = ledgerTotal(rows, options);
      if (args.json) process.stdout.write(`${JSON.stringify({ by: args.by ?? "session", groups, total })}\n`);
      else process.stdout.write(formatStats(groups, total));
    } finally {
      recorded.close();
      store.close();
    }
  },
});
