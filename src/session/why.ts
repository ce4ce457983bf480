/**
 * The data behind `cachet why`: finds the request and its predecessor in the
 * ledger, takes the provider's cache rules from its plugin, and explains.
 */
import { loadConfig } from "../config.ts";
import { CachetError } from "../errors.ts";
import { loadPlugins } from "../plugin/loader.ts";
import { DEFAULT_CACHE_RULES, explain, LIVE_ENTRY_ROWS, OTHER_SESSIONS, otherSessionsSince, type Explanation } from "../wire/divergence.ts";
import { printable } from "../printable.ts";
import { onlyRecordedError } from "./recorded-refusal.ts";
import { messagePreviews } from "./session-report.ts";
import { openStore } from "./store.ts";
import type { LedgerRow } from "./types.ts";

/** What `cachet why --json` prints. */
export interface WhyReport extends Explanation {
  request: { id: string; session: string; model: string; index: number; startedAt: number };
  /** The request compared with: the session's previous one, or for a fork's first request the parent's last one before it. */
  previous: { id: string; session: string; model: string; startedAt: number } | null;
  /** Nodes (chain links) in this request. */
  links: number;
  /**
   * Set when the provider refused this request (an HTTP error answer, no
   * usage): nothing was read from the cache or billed. `httpStatus` is the
   * answer's status code; `error` the stored one-line message.
   */
  refused?: { httpStatus: number; error: string };
  /** When the requests diverge at a message (or one of its blocks): that message's preview, as `sessions show` previews it. */
  divergentMessage?: string;
  /** The compaction made just before this request (a deliberate change of everything after Z0 + Z1), if any. */
  compaction?: { id: string; reason: string; summarySource: string; collapsed: [string, string]; summaryRequest: string | null };
}

/**
 * Explains one request (by ledger id, or a session's latest), or the latest
 * request of the latest of cachet's own sessions (a recorded one is explained when named).
 * @throws CachetError CONFIG_UNREADABLE, CONFIG_INVALID for a broken config.toml (src/config.ts), before anything is
 *   read from the store; SESSION_NOT_FOUND when there is nothing to explain.
 */
export async function whyReport(ref?: string): Promise<WhyReport> {
  // Read before the store, as a turn reads it: a broken config is refused whatever is stored, not only once a request is found.
  const config = await loadConfig();
  const store = openStore(undefined, { readonly: true });
  try {
    let rows: LedgerRow[];
    let current: LedgerRow;
    // In-flight and lost rows (a request whose process ended before its answer) hold no chain: nothing to compare.
    const settled = (r: LedgerRow) => r.status !== "in_flight" && r.status !== "lost";
    if (ref?.startsWith("r_")) {
      current = store.request(ref);
      if (!settled(current)) throw neverFinished(current);
      rows = store.requests(current.sessionId).filter(settled);
    } else {
      const session = ref ? store.findStoredSession(ref) : store.latestSession();
      if (!session) {
        throw onlyRecordedError(store, "cachet why", "there is no request of cachet's own to explain", "explains") ??
          new CachetError("SESSION_NOT_FOUND", "there is no request to explain yet", { hint: "run a prompt first" });
      }
      const all = store.requests(session.id);
      rows = all.filter(settled);
      const last = rows.at(-1);
      if (!last) {
        // Requests that never finished (one in flight now, or lost) are its requests all the same: said as `why r_…` says it.
        const unsettled = all.at(-1);
        if (unsettled) throw neverFinished(unsettled);
        throw new CachetError("SESSION_NOT_FOUND", `session ${ref ?? session.id} has no requests`, { hint: "run a prompt in it first" });
      }
      current = last;
    }
    const index = rows.findIndex((r) => r.id === current.id);
    // A fork's first request was sent against the parent's cache (src/run/stages/record.ts compares it with the parent's last request).
    // An earlier attempt whose usage was never reported (refused, never answered, aborted first) is not a previous request, as for the turn's own comparison (Ledger.last).
    const before = (index > 0 ? rows.slice(0, index) : parentRequestsBefore(store, current)).filter((r) => r.usage.input !== undefined);
    const previous = before.at(-1) ?? null;
    const host = await loadPlugins({ config });
    const spec = host.providers.get(current.provider)?.value;
    const rules = spec?.cacheRules?.(current.model) ?? DEFAULT_CACHE_RULES;
    const since = previous?.startedAt ?? 0;
    const compaction = store.compactions(current.sessionId).findLast((c) => c.createdAt >= since && c.createdAt <= current.startedAt);
    // A fork's first request is measured against the parent's last request alone, as its expectation was recorded.
    // Other sessions' entries as the turn's record counted them: not for a fork's first request (src/run/stages/record.ts).
    const forkStart = index === 0 && previous !== null;
    const others = forkStart || current.usage.input === undefined ? [] : store.otherSessionsRequests(current, otherSessionsSince(current, rules), OTHER_SESSIONS);
    const explained = explain(previous, current, rules, index > 0 ? before.slice(-LIVE_ENTRY_ROWS) : before.slice(-1), others);
    const refused = refusal(current);
    if (refused) {
      // What the wire comparison expected never happened: the provider read and billed nothing.
      explained.causes = [`the provider refused this request (${refused.error}): nothing was read from the cache or billed`];
    } else if (current.status === "error" && current.usage.input === undefined) {
      explained.causes = [`the request failed before the provider reported usage${current.error ? ` (${current.error})` : ""}`];
    }
    if (compaction) {
      explained.causes.unshift(
        `compaction ${compaction.id} (${compaction.reason}) moved messages ${compaction.firstCollapsed}…${compaction.lastCollapsed} into the summary zone: a deliberate change after the stable prefix and the summary zone`,
      );
    }
    const divergentId = explained.divergence?.nodeId.split("#")[0];
    const divergentMessage = divergentId === undefined ? undefined : messagePreviews(store, current.sessionId).get(divergentId);
    return {
      ...(divergentMessage !== undefined ? { divergentMessage } : {}),
      ...(compaction
        ? { compaction: { id: compaction.id, reason: compaction.reason, summarySource: compaction.summarySource, collapsed: [compaction.firstCollapsed, compaction.lastCollapsed] as [string, string], summaryRequest: compaction.summaryRequest } }
        : {}),
      ...(refused ? { refused } : {}),
      request: { id: current.id, session: current.sessionId, model: `${current.provider}/${current.model}`, index, startedAt: current.startedAt },
      previous: previous ? { id: previous.id, session: previous.sessionId, model: `${previous.provider}/${previous.model}`, startedAt: previous.startedAt } : null,
      links: current.chain.length,
      ...explained,
    };
  } finally {
    store.close();
  }
}

/** The provider's refusal of `row` (an error row with an HTTP status and no usage), if that is how it ended. */
function refusal(row: LedgerRow): WhyReport["refused"] {
  if (row.status !== "error" || row.usage.input !== undefined || !row.error) return undefined;
  // Both the run's and the proxy's error rows name the answer's status as "HTTP 400".
  const status = /\bHTTP (\d{3})\b/.exec(row.error)?.[1];
  return status === undefined ? undefined : { httpStatus: Number(status), error: row.error.split("\n")[0]! };
}

/**
 * The requests of the session `current`'s session was forked from (or its
 * nearest forked ancestor that has any) started before `current`, oldest
 * first; empty for a session that is no fork.
 */
function parentRequestsBefore(store: ReturnType<typeof openStore>, current: LedgerRow): LedgerRow[] {
  let parentId = store.findSession(current.sessionId).parentId;
  while (parentId) {
    const earlier = store.requests(parentId).filter((r) => r.startedAt <= current.startedAt && r.id !== current.id);
    if (earlier.length > 0) return earlier;
    parentId = store.findSession(parentId).parentId;
  }
  return [];
}

/** Human-readable form of a {@link WhyReport}. */
export function formatWhy(r: WhyReport): string {
  const n = (v: number | undefined) => (v === undefined ? "unknown" : v.toLocaleString("en-US"));
  const lines = [
    `request   ${r.request.id}  (session ${r.request.session}, ${r.request.model}, request ${r.request.index + 1})`,
    `previous  ${r.previous ? `${r.previous.id}  (${r.previous.session === r.request.session ? r.previous.model : `${r.previous.model}, parent session ${r.previous.session}`})` : "none"}`,
    `shared    ${r.sharedLinks} of ${r.links} nodes`,
    `diverges  ${r.divergence ? `at node ${r.divergence.index}: ${r.divergence.nodeId} (${r.divergence.kind})${r.divergence.previousNodeId && r.divergence.previousNodeId !== r.divergence.nodeId ? `, was ${r.divergence.previousNodeId}` : ""}` : r.previous ? "nowhere: this request extends the previous one" : "-"}`,
    ...(r.divergentMessage !== undefined ? [`message   ${r.divergentMessage}`] : []),
    r.refused
      ? `cached    none: refused by the provider (HTTP ${r.refused.httpStatus}), nothing read or billed`
      : `cached    expected ${n(r.expectedCacheRead)} tokens, actual ${n(r.actualCacheRead)}`,
    // A refusal quotes the provider's own message: no escape sequence of it reaches the terminal.
    ...r.causes.map((c, i) => `${i === 0 ? "cause" : "     "}     ${printable(c)}`),
  ];
  return `${lines.join("\n")}\n`;
}

/** The refusal to explain a request that never finished: in flight (its turn is running) or lost (its process ended first). */
function neverFinished(row: LedgerRow): CachetError {
  return new CachetError("SESSION_NOT_FOUND", `request ${row.id} never finished (status ${row.status}): its wire chain and usage were not recorded, so there is nothing to explain`, {
    hint: row.status === "in_flight" ? "its turn is still running: run `cachet why` again once it has finished" : "run `cachet why` on a finished request (`cachet sessions show` lists them)",
  });
}
