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
import { toUsd } from "../meter/money.ts";

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
 * Migration making both spend indexes cover the exact cost (`cost_pico`,
 * whole pico-USD) that the sums now read instead of the float `cost_usd`: a
 * million float costs summed drift from their exact total, integers do not.
 * Every row since the figures migration carries its cost_pico; one that
 * counts toward a spend without it gets it from cost_usd as that migration
 * gave it, so the spend counts the same rows. The indexes keep their names.
 */
export const PICO_SPEND_MIGRATION = `
  UPDATE requests SET cost_pico = CAST(ROUND(cost_usd * 1e12) AS INTEGER) WHERE spend_emulated IS NOT NULL AND cost_pico IS NULL AND cost_usd IS NOT NULL;
  DROP INDEX requests_spend;
  CREATE INDEX requests_spend ON requests(spend_emulated, started_at, cost_pico) WHERE spend_emulated IS NOT NULL;
  DROP INDEX requests_session_spend;
  CREATE INDEX requests_session_spend ON requests(session_id, spend_emulated, cost_pico) WHERE spend_emulated IS NOT NULL;
`;

/**
 * USD the ledger counts toward the real or emulated spend over the requests
 * started in [startMs, endMs) (Unix epoch ms): the exact sum of their costs,
 * as the nearest double. Unpriced rows add nothing.
 */
export function ledgerSpend(db: Database, emulated: boolean, span: { startMs: number; endMs: number }): number {
  return picoTotal(db, "SELECT SUM(cost_pico) AS pico FROM requests WHERE spend_emulated = ? AND started_at >= ? AND started_at < ?", emulated ? 1 : 0, span.startMs, span.endMs);
}

/** USD the ledger counts toward the real or emulated spend of one session: the exact sum, as the nearest double. */
export function ledgerSessionSpend(db: Database, emulated: boolean, sessionId: string): number {
  return picoTotal(db, "SELECT SUM(cost_pico) AS pico FROM requests WHERE session_id = ? AND spend_emulated = ?", sessionId, emulated ? 1 : 0);
}

/** A SUM of whole pico-USD read as a bigint (past 2^53 a double would round it), in USD. */
function picoTotal(db: Database, sql: string, ...params: (string | number)[]): number {
  const { pico } = db.query(sql).safeIntegers(true).get(...params) as { pico: bigint | null };
  return pico === null ? 0 : toUsd(pico * 1_000_000n);
}
