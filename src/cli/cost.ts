/**
 * `cachet cost [SESSION] [--tree] [--json]`: a session's cost per request,
 * and with --tree per node (system parts, tools, schema, messages and their
 * blocks) with tokens, cache status and USD. Default: the latest of cachet's own sessions (one `cachet proxy`
 * recorded is shown when named, as `-c` never picks one).
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "cost", description: "Show a session's cost, per request and per node" },
  args: {
    session: { type: "positional", required: false, description: "Session id or name (default: the latest of cachet's own sessions; a recorded one when named)" },
    tree: { type: "boolean", description: "Show every node of every request" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const [{ openStore }, { ledgerSums }, { dollars }, { loadConfig }] = await Promise.all([import("../session/store.ts"), import("../meter/stats.ts"), import("../meter/money.ts"), import("../config.ts")]);
    // Read first, whatever the flags and the store hold, as a turn reads it: its price overrides and plugins price
    // the tree and any rows stored before their figures, so a broken config is refused, never priced without.
    const config = await loadConfig();
    const store = openStore(undefined, { readonly: true });
    try {
      const session = args.session ? store.findStoredSession(args.session) : store.latestSession();
      if (!session) {
        const { onlyRecordedError } = await import("../session/recorded-refusal.ts");
        throw onlyRecordedError(store, "cachet cost", "there is no session of cachet's own to show", "shows") ??
          new CachetError("SESSION_NOT_FOUND", "there is no session yet", { hint: 'run `cachet "a prompt"` first' });
      }
      const { total } = await ledgerSums(store, config, "session", { sessionId: session.id });
      const totalLine = `total ${total.requests} requests  ${total.estimatedRequests ? "~" : ""}${dollars(total.costExact)}${total.unpricedRequests ? ` (+${total.unpricedRequests} unpriced)` : ""}  hit rate ${percent(total.hitRate)}  savings ${total.savingsExact === null ? "?" : `${total.estimatedRequests ? "~" : ""}${dollars(total.savingsExact)}`}\n`;
      if (!args.tree) {
        // Without the tree the stored figures are enough: no hash chain is loaded, nothing is re-priced.
        const requests = store.figures().requests(session.id);
        if (args.json) stdout().write(`${JSON.stringify({ session: session.id, total, requests })}\n`);
        else {
          const [{ requestFigureLines }, { writeOut }] = await Promise.all([import("../meter/session-cost.ts"), import("./write-out.ts")]);
          await writeOut((function* () {
            yield* requestFigureLines(requests);
            yield totalLine;
          })());
        }
        return;
      }
      const [{ loadCatalog }, { sessionCost, formatSessionCost }, { loadModelHost, catalogRefFor, rowExtrasFor }] = await Promise.all([
        import("../meter/catalog.ts"),
        import("../meter/session-cost.ts"),
        import("../run/model-resolution.ts"),
      ]);
      const rows = store.requests(session.id);
      const { catalog } = await loadCatalog();
      const host = await loadModelHost(config);
      // Each row's model priced under its provider's catalog id (openai-responses and plugins with catalogId), and its
      // raw usage read by its provider's mapping (fees, modalities), as `run` priced it: the nodes sum to its cost.
      const views = sessionCost(rows, catalog, config.prices, catalogRefFor(host), rowExtrasFor(host));
      if (args.json) stdout().write(`${JSON.stringify({ session: session.id, total, requests: views })}\n`);
      else {
        const { messagePreviews } = await import("../session/session-report.ts");
        stdout().write(formatSessionCost(views, true, messagePreviews(store, session.id, COST_PREVIEW_CHARS)) + totalLine);
      }
    } finally {
      store.close();
    }
  },
});

/** Characters of a message's preview at the end of its `cost --tree` line, after the node columns. */
const COST_PREVIEW_CHARS = 48;

function percent(value: number | null): string {
  return value === null ? "-" : `${(value * 100).toFixed(1)}%`;
}
