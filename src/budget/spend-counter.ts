/**
 * What has been spent, from two sources in the store. The budget's counters
 * (table `spend`) hold each provider call a run under a limit made: first a
 * reservation of its worst-case forecast, then settled to its actual cost
 * (kept at the forecast when the cost is unknown: the provider may have
 * billed it). The ledger holds every other priced request cachet sent
 * (ledger-spend.ts), so spend made while no limit was set counts too. Reading
 * the totals, checking the limits and inserting the reservation happen in one
 * write transaction, so concurrent processes queue on SQLite's write lock and
 * cannot both spend the same headroom. Counter rows hold amounts and periods
 * only, never content: a --no-store run under a day or month limit counts
 * there, its ledger being in memory.
 */
import { newId } from "../context/ids.ts";
import type { Store } from "../session/store.ts";
import { ledgerSessionSpend, ledgerSpend } from "./ledger-spend.ts";
import type { CalendarPeriods } from "./periods.ts";

/** What has been spent (reservations included) in each scope, USD. */
export interface SpendTotals {
  day: number;
  month: number;
  /** Undefined without a session scope (an ephemeral run). */
  session: number | undefined;
}

/** Scope of a reservation. */
export interface SpendScope {
  /** Null for a run that stores no session (--no-store). */
  sessionId: string | null;
  /** The day and month the call falls in (reservations are kept under their keys; the ledger is read over their spans). */
  periods: CalendarPeriods;
  /** Emulated calls have their own counters: they cost nothing real. */
  emulated: boolean;
}

/**
 * Totals of a scope: the counters' and the ledger's. Reads only, each total
 * when first asked for and then kept: a month of a large ledger takes tens of
 * ms to sum, which a run with only a daily limit never pays. Ask while the
 * store holds what they should count (inside the transaction that checks them).
 */
export function spendTotals(store: Store, scope: SpendScope): SpendTotals {
  const db = store.database;
  const sum = (sql: string, ...params: (string | number)[]) => (db.query(sql).get(...params) as { total: number }).total;
  const emulated = scope.emulated ? 1 : 0;
  const { day, month } = scope.periods;
  const sessionId = scope.sessionId;
  const read = {
    day: () => sum("SELECT TOTAL(amount_usd) AS total FROM spend WHERE emulated = ? AND day = ?", emulated, day.key) + ledgerSpend(db, scope.emulated, day),
    month: () => sum("SELECT TOTAL(amount_usd) AS total FROM spend WHERE emulated = ? AND month = ?", emulated, month.key) + ledgerSpend(db, scope.emulated, month),
    session: () =>
      sessionId === null ? undefined : sum("SELECT TOTAL(amount_usd) AS total FROM spend WHERE emulated = ? AND session_id = ?", emulated, sessionId) + ledgerSessionSpend(db, scope.emulated, sessionId),
  };
  const kept: Partial<SpendTotals> = {};
  const total = <K extends keyof SpendTotals>(kind: K): SpendTotals[K] => {
    if (!(kind in kept)) kept[kind] = read[kind]() as SpendTotals[K];
    return kept[kind] as SpendTotals[K];
  };
  return {
    get day() {
      return total("day");
    },
    get month() {
      return total("month");
    },
    get session() {
      return total("session");
    },
  };
}

/**
 * In one write transaction: reads the totals, lets `check` refuse (it throws),
 * and records a reservation of `forecastUsd`.
 * @returns the reservation's id, for {@link settleSpend}
 * @throws whatever `check` throws (nothing is recorded); CachetError STORE when the store cannot be written
 */
export function reserveSpend(store: Store, scope: SpendScope, forecastUsd: number, check: (totals: SpendTotals) => void, now: number): string {
  return store.transaction((db) => {
    check(spendTotals(store, scope));
    const id = newId("b");
    db.query("INSERT INTO spend (id, session_id, day, month, emulated, amount_usd, forecast_usd, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?)").run(
      id, scope.sessionId, scope.periods.day.key, scope.periods.month.key, scope.emulated ? 1 : 0, forecastUsd, forecastUsd, now,
    );
    return id;
  });
}

/** Replaces a reservation's amount with what the call actually cost (USD). */
export function settleSpend(store: Store, id: string, amountUsd: number): void {
  store.transaction((db) => {
    db.query("UPDATE spend SET amount_usd = ?, state = 'settled' WHERE id = ?").run(amountUsd, id);
  });
}
