/**
 * `cachet sessions [list|show|rm] [SESSION] [--json] [--force] [--recorded]`: list
 * sessions (default; a SOURCE column tells cachet's own from those `cachet
 * proxy` recorded, `--recorded` lists only the latter), show one (prefix versions, messages, requests; the
 * latest of cachet's own without SESSION), or remove one with its rows (a parent's shared
 * messages stay; a session with forks needs --force, which removes its forks and theirs too).
 */
import { defineCommand } from "citty";
import { edges } from "../edges.ts";
import { CachetError, isCachetError } from "../errors.ts";
import { globalArgs, jsonArg, refuseMisplacedFlags } from "./_args.ts";
import { stdout } from "../stdout.ts";

/** The words of the ACTION positional (`cachet help sessions ACTION` checks them too). */
export const actions = ["list", "show", "rm"] as const;

const args = {
  action: { type: "positional", required: false, description: "list (default), show or rm" },
  session: { type: "positional", required: false, description: "Session ID or NAME (show: default the latest of cachet's own; rm: required)" },
  force: { type: "boolean", description: "rm: also remove the session's forks and theirs" },
  recorded: { type: "boolean", description: "list: only the sessions recorded by `cachet proxy`" },
  ...jsonArg,
  ...globalArgs,
} as const;

export default defineCommand({
  meta: { name: "sessions", description: "List, show or remove sessions" },
  args,
  async run({ args: a }) {
    const action = a.action ?? "list";
    if (!(actions as readonly string[]).includes(action)) {
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${action}" for \`cachet sessions\``, { hint: "use list, show SESSION or rm SESSION" });
    }
    refuseMisplacedFlags(`sessions ${action}`, a, { force: ["sessions rm"], recorded: ["sessions list"] });
    if (action === "list" && a.session !== undefined) {
      throw new CachetError("EXTRA_WORD", `\`cachet sessions list\` takes no word "${a.session}"`, { hint: "to see one session use `cachet sessions show SESSION`" });
    }
    const { openStore } = await import("../session/store.ts");
    const report = await import("../session/session-report.ts");
    const { storeFile } = await import("../paths.ts");
    const { existsSync } = await import("node:fs");
    // rm on no store at all: the empty read-only store answers "no session", and no store file is made.
    const store = openStore(undefined, { readonly: action !== "rm" || !existsSync(storeFile()) });
    try {
      if (action === "list") {
        const { RecordedStore } = await import("../session/recorded.ts");
        const clients = new Map(new RecordedStore(store).sessions().map((s) => [s.id, s.client]));
        const all = report.listSessions(store, (id) => (clients.has(id) ? { source: "recorded", client: clients.get(id) ?? null } : undefined));
        const listings = a.recorded ? all.filter((l) => l.source === "recorded") : all;
        stdout().write(a.json ? listings.map((l) => `${JSON.stringify(l)}\n`).join("") : report.formatSessionList(listings));
      } else if (action === "show") {
        const ref = a.session ?? store.latestSession()?.id;
        if (ref === undefined) {
          const { onlyRecordedError } = await import("../session/recorded-refusal.ts");
          throw onlyRecordedError(store, "cachet sessions show", "there is no session of cachet's own to show", "shows") ??
            new CachetError("SESSION_NOT_FOUND", "there are no sessions yet", { hint: 'start one with `cachet "PROMPT"`' });
        }
        const { writeOut } = await import("./write-out.ts");
        // One snapshot, as export reads: a turn writing the session meanwhile is shown as it was, never half.
        const endSnapshot = store.readSnapshot();
        try {
          // A message is read a stored part at a time (a session may hold one of hundreds of MB): never whole.
          await writeOut(a.json ? report.detailsJsonPieces(store, ref) : [report.formatSessionDetails(report.sessionOverview(store, ref))]);
        } finally {
          endSnapshot();
        }
      } else {
        if (a.session === undefined) throw new CachetError("MISSING_ARGUMENT", "`cachet sessions rm` needs a session ID or NAME", { hint: "run `cachet sessions` to list sessions" });
        const force = { force: a.force === true };
        // A session with forks is refused without --force before waiting on any turn (removalOf). A turn running on
        // the session (or, with --force, on a fork) finishes first: rm takes each turn lease and waits as a second
        // turn would (bounded; SESSION_CONFLICT past it), so no turn loses its ledger rows halfway.
        // A fork whose first turn ended before it stored anything is no fork (sessions.ts, emptyShell): it is removed
        // first, as the next turn would remove it, and does not stand in the way of its parent's removal.
        store.dropAbandonedForks(a.session);
        const releases: (() => void)[] = [];
        try {
          const [root, ...forks] = store.removalOf(a.session, force);
          for (const id of [root!, ...forks]) {
            try {
              releases.push(
                await store.acquireTurn(id, {
                  onBusy: (holder) => edges().writeStderr(`cachet: session ${id} is running a turn (process ${holder.pid} on ${holder.host}): waiting for it to finish before removing it\n`),
                }),
              );
            } catch (error) {
              // Gone while waiting: the turn was the first of a new session or fork and ended before storing anything,
              // so its shell went with it (src/run/stages/session.ts). A fork so gone is no fork; the session itself
              // never existed for the user (`sessions` never listed it), as if rm had run after that turn.
              if (!isCachetError(error) || error.code !== "SESSION_NOT_FOUND") throw error;
              if (id === root) {
                throw new CachetError("SESSION_NOT_FOUND", `no session "${a.session}": its first turn ended before anything was stored in it, so there was nothing to remove`, {
                  hint: "run `cachet sessions` to list sessions",
                });
              }
            }
          }
          // The ledger rows go with the session (README): said, with what they cost, never silently.
          // Summed exactly in pico-USD, as `cost` and `stats` sum; printed from the exact sum, never a drifting float.
          let ledgerRows = 0;
          let unpriced = 0;
          let costPico = 0n;
          const figures = store.figures();
          for (const id of store.removalOf(a.session, force)) {
            for (const sums of figures.sums("session", { sessionId: id })) {
              ledgerRows += sums.requests;
              unpriced += sums.unpriced;
              costPico += sums.costPico;
            }
          }
          const { formatUsd, toUsd, dollars } = await import("../meter/money.ts");
          const costAtto = costPico * 1_000_000n;
          const costExact = formatUsd(costAtto);
          const removed = store.removeSession(a.session, force);
          if (a.json) stdout().write(`${JSON.stringify({ removed, ledgerRows, costUsd: toUsd(costAtto), costExact, unpricedRows: unpriced })}\n`);
          else {
            const { info } = await import("../log.ts");
            const spent = ledgerRows === 0 ? "" : ` with ${removed.length > 1 ? "their" : "its"} ${ledgerRows} ledger row(s), ${dollars(costExact)}${unpriced ? ` and ${unpriced} of unknown cost` : ""} (stats and cost no longer count them)`;
            await info(`removed ${removed.join(", ")}${spent}`);
          }
        } finally {
          for (const release of releases) release();
        }
      }
    } finally {
      store.close();
    }
  },
});
