import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS } from "../session/schema.ts";
import { openStore } from "../session/store.ts";
import { LEDGER_SPEND_MIGRATION, PICO_SPEND_MIGRATION } from "./ledger-spend.ts";
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
  expect(plan("SELECT SUM(cost_pico) FROM requests WHERE spend_emulated = ? AND started_at >= ? AND started_at < ?", 0, 0, 1)).toEqual([
    "SEARCH requests USING COVERING INDEX requests_spend (spend_emulated=? AND started_at>? AND started_at<?)",
  ]);
  expect(plan("SELECT SUM(cost_pico) FROM requests WHERE session_id = ? AND spend_emulated = ?", "s_free", 0)).toEqual([
    "SEARCH requests USING COVERING INDEX requests_session_spend (session_id=? AND spend_emulated=?)",
  ]);
  store.close();
});

test("upgrading a store whose spend indexes cover cost_usd: the same rows, each counted at its exact cost in pico-USD (the float sum drifts), through the rebuilt covering indexes", () => {
  const path = join(dir, "pico.db");
  const old = new Database(path);
  const before = MIGRATIONS.indexOf(PICO_SPEND_MIGRATION);
  expect(before).toBe(MIGRATIONS.length - 1);
  for (const migration of MIGRATIONS.slice(0, before)) old.exec(migration);
  old.exec(`PRAGMA user_version = ${before}`);
  const at = Date.UTC(2026, 10, 30, 12);
  const session = old.query("INSERT INTO sessions (id, model, affinity_key, created_at, updated_at) VALUES (?, 'acme/model', ?, ?, ?)");
  session.run("s_a", "s_a", at, at);
  session.run("s_b", "s_b", at, at);
  // Rows as the previous cachet wrote them: cost_usd and its cost_pico (r_4 from a store that lost it), spend 0 real, 1 emulated.
  const request = old.query(
    `INSERT INTO requests (id, session_id, prefix_version, role, provider, model, protocol, started_at, cost_usd, cost_pico, cache_mode, cache_ttl, chain_tail, status, figured, spend_emulated)
     VALUES (?, ?, 1, 'main', 'acme', 'model', 'anthropic-messages', ?, ?, ?, 'auto', '5m', '[]', 'ok', 1, ?)`,
  );
  // Three costs whose float sum is 0.18868141972799998, their exact sum 0.188681419728.
  const picos = [81019559543, 21877717076, 85784143109];
  picos.forEach((pico, i) => request.run(`r_${i + 1}`, "s_a", at + i, pico / 1e12, pico, 0));
  request.run("r_4", "s_b", at + 3, 0.25, null, 0);
  request.run("r_5", "s_b", at + 4, 0.125, 125_000_000_000, 1);
  request.run("r_6", "s_b", at + 5, null, null, null);
  const floatSum = (old.query("SELECT TOTAL(cost_usd) AS total FROM requests WHERE session_id = 's_a'").get() as { total: number }).total;
  expect(floatSum).toBe(0.18868141972799998);
  const rowsBefore = old.query("SELECT * FROM requests ORDER BY id").all() as Record<string, unknown>[];
  old.close();

  const store = openStore(path);
  const db = store.database;
  expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(MIGRATIONS.length);
  // Every row kept as it was; only r_4 gained the cost_pico its cost_usd gives.
  expect(db.query("SELECT * FROM requests ORDER BY id").all()).toEqual(rowsBefore.map((row) => (row.id === "r_4" ? { ...row, cost_pico: 250_000_000_000 } : row)));
  const periods = calendarPeriods(at, "UTC");
  const a = spendTotals(store, { sessionId: "s_a", periods, emulated: false });
  expect(a.session).toBe(0.188681419728);
  expect(a.day).toBe(0.438681419728);
  expect(spendTotals(store, { sessionId: "s_b", periods, emulated: true }).session).toBe(0.125);
  const plan = (sql: string, ...params: (string | number)[]) => (db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((p) => p.detail);
  expect(plan("SELECT SUM(cost_pico) FROM requests WHERE spend_emulated = ? AND started_at >= ? AND started_at < ?", 0, 0, 1)).toEqual([
    "SEARCH requests USING COVERING INDEX requests_spend (spend_emulated=? AND started_at>? AND started_at<?)",
  ]);
  expect(plan("SELECT SUM(cost_pico) FROM requests WHERE session_id = ? AND spend_emulated = ?", "s_a", 0)).toEqual([
    "SEARCH requests USING COVERING INDEX requests_session_spend (session_id=? AND spend_emulated=?)",
  ]);
  const indexes = db.query("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'requests_%spend' ORDER BY name").all();
  expect(indexes).toEqual([
    { name: "requests_session_spend", sql: "CREATE INDEX requests_session_spend ON requests(session_id, spend_emulated, cost_pico) WHERE spend_emulated IS NOT NULL" },
    { name: "requests_spend", sql: "CREATE INDEX requests_spend ON requests(spend_emulated, started_at, cost_pico) WHERE spend_emulated IS NOT NULL" },
  ]);
  store.close();
});
