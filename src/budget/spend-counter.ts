/**
 * The spend counters in the store (table `spend`): one row per provider call,
 * first a reservation of its worst-case forecast, then settled to its actual
 * cost. Reading the totals, checking the limits and inserting the reservation
 * happen in one write transaction, so concurrent processes queue on SQLite's
 * write lock and cannot both spend the same headroom. Rows hold amounts and
 * periods only, never content.
 */
import { newId } from "../context/ids.ts";
import type { Store } from "../session/store.ts";
import type { CalendarKeys } from "./periods.ts";

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
  keys: CalendarKeys;
  /** Emulated calls have their own counters: they cost nothing real. */
  emulated: boolean;
}

/** Totals of a scope. Reads only. */
export function spendTotals(store: Store, scope: SpendScope): SpendTotals {
  const db = store.database;
  const sum = (sql: string, ...params: (string | number)[]) => (db.query(sql).get(...params) as { total: number | null }).total ?? 0;
  const emulated = scope.emulated ? 1 : 0;
  return {
    day: sum("SELECT SUM(amount_usd) AS total FROM spend WHERE emulated = ? AND day = ?", emulated, scope.keys.day),
    month: sum("SELECT SUM(amount_usd) AS total FROM spend WHERE emulated = ? AND month = ?", emulated, scope.keys.month),
    session: scope.sessionId === null ? undefined : sum("SELECT SUM(amount_usd) AS total FROM spend WHERE emulated = ? AND session_id = ?", emulated, scope.sessionId),
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
      id, scope.sessionId, scope.keys.day, scope.keys.month, scope.emulated ? 1 : 0, forecastUsd, forecastUsd, now,
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
