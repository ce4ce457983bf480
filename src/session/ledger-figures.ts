/**
 * Per-request figures of the ledger, stored when a request is recorded
 * (exact cost and what it would have cost uncached, in pico-USD, and why a
 * cost is an estimate), and their aggregation in SQL: `cachet stats` and
 * `cachet cost` read sums per group, never message content or hash chains.
 */
import type { Database } from "bun:sqlite";
import type { LedgerRow, RequestStatus } from "./types.ts";
import type { RequestRow, SqlValue } from "./rows.ts";

/**
 * Migration adding the figure columns. Rows recorded before it keep
 * `figured = 0` until {@link LedgerFigures.backfill} prices them; their
 * cost in pico-USD is taken from `cost_usd` here.
 */
export const FIGURES_MIGRATION = `
  ALTER TABLE requests ADD COLUMN cost_pico INTEGER;
  ALTER TABLE requests ADD COLUMN no_cache_pico INTEGER;
  ALTER TABLE requests ADD COLUMN cost_estimate TEXT;
  ALTER TABLE requests ADD COLUMN figured INTEGER NOT NULL DEFAULT 0;
  UPDATE requests SET cost_pico = CAST(ROUND(cost_usd * 1e12) AS INTEGER) WHERE cost_usd IS NOT NULL;
  CREATE INDEX requests_unfigured ON requests(id) WHERE figured = 0;
`;

/** Figure columns written with every ledger row, in the order of {@link figureValues}. */
export const FIGURE_COLUMNS = ["cost_pico", "no_cache_pico", "cost_estimate", "figured"] as const;

/** The figure column values of a row. */
export function figureValues(row: LedgerRow): SqlValue[] {
  return [pico(row.costUsd), pico(row.noCacheCostUsd ?? null), row.costEstimate ?? null, row.noCacheCostUsd === undefined ? 0 : 1];
}

/**
 * The tokens of a request's prompt that count as cacheable in the statistics:
 * its recorded cacheable maximum (what the live entries of earlier recorded
 * requests to the same provider cache could serve, src/wire/divergence.ts),
 * or what it read when it read more. A read beyond every recorded entry was
 * served by an entry someone else wrote (another client, a request cachet
 * did not record): it was in the cache, so it was cacheable, and cache
 * efficiency stays ≤ 100%. Null when the provider reported no usage (no
 * prompt is known). {@link CACHEABLE_SQL} is the same rule in SQL.
 */
export function cacheableOf(row: Pick<LedgerRow, "cacheableMax" | "usage">): number | null {
  if (row.usage.input === undefined) return null;
  return Math.max(row.cacheableMax ?? 0, row.usage.cacheRead ?? 0);
}

/** {@link cacheableOf} over the `requests` columns. */
const CACHEABLE_SQL = "CASE WHEN input IS NOT NULL THEN MAX(COALESCE(cacheable_max, 0), COALESCE(cache_read, 0)) END";

/** A grouping of the ledger. */
export type FigureGroupBy = "session" | "model" | "role" | "day" | "request" | "client";

/** Sums of one group, straight from SQL. Money in pico-USD (1e-12), times in ms. */
export interface FigureSums {
  key: string;
  requests: number;
  input: number;
  cacheRead: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  output: number;
  reasoning: number;
  cacheable: number;
  /** Exact sum (a bigint: a million requests overflow a double's integers). */
  costPico: bigint;
  unpriced: number;
  /** Requests whose cost is a flagged estimate. */
  estimated: number;
  /** Over the requests whose cost and uncached cost are both known: the uncached cost, and uncached − actual. */
  noCachePico: bigint;
  savingsPico: bigint;
  /** Requests left out of the savings (a cost or an uncached cost unknown). */
  savingsLeftOut: number;
  /** Output tokens and milliseconds of the requests that streamed (first token to end). */
  streamedOutput: number;
  streamMs: number;
}

/** Filter of {@link LedgerFigures.sums}. */
export interface FigureFilter {
  sessionId?: string;
  /** Unix epoch ms: requests started at or after. */
  since?: number;
  /** Only sessions of this source: cachet's own, or recorded by `cachet proxy`. */
  source?: "own" | "recorded";
}

/** One request's stored figures, for `cachet cost` without `--tree`. */
export interface RequestFigures {
  id: string;
  role: string;
  provider: string;
  model: string;
  startedAt: number;
  input: number | null;
  cacheRead: number | null;
  cacheWrite5m: number | null;
  cacheWrite1h: number | null;
  output: number | null;
  costUsd: number | null;
  costEstimate: string | null;
  /** How it was sent (`full`, or `incremental`: only the new input after the provider's stored previous response); null when not recorded. */
  requestForm: string | null;
  /** The ledger row's status: `ok`, or how the attempt ended otherwise (`error`, `incomplete`, `in_flight`, `lost`). */
  status: RequestStatus;
}

const KEYS: Record<FigureGroupBy, string> = {
  session: "session_id",
  model: "provider || '/' || model",
  role: "role",
  day: "strftime('%Y-%m-%d', started_at / 1000, 'unixepoch')",
  request: "id",
  // The client (user-agent) of a recorded session; cachet's own sessions are "cachet".
  client: "(SELECT CASE s.source WHEN 'own' THEN 'cachet' ELSE COALESCE(s.client, 'unknown') END FROM sessions s WHERE s.id = requests.session_id)",
};

const SUMS = `
  COUNT(*) AS requests,
  TOTAL(input) AS input, TOTAL(cache_read) AS cacheRead, TOTAL(cache_write_5m) AS cacheWrite5m, TOTAL(cache_write_1h) AS cacheWrite1h,
  TOTAL(output) AS output, TOTAL(reasoning) AS reasoning, TOTAL(${CACHEABLE_SQL}) AS cacheable,
  COALESCE(SUM(cost_pico), 0) AS costPico, COUNT(*) - COUNT(cost_pico) AS unpriced, COUNT(cost_estimate) AS estimated,
  COALESCE(SUM(CASE WHEN cost_pico IS NOT NULL THEN no_cache_pico END), 0) AS noCachePico,
  COALESCE(SUM(no_cache_pico - cost_pico), 0) AS savingsPico, COUNT(*) - COUNT(no_cache_pico - cost_pico) AS savingsLeftOut,
  TOTAL(CASE WHEN finished_at > first_token_at AND output IS NOT NULL THEN output END) AS streamedOutput,
  TOTAL(CASE WHEN finished_at > first_token_at AND output IS NOT NULL THEN finished_at - first_token_at END) AS streamMs`;

/** The figures of one store's ledger. */
export class LedgerFigures {
  /** @param toRow converts a stored row to a ledger row (without its chain) for {@link backfill}. */
  constructor(
    private readonly db: Database,
    private readonly toRow: (row: RequestRow) => LedgerRow,
  ) {}

  /**
   * Sums per group, groups in order of their first request. One scan of the
   * ledger (of one session with `sessionId`, through its index).
   */
  sums(by: FigureGroupBy, filter: FigureFilter = {}): FigureSums[] {
    const where = [
      "started_at >= ?1",
      ...(filter.sessionId === undefined ? [] : ["session_id = ?2"]),
      ...(filter.source === undefined ? [] : ["session_id IN (SELECT id FROM sessions WHERE source = ?3)"]),
    ].join(" AND ");
    const sql = `SELECT ${KEYS[by]} AS key, ${SUMS}, MIN(started_at) AS first FROM requests WHERE ${where} GROUP BY 1 ORDER BY first, key`;
    const args: Array<string | number | null> = [filter.since ?? 0, filter.sessionId ?? null, filter.source ?? null];
    const rows = this.db.query(sql).safeIntegers(true).all(...args.slice(0, filter.source !== undefined ? 3 : filter.sessionId !== undefined ? 2 : 1)) as Array<Record<string, unknown>>;
    return rows.map((r) => {
      const sums = {} as Record<string, unknown>;
      for (const [name, value] of Object.entries(r)) sums[name] = name === "costPico" || name === "noCachePico" || name === "savingsPico" || typeof value !== "bigint" ? value : Number(value);
      sums.key = String(r.key);
      return sums as unknown as FigureSums;
    });
  }

  /** The session's requests with their stored figures, in start order. */
  requests(sessionId: string): RequestFigures[] {
    // Rows as arrays: a session may hold a hundred thousand requests, and named rows cost a third more to build.
    const rows = this.db
      .query(
        `SELECT id, role, provider, model, started_at, input, cache_read, cache_write_5m, cache_write_1h, output, cost_usd, cost_estimate, request_form, status
         FROM requests WHERE session_id = ? ORDER BY started_at, rowid`,
      )
      .values(sessionId) as Array<[string, string, string, string, number, number | null, number | null, number | null, number | null, number | null, number | null, string | null, string | null, RequestStatus]>;
    return rows.map(([id, role, provider, model, startedAt, input, cacheRead, cacheWrite5m, cacheWrite1h, output, costUsd, costEstimate, requestForm, status]) => ({
      id, role, provider, model, startedAt, input, cacheRead, cacheWrite5m, cacheWrite1h, output, costUsd, costEstimate, requestForm, status,
    }));
  }

  /** True when some rows were recorded before figures were stored (see {@link backfill}). */
  pending(): boolean {
    return this.db.query("SELECT 1 FROM requests WHERE figured = 0 LIMIT 1").get() !== null;
  }

  /**
   * Prices the uncached figure of rows recorded before figures were stored
   * (once: they are marked), with `noCacheUsd` (USD, null when unknown).
   * @returns the number of rows filled
   */
  backfill(noCacheUsd: (row: LedgerRow) => number | null): number {
    const rows = this.db.query("SELECT * FROM requests WHERE figured = 0").all() as RequestRow[];
    if (rows.length === 0) return 0;
    const update = this.db.query("UPDATE requests SET no_cache_pico = ?, figured = 1 WHERE id = ?");
    this.db.transaction(() => {
      for (const row of rows) update.run(pico(noCacheUsd(this.toRow(row))), row.id);
    })();
    return rows.length;
  }
}

/** USD as whole pico-USD (the meter's amounts are exact to far below a pico-USD per request). */
function pico(usd: number | null): number | null {
  return usd === null ? null : Math.round(usd * 1e12);
}
