/**
 * `cachet stats [--session ID] [--since 7d] [--by session|model|role|day|request|client] [--recorded] [--json]`:
 * tokens per category, hit rate, cache efficiency, cost, savings against no
 * caching and output tokens per second over the ledger: cachet's own
 * sessions, or with `--recorded` those `cachet proxy` recorded (a named
 * `--session` is shown whatever its source).
 * `cachet stats --budget [--session ID] [--emulate] [--json]`: spend against each spending limit.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { emulateArg, globalArgs, jsonArg, refuseMisplacedFlags } from "./_args.ts";
import { stdout } from "../stdout.ts";

const GROUPS = ["session", "model", "role", "day", "request", "client"] as const;

export default defineCommand({
  meta: { name: "stats", description: "Tokens, hit rate, cache efficiency and cost over the ledger" },
  args: {
    session: { type: "string", description: "Only this session (id or name)" },
    since: { type: "string", description: "Only requests since a duration ago (30s, 90m, 1h30m, 7d, 2w) or an ISO date" },
    // A string, not citty's enum: an enum's help shows every value in the flag column, which citty pads every option line to.
    by: { type: "string", valueHint: "GROUP", description: "Group by session (default), model, role, day, request or client (the user-agent of recorded sessions)" },
    recorded: { type: "boolean", description: "Sessions recorded by `cachet proxy` instead of cachet's own" },
    budget: { type: "boolean", description: "Spend against each limit of [budget] (session: --session or the latest; today; this month)" },
    emulate: { ...emulateArg.emulate, description: "With --budget: the emulated calls' spend instead of the real one" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    // --budget is a report of its own (README): the ledger's filters and groups are not its, nor is its --emulate theirs.
    refuseMisplacedFlags(args.budget ? "stats --budget" : "stats", args, { since: ["stats"], by: ["stats"], recorded: ["stats"], emulate: ["stats --budget"] });
    const [{ openStore }, { ledgerSums, parseSince, formatStats }] = await Promise.all([import("../session/store.ts"), import("../meter/stats.ts")]);
    if (args.by !== undefined && !(GROUPS as readonly string[]).includes(args.by)) {
      throw new CachetError("BAD_FLAG", `--by "${args.by}" is not a grouping`, { hint: `use --by with one of ${GROUPS.join(", ")}` });
    }
    const since = args.since === undefined ? undefined : parseSince(args.since);
    if (args.since !== undefined && since === undefined) {
      throw new CachetError("BAD_FLAG", `--since "${args.since}" is neither a duration nor a date that exists`, { hint: "use e.g. --since 0s, --since 7d, --since 1h30m or --since 2026-01-31" });
    }
    // Read after the flags and before the store, whatever the flags, as a turn reads it: its limits make the budget
    // report, its price overrides and plugins price rows stored before their figures; a broken one is refused.
    const config = await (await import("../config.ts")).loadConfig();
    const store = openStore(undefined, { readonly: true });
    try {
      if (args.budget) {
        const { budgetReport, formatBudgetReport } = await import("../budget/budget-report.ts");
        const sessionId = args.session === undefined ? (store.latestSession()?.id ?? null) : store.findStoredSession(args.session).id;
        const report = budgetReport(store, config, { sessionId, emulated: args.emulate === true });
        stdout().write(args.json ? `${JSON.stringify(report)}\n` : formatBudgetReport(report, args.emulate === true));
        return;
      }
      const sessionId = args.session === undefined ? undefined : store.findStoredSession(args.session).id;
      // Recorded traffic is other clients': it is shown apart, never mixed into cachet's own figures.
      const source = sessionId !== undefined ? undefined : args.recorded ? "recorded" : "own";
      const by = (args.by as (typeof GROUPS)[number] | undefined) ?? "session";
      const { groups, total } = await ledgerSums(store, config, by, { ...(sessionId ? { sessionId } : {}), ...(since !== undefined ? { since } : {}), ...(source ? { source } : {}) });
      if (args.json) stdout().write(`${JSON.stringify({ by, groups, total })}\n`);
      else stdout().write(formatStats(groups, total));
    } finally {
      store.close();
    }
  },
});
