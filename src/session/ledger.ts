/**
 * The ledger: one row per provider call, priced. Each row's wire hash chain is
 * stored as a delta of the session's previous row (chain-delta.ts).
 */
import { CachetError } from "../errors.ts";
import { type ChainBase, decodeChain, encodeChain } from "./chain-delta.ts";
import { sessionNotFound, type StoreCore } from "./core.ts";
import { deepFreeze, LEDGER_COLUMNS, ledgerValues, toLedgerRow, type RequestRow } from "./rows.ts";
import type { ChainLink, LedgerRow } from "./types.ts";

/** Fields of a ledger row that {@link Store.updateRequest} may change (the chain is immutable: later rows are stored as deltas of it). */
export type LedgerPatch = Partial<Omit<LedgerRow, "id" | "sessionId" | "chain">>;

/** Filter of {@link Store.ledger}. */
export interface LedgerFilter {
  sessionId?: string;
  /** Only requests started at or after this Unix epoch ms. */
  since?: number;
}

/** Ledger rows. Writes must run inside {@link StoreCore.write}. */
export class Ledger {
  private readonly lastChains = new Map<string, ChainBase>();
  /**
   * Chains rebuilt lately, by row id (a row's chain never changes): a turn
   * reads the session's recent rows several times (sticky settings,
   * compaction estimate, cacheable maximum), and rebuilding them would parse
   * every stored link of a long session each time.
   */
  private readonly resolved: Map<string, ChainLink[]>;
  /**
   * Settled rows read lately, by id, frozen: a turn reads the session's
   * latest rows several times (sticky settings, compaction calibration,
   * cacheable maximum, the previous request), and building each of 32 rows of
   * 50 columns again costs more than finding which rows they are. Only rows
   * that no longer change are kept: settled and figured (see {@link settledRow}).
   */
  private readonly settledRows: Map<string, LedgerRow>;
  /**
   * Which rows are the latest settled ones, of sessions whose turn lease this
   * process holds (under the lease's fencing token): no other process writes
   * the session's rows then, so the list stays true until this process
   * records a row that may be settled, discards or updates one. A turn's
   * several reads of its session's latest rows then query the index once.
   */
  private readonly settledIds = new Map<string, SettledIds>();

  constructor(private readonly core: StoreCore) {
    // Kept with the connection (StoreCore.kept): a row's chain never changes, nor does a settled, figured row.
    this.resolved = core.kept("ledger.chains", () => new Map());
    this.settledRows = core.kept("ledger.settled", () => new Map());
  }

  record(row: LedgerRow): void {
    this.core.fence(row.sessionId);
    // An in-flight row is not settled: the latest settled rows stay what they were.
    if (row.status !== "in_flight") this.settledIds.delete(row.sessionId);
    // An empty chain (a row in flight) shares no link with any base: the base is not looked up for it.
    const delta = encodeChain(row.chain, row.chain.length > 0 ? this.chainBase(row.sessionId) : undefined);
    const values = ledgerValues(row);
    try {
      this.core.db.query(INSERT_REQUEST).run(row.id, row.sessionId, ...values, delta.base, delta.shared, delta.depth, JSON.stringify(delta.tail), spendEmulated(row.spend));
    } catch (error) {
      // The row's key and its session's foreign key are the checks: no statement of their own before the request.
      const code = (error as { code?: unknown }).code;
      if (code === "SQLITE_CONSTRAINT_PRIMARYKEY") throw new CachetError("STORE", `ledger row ${row.id} is already stored`, { hint: "a ledger row is written once; change it with updateRequest" });
      if (code === "SQLITE_CONSTRAINT_FOREIGNKEY") throw sessionNotFound(row.sessionId);
      throw error;
    }
    // A row without a chain (in flight) cannot be a base: the session's last chain stays the one to extend.
    if (row.chain.length > 0) this.lastChains.set(row.sessionId, { id: row.id, chain: row.chain, depth: delta.depth });
    this.remember(row.id, row.chain);
    if (row.status !== "in_flight" && row.status !== "lost" && row.usage.input !== undefined) {
      // Kept as the latest-rows read would build it from what was bound (once committed): the next turn's read of
      // its session's latest row (a -c turn after this one, in a resident process) then reads only which rows they are.
      const stored: Record<string, unknown> = { id: row.id, session_id: row.sessionId, chain_base: delta.base, chain_shared: delta.shared, chain_depth: delta.depth, chain_tail: null };
      LEDGER_COLUMNS.forEach((column, i) => (stored[column] = values[i]));
      const chain = row.chain;
      // Only a figured row is kept (see settledRow): another's is not built at all; nor one SQLite stores otherwise (NaN as NULL, -0 as 0).
      if (stored.figured === 1 && !values.some((v) => typeof v === "number" && (Number.isNaN(v) || Object.is(v, -0)))) this.core.afterCommit(() => this.settledRow(stored as unknown as RequestRow, chain));
    }
  }

  /**
   * A session this process created (committed) and holds the lease of under `token`: it has no settled
   * rows, so a turn's reads of its latest rows need no query.
   */
  created(sessionId: string, token: string): void {
    this.settledIds.set(sessionId, { token, ids: [], all: true });
  }

  /** Deletes the session's rows `ids` (in-flight rows a turn replaces with its final ones). */
  discard(sessionId: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.core.rev(sessionId);
    this.core.fence(sessionId);
    this.settledIds.delete(sessionId);
    const remove = this.core.db.query("DELETE FROM requests WHERE session_id = ? AND id = ?");
    for (const id of ids) {
      remove.run(sessionId, id);
      this.resolved.delete(id);
      this.settledRows.delete(id);
    }
    // The next row is delta-encoded against the latest row left: read again only when the base was discarded.
    const base = this.lastChains.get(sessionId);
    if (base && ids.includes(base.id)) this.lastChains.delete(sessionId);
  }

  /** Marks the session's in-flight rows lost (their process ended before the answer did); returns how many. */
  settleInFlight(sessionId: string): number {
    this.core.fence(sessionId);
    this.settledIds.delete(sessionId);
    return this.core.db
      .query("UPDATE requests SET status = 'lost', error = ? WHERE session_id = ? AND status = 'in_flight'")
      .run("the process ended before the answer did (killed or crashed): the request was sent, its usage is unknown", sessionId).changes;
  }

  update(id: string, patch: LedgerPatch): void {
    const current = this.request(id);
    const next: LedgerRow = { ...current, ...patch, id: current.id, sessionId: current.sessionId, chain: current.chain };
    this.core.db.query(`UPDATE requests SET ${LEDGER_COLUMNS.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`).run(...ledgerValues(next), id);
    this.settledRows.delete(id);
    this.settledIds.delete(current.sessionId);
  }

  requests(sessionId: string): LedgerRow[] {
    return this.toLedgerRows(this.core.db.query("SELECT * FROM requests WHERE session_id = ? ORDER BY started_at, rowid").all(sessionId) as RequestRow[]);
  }

  rows(filter: LedgerFilter): LedgerRow[] {
    const rows = this.core.db
      .query("SELECT * FROM requests WHERE (?1 IS NULL OR session_id = ?1) AND started_at >= ?2 ORDER BY started_at, rowid")
      .all(filter.sessionId ?? null, filter.since ?? 0) as RequestRow[];
    return this.toLedgerRows(rows);
  }

  /** The session's latest settled row, or null. Shared with other reads: frozen. */
  last(sessionId: string): LedgerRow | null {
    return this.recent(sessionId, 1)[0] ?? null;
  }

  /**
   * The session's latest `limit` settled rows, oldest first. Which rows they
   * are is read by the (session, start) index; only rows not kept from an
   * earlier read are read whole. Shared with other reads: frozen.
   */
  recent(sessionId: string, limit: number): LedgerRow[] {
    return this.settledById(this.latestSettledIds(sessionId, limit));
  }

  /** Settled rows `ids`, in that order: those kept from an earlier read as they are, the others read whole. Frozen. */
  private settledById(ids: readonly string[]): LedgerRow[] {
    const found = new Map<string, LedgerRow>();
    const missing: string[] = [];
    for (const id of ids) {
      const kept = this.settledRows.get(id);
      if (kept === undefined) {
        missing.push(id);
        continue;
      }
      // Used again: kept as recently used (see remember).
      this.settledRows.delete(id);
      this.settledRows.set(id, kept);
      found.set(id, kept);
    }
    if (missing.length > 0) {
      const rows = this.core.db.query(`SELECT ${WITHOUT_TAIL} FROM requests WHERE id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(missing)) as RequestRow[];
      const chains = this.resolveChains(rows);
      for (const row of rows) found.set(row.id, this.settledRow(row, chains.get(row.id)!));
    }
    // A row deleted in between (its session removed by another process) is left out.
    return ids.flatMap((id) => found.get(id) ?? []);
  }

  /**
   * The latest settled row to `provider` and `model` started in [`since`,
   * `until`] of each other session, among the {@link OTHER_SESSIONS_SCANNED}
   * sessions written to last since `since`, at most `sessions` of them,
   * oldest first. Shared with other reads: frozen.
   */
  latestOfOtherSessions(sessionId: string, provider: string, model: string, since: number, until: number, sessions: number): LedgerRow[] {
    // Sessions by their update index, then each one's latest row by the (session, start) index: a few rows are read,
    // not every request of the window (reading a row's status reads past its chain, on overflow pages for a long one).
    const ids = (
      this.core.db
        .query(
          `SELECT id FROM (
             SELECT (SELECT r.id FROM requests r WHERE r.session_id = s.id AND r.started_at BETWEEN ?1 AND ?2 AND r.provider = ?3 AND r.model = ?4 AND ${SETTLED}
                     ORDER BY r.started_at DESC, r.rowid DESC LIMIT 1) AS id
             FROM sessions s WHERE s.updated_at >= ?1 AND s.id <> ?5 ORDER BY s.updated_at DESC LIMIT ?6
           ) WHERE id IS NOT NULL LIMIT ?7`,
        )
        .values(since, until, provider, model, sessionId, OTHER_SESSIONS_SCANNED, sessions) as [string][]
    )
      .map(([id]) => id)
      .reverse();
    // Oldest first by start, as the live-entry search reads them.
    return this.settledById(ids).sort((a, b) => a.startedAt - b.startedAt);
  }

  /** Requests of the session (`requests` count of a listing). */
  count(sessionId: string): number {
    return (this.core.db.query("SELECT COUNT(*) AS n FROM requests WHERE session_id = ?").get(sessionId) as { n: number }).n;
  }

  request(id: string): LedgerRow {
    const row = this.core.db.query("SELECT * FROM requests WHERE id = ?").get(id) as RequestRow | null;
    if (!row) throw new CachetError("SESSION_NOT_FOUND", `no request "${id}" in the ledger`, { hint: "run `cachet sessions show` to see a session's requests" });
    return this.toLedgerRows([row])[0]!;
  }

  /** Drops what this process cached about a removed session. */
  forget(sessionId: string): void {
    this.lastChains.delete(sessionId);
    this.settledIds.delete(sessionId);
    for (const [id, row] of this.settledRows) if (row.sessionId === sessionId) this.settledRows.delete(id);
  }

  /** The chain a new request of the session is delta-encoded against. */
  private chainBase(sessionId: string): ChainBase | undefined {
    const memo = this.lastChains.get(sessionId);
    if (memo) return memo;
    // By the (session, start) index and without the chain texts: a long session's rows are not all read.
    const row = this.core.db.query(`SELECT ${WITHOUT_TAIL} FROM requests WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1`).get(sessionId) as RequestRow | null;
    if (!row) return undefined;
    return { id: row.id, chain: this.resolveChains([row]).get(row.id)!, depth: row.chain_depth };
  }

  /** Ids of the session's latest `limit` settled rows, oldest first (see {@link settledIds}). */
  private latestSettledIds(sessionId: string, limit: number): string[] {
    const token = this.core.fences.get(sessionId);
    const known = token === undefined ? undefined : this.settledIds.get(sessionId);
    if (known !== undefined && known.token === token && (known.ids.length >= limit || known.all)) return known.ids.slice(-limit);
    // Under the lease a turn's reads are served from one query: it asks for the most any of them reads.
    const want = token === undefined ? limit : Math.max(limit, SETTLED_IDS);
    const ids = (this.core.db.query(`SELECT id FROM requests WHERE session_id = ? AND ${SETTLED} ORDER BY started_at DESC, rowid DESC LIMIT ?`).values(sessionId, want) as [string][]).map(([id]) => id).reverse();
    // Not what a write transaction sees: it may still roll back.
    if (token !== undefined && !this.core.db.inTransaction) this.settledIds.set(sessionId, { token, ids, all: ids.length < want });
    return ids.slice(-limit);
  }

  /**
   * A settled row as a frozen record, kept for later reads when it can no
   * longer change: its figures are stored (a row recorded without them is
   * filled by LedgerFigures.backfill, from any process), and the only other
   * write to a settled row is {@link update}, which drops it here. Its chain
   * is shared with the chain memo and the next row's delta base, so it is not frozen.
   */
  private settledRow(row: RequestRow, chain: ChainLink[]): LedgerRow {
    const record = toLedgerRow(row, chain);
    deepFreeze(record.rawUsage);
    Object.freeze(record.usage);
    Object.freeze(record);
    // A write transaction's view may still roll back.
    if (row.figured === 1 && !this.core.db.inTransaction) {
      this.settledRows.set(row.id, record);
      if (this.settledRows.size > SETTLED_ROWS) this.settledRows.delete(this.settledRows.keys().next().value!);
    }
    return record;
  }

  private toLedgerRows(rows: RequestRow[]): LedgerRow[] {
    const chains = this.resolveChains(rows);
    return rows.map((row) => toLedgerRow(row, chains.get(row.id)!));
  }

  /** Keeps a row's chain for {@link resolveChains}, the latest RESOLVED_CHAINS of them (enough for a turn's reads of recent rows). */
  private remember(id: string, chain: ChainLink[]): void {
    this.resolved.delete(id);
    this.resolved.set(id, chain);
    if (this.resolved.size > RESOLVED_CHAINS) this.resolved.delete(this.resolved.keys().next().value!);
  }

  /** Rebuilds the chains of `rows`, reading bases that are not among them. */
  private resolveChains(rows: RequestRow[]): Map<string, ChainLink[]> {
    const byId = new Map(rows.map((row) => [row.id, row]));
    const chains = new Map<string, ChainLink[]>();
    const resolve = (row: RequestRow): ChainLink[] => {
      let known = chains.get(row.id);
      if (known) return known;
      known = this.resolved.get(row.id);
      if (known) {
        // Used again: kept as recently used, so a session's recent rows stay while other sessions take turns.
        this.remember(row.id, known);
        chains.set(row.id, known);
        return known;
      }
      // Rows of the latest-rows reads come without their tail: it is read only for a chain not kept.
      const text = row.chain_tail ?? (this.core.db.query("SELECT chain_tail FROM requests WHERE id = ?").get(row.id) as { chain_tail: string }).chain_tail;
      const tail = JSON.parse(text) as ChainLink[];
      let chain = tail;
      if (row.chain_base !== null) {
        const base = byId.get(row.chain_base) ?? (this.core.db.query("SELECT * FROM requests WHERE id = ?").get(row.chain_base) as RequestRow | null);
        if (!base) throw this.core.inconsistent(`request ${row.id} refers to missing request ${row.chain_base}`);
        chain = decodeChain(resolve(base), row.chain_shared, tail);
      }
      chains.set(row.id, chain);
      this.remember(row.id, chain);
      return chain;
    };
    for (const row of rows) resolve(row);
    return chains;
  }
}

/**
 * Rows whose request finished as far as the provider is concerned: it
 * reported their usage. In-flight and lost rows hold no chain and no usage,
 * and an attempt that failed before any usage (refused, never answered, or
 * aborted first) may have left no cache entry, so the previous request of a
 * turn (cacheable maximum, sticky settings) is never one of them.
 */
const SETTLED = "status NOT IN ('in_flight', 'lost') AND input IS NOT NULL";

// spend_emulated is written once with the row (LedgerRow.spend): an update leaves it as it is.
const INSERT_REQUEST = `INSERT INTO requests (id, session_id, ${LEDGER_COLUMNS.join(", ")}, chain_base, chain_shared, chain_depth, chain_tail, spend_emulated) VALUES (?, ?, ${LEDGER_COLUMNS.map(() => "?").join(", ")}, ?, ?, ?, ?, ?)`;

/** The column value of {@link LedgerRow.spend}. */
function spendEmulated(spend: LedgerRow["spend"]): number | null {
  return spend === undefined ? null : spend === "emulated" ? 1 : 0;
}

/** Sessions {@link Ledger.latestOfOtherSessions} looks at: a bound on one turn's reads in a busy ledger. */
const OTHER_SESSIONS_SCANNED = 64;

/** Chains kept by {@link Ledger}: above the recent rows a turn reads (LIVE_ENTRY_ROWS, 32) plus their delta bases. */
const RESOLVED_CHAINS = 128;

/** The latest settled row ids of one session, as {@link Ledger} keeps them under its turn lease. */
interface SettledIds {
  /** The fencing token of the lease they were read under: a later lease (another turn) reads them again. */
  token: string;
  /** Oldest first. */
  ids: string[];
  /** True when the session has no settled row before them. */
  all: boolean;
}

/** Latest settled rows whose ids a turn's first read asks for: the most a turn reads (LIVE_ENTRY_ROWS, 32). */
const SETTLED_IDS = 32;

/** Settled rows kept by {@link Ledger}: the recent rows a turn reads (LIVE_ENTRY_ROWS, 32) of a few sessions served in turn. */
const SETTLED_ROWS = 128;

// Every column but the chain's tail (null instead), which a long session's full chains make large.
const WITHOUT_TAIL = `id, session_id, ${LEDGER_COLUMNS.join(", ")}, chain_base, chain_shared, chain_depth, NULL AS chain_tail`;
