import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS } from "../session/schema.ts";
import { openStore } from "../session/store.ts";
import { LEDGER_SPEND_MIGRATION } from "./ledger-spend.ts";
import { calendarPeriods } from "./periods.ts";
import { spendTotals } from "./spend-counter.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-ledger-spend-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("upgrading a store: each priced row of cachet's own counts once, from the ledger or through the reservation that took its cost", () => {
  const path = join(dir, "cachet.db");
  const old = new Database(path);
  const before = MIGRATIONS.indexOf(LEDGER_SPEND_MIGRATION);
  for (const migration of MIGRATIONS.slice(0, before)) old.exec(migration);
  old.exec(`PRAGMA user_version = ${before}`);
  const at = Date.UTC(2026, 10, 30, 12);
  const session = old.query("INSERT INTO sessions (id, model, affinity_key, created_at, updated_at, source) VALUES (?, 'acme/model', ?, ?, ?, ?)");
  session.run("s_limited", "s_limited", at, at, "own");
  session.run("s_free", "s_free", at, at, "own");
  session.run("s_proxied", "s_proxied", at, at, "recorded");
  const request = old.query(
    "INSERT INTO requests (id, session_id, prefix_version, role, provider, model, protocol, started_at, cost_usd, cache_mode, cache_ttl, chain_tail, status) VALUES (?, ?, 1, 'main', 'acme', 'model', 'anthropic-messages', ?, ?, 'auto', '5m', '[]', 'ok')",
  );
  // s_limited: two turns of the same cost, the first under a limit (its reservation settled to that cost), and a
  // row no reservation holds (a provider's extra pass); one unpriced row, its reservation kept at the forecast.
  request.run("r_1", "s_limited", at, 0.01);
  request.run("r_2", "s_limited", at + 1, 0.01);
  request.run("r_3", "s_limited", at + 2, 0.005);
  request.run("r_4", "s_limited", at + 3, null);
  request.run("r_5", "s_free", at, 0.002);
  request.run("r_6", "s_proxied", at, 0.3);
  const spend = old.query("INSERT INTO spend (id, session_id, day, month, emulated, amount_usd, forecast_usd, state, created_at) VALUES (?, 's_limited', '2026-11-30', '2026-11', 0, ?, ?, 'settled', ?)");
  spend.run("b_1", 0.01, 0.02, at);
  spend.run("b_2", 0.04, 0.04, at + 3);
  old.close();

  const store = openStore(path);
  const rows = store.database.query("SELECT id, spend_emulated FROM requests ORDER BY id").all();
  expect(rows).toEqual([
    { id: "r_1", spend_emulated: null },
    { id: "r_2", spend_emulated: 0 },
    { id: "r_3", spend_emulated: 0 },
    { id: "r_4", spend_emulated: null },
    { id: "r_5", spend_emulated: 0 },
    { id: "r_6", spend_emulated: null },
  ]);
  const periods = calendarPeriods(at, "UTC");
  const totals = spendTotals(store, { sessionId: "s_limited", periods, emulated: false });
  expect(totals.session).toBeCloseTo(0.01 + 0.04 + 0.01 + 0.005, 12);
  expect(totals.day).toBeCloseTo(0.01 + 0.04 + 0.01 + 0.005 + 0.002, 12);
  // Each sum reads one covering index: a period's entries, or a session's.
  const plan = (sql: string, ...params: (string | number)[]) => (store.database.query(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((p) => p.detail);
  expect(plan("SELECT TOTAL(cost_usd) FROM requests WHERE spend_emulated = ? AND started_at >= ? AND started_at < ?", 0, 0, 1)).toEqual([
    "SEARCH requests USING COVERING INDEX requests_spend (spend_emulated=? AND started_at>? AND started_at<?)",
  ]);
  expect(plan("SELECT TOTAL(cost_usd) FROM requests WHERE session_id = ? AND spend_emulated = ?", "s_free", 0)).toEqual([
    "SEARCH requests USING COVERING INDEX requests_session_spend (session_id=? AND spend_emulated=?)",
  ]);
  store.close();
});
