/**
 * The spend the ledger holds for the budget: every priced request cachet
 * itself sent, counted straight from its ledger row, so that spend made while
 * no limit was set counts against a limit set later. A row carries which
 * spend it counts toward (`requests.spend_emulated`: 0 real, 1 emulated),
 * written with it; NULL when it does not count from here: a run under a limit
 * counted the call through its reservations in `spend` (spend-counter.ts),
 * and requests other clients sent through `cachet proxy` are theirs.
 */
import type { Database } from "bun:sqlite";

/**
 * Migration adding the column and its index. Rows recorded before it did not
 * say whether they were emulated: cachet's own priced rows count as real
 * spend, except the rows a run under a limit counted in `spend` already. A
 * settled reservation took its call's cost, so in each session the
 * reservations settled to an amount are matched one to one with the rows of
 * that cost (the earliest); the rows left over count from the ledger.
 */
export const LEDGER_SPEND_MIGRATION = `
  ALTER TABLE requests ADD COLUMN spend_emulated INTEGER;
  UPDATE requests SET spend_emulated = 0
    WHERE cost_usd IS NOT NULL AND cost_usd <> 0 AND session_id IN (SELECT id FROM sessions WHERE source = 'own');
  UPDATE requests SET spend_emulated = NULL WHERE id IN (
    SELECT id FROM (
      SELECT id, session_id, cost_usd, ROW_NUMBER() OVER (PARTITION BY session_id, cost_usd ORDER BY started_at, rowid) AS nth
      FROM requests WHERE spend_emulated IS NOT NULL AND session_id IN (SELECT session_id FROM spend WHERE state = 'settled')
    ) AS priced
    WHERE nth <= (SELECT COUNT(*) FROM spend WHERE spend.session_id = priced.session_id AND spend.state = 'settled' AND spend.amount_usd = priced.cost_usd)
  );
  CREATE INDEX requests_spend ON requests(spend_emulated, started_at, cost_usd) WHERE spend_emulated IS NOT NULL;
`;

/**
 * Migration adding the index of a session's spend: without it the planner
 * reads a session's sum through requests_spend, every row counted toward that
 * spend (2.5 s at a million rows); with it, only the session's entries.
 */
export const SESSION_SPEND_MIGRATION = `CREATE INDEX requests_session_spend ON requests(session_id, spend_emulated, cost_usd) WHERE spend_emulated IS NOT NULL;`;

/**
 * USD the ledger counts toward the real or emulated spend over the requests
 * started in [startMs, endMs) (Unix epoch ms). Unpriced rows add nothing.
 */
export function ledgerSpend(db: Database, emulated: boolean, span: { startMs: number; endMs: number }): number {
  const row = db.query("SELECT TOTAL(cost_usd) AS total FROM requests WHERE spend_emulated = ? AND started_at >= ? AND started_at < ?").get(emulated ? 1 : 0, span.startMs, span.endMs) as { total: number };
  return row.total;
}

/** USD the ledger counts toward the real or emulated spend of one session. */
export function ledgerSessionSpend(db: Database, emulated: boolean, sessionId: string): number {
  const row = db.query("SELECT TOTAL(cost_usd) AS total FROM requests WHERE session_id = ? AND spend_emulated = ?").get(sessionId, emulated ? 1 : 0) as { total: number };
  return row.total;
}
