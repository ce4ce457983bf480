/**
 * Ledger statistics at scale (run: `bun test/bench/stats.ts`, or with every
 * bench by `npm run bench`). Prints medians and ratios.
 *
 * A store with 1,000,000 ledger rows over 1,000 sessions and 90 days
 * (session sizes Zipf-distributed, as real use is: the largest session holds
 * about 134,000 requests), written as the turn pipeline records them (with
 * their per-request figures). Measured in the same run on the same file:
 * - `cachet stats --by session|model|role|day` (the compiled binary, a new
 *   process each time, as a user runs it) against the equivalent
 *   hand-written SQLite aggregate query (bun:sqlite, rows fetched);
 * - `cachet cost LARGEST` against the hand-written query listing that
 *   session's requests with their costs and its totals;
 * - what a call under a spending limit reads before it is sent (src/budget:
 *   the spend of the day, the month and the largest session, on the last day
 *   of the ledger, whose month holds about a third of its rows), in process,
 *   against the hand-written sums over cachet's own requests of those periods.
 * Ratios (test/bench/ratios.ts): cachet over the hand-written query, target ≤ 3 each.
 */
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { calendarPeriods } from "../../src/budget/periods.ts";
import { spendTotals } from "../../src/budget/spend-counter.ts";
import { openStore } from "../../src/session/store.ts";
import { ratio } from "./ratios.ts";

const ROOT = join(import.meta.dir, "..", "..");
// CACHET_BENCH_BINARY: measure another build (e.g. a copy, so rebuilding the worktree does not disturb a run).
const BINARY = process.env.CACHET_BENCH_BINARY ?? join(ROOT, "dist", "cachet");
const ROWS = 1_000_000;
const SESSIONS = 1_000;
const DAYS = 90;
const SAMPLES = 3;
/** The ledger ends here (Unix epoch ms). */
const END = Date.UTC(2026, 10, 1);
const TARGET = 3;
const SUMS = `COUNT(*), SUM(input), SUM(cache_read), SUM(cache_write_5m), SUM(cache_write_1h), SUM(output), SUM(reasoning), SUM(cacheable_max),
  SUM(cost_pico), COUNT(*) - COUNT(cost_pico), SUM(no_cache_pico - cost_pico), SUM(CASE WHEN finished_at > first_token_at THEN output END),
  SUM(CASE WHEN finished_at > first_token_at THEN finished_at - first_token_at END)`;

if (!existsSync(BINARY)) {
  console.log(`stats bench: ${BINARY} is missing (run \`npm run build:host\`)`);
  process.exit(1);
}

// CACHET_BENCH_STORE=DIR keeps (or reuses) the populated store in DIR, to profile without writing it again.
const kept = process.env.CACHET_BENCH_STORE;
const home = kept ?? mkdtempSync(join(tmpdir(), "cachet-bench-stats-"));
const file = join(home, "cachet.db");
try {
  const largest = kept && existsSync(file) ? { id: "s_bench00000", requests: largestSize() } : populate();
  const db = new Database(file, { readonly: true });
  const results: Array<{ name: string; what: string; cachet: number; sql: number }> = [];
  for (const by of ["session", "model", "role", "day"] as const) {
    results.push({ name: `stats.by_${by}_vs_sql`, what: `stats --by ${by}`, cachet: medianMs(() => cachet(["stats", "--by", by])), sql: medianMs(() => statsQuery(db, by)) });
  }
  results.push({ name: "stats.cost_largest_vs_sql", what: `cost (largest session, ${largest.requests} requests)`, cachet: medianMs(() => cachet(["cost", largest.id])), sql: medianMs(() => costQuery(db, largest.id)) });
  const periods = calendarPeriods(END - 1, "UTC");
  const store = openStore(file, { readonly: true });
  results.push({
    name: "stats.budget_spend_vs_sql",
    what: "budget spend (day, month, largest session)",
    cachet: medianMs(() => {
      // Each total is read when asked for: ask for all three, as a run under all three limits does.
      const totals = spendTotals(store, { sessionId: largest.id, periods, emulated: false });
      return totals.day + totals.month + totals.session!;
    }),
    sql: medianMs(() => spendQuery(db, largest.id, periods)),
  });
  store.close();
  db.close();

  for (const r of results) console.log(`${r.what.padEnd(44)} cachet ${r.cachet.toFixed(1).padStart(7)} ms   hand-written SQL ${r.sql.toFixed(1).padStart(7)} ms`);
  for (const r of results) ratio(r.name, r.cachet / r.sql, TARGET);
} finally {
  if (!kept) rmSync(home, { recursive: true, force: true });
}

function largestSize(): number {
  const db = new Database(file, { readonly: true });
  const { n } = db.query("SELECT COUNT(*) AS n FROM requests WHERE session_id = 's_bench00000'").get() as { n: number };
  db.close();
  return n;
}

/** Writes the store; returns the largest session. */
function populate(): { id: string; requests: number } {
  const started = performance.now();
  openStore(file).close(); // the schema, migrated as cachet does
  const db = new Database(file);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF");
  const weights = Array.from({ length: SESSIONS }, (_, k) => 1 / (k + 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const sizes = weights.map((w) => Math.floor((w / sum) * ROWS));
  sizes[0]! += ROWS - sizes.reduce((a, b) => a + b, 0);
  const end = END;
  const span = DAYS * 86_400_000;
  const models = [["anthropic", "claude-sonnet-4-6", "anthropic-messages", 3, 15, 0.3, 3.75], ["openai", "gpt-5", "openai-responses", 1.25, 10, 0.125, 0], ["google", "gemini-2.5-flash", "gemini", 0.3, 2.5, 0.03, 0]] as const;
  const roles = ["main", "main", "main", "subagent", "title", "compaction"];
  const session = db.query("INSERT INTO sessions (id, model, affinity_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)");
  // As cachet records runs without a spending limit: each priced row counts toward the real spend (spend_emulated 0).
  const request = db.query(
    `INSERT INTO requests (id, session_id, prefix_version, role, provider, model, protocol, started_at, first_token_at, finished_at,
       input, cache_read, cache_write_5m, cache_write_1h, output, reasoning, cost_usd, cache_mode, cache_ttl, chain_tail, cacheable_max, status,
       cost_pico, no_cache_pico, figured, spend_emulated)
     VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 0, ?, 'auto', '5m', '[]', ?, 'ok', ?, ?, 1, 0)`,
  );
  let n = 0;
  let seed = 42;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let s = 0; s < SESSIONS; s++) {
    const id = `s_bench${String(s).padStart(5, "0")}`;
    const [provider, model, protocol, pin, pout, pread, pwrite] = models[s % models.length]!;
    const first = end - span + Math.floor(random() * span * 0.5);
    const size = sizes[s]!;
    const step = Math.max(1, Math.floor((end - first) / size));
    db.transaction(() => {
      session.run(id, `${provider}/${model}`, id, first, first + size * step);
      for (let i = 0; i < size; i++) {
        const input = 50 + Math.floor(random() * 500);
        const read = i === 0 ? 0 : 2_000 + Math.floor(random() * 20_000);
        const write = Math.floor(random() * 800);
        const output = 20 + Math.floor(random() * 600);
        const pico = Math.round((input * pin + read * pread + write * (pwrite || pin) + output * pout) * 1e6);
        const noCache = Math.round(((input + read + write) * pin + output * pout) * 1e6);
        const at = first + i * step;
        request.run(`r_b${(n++).toString(36)}`, id, roles[i % roles.length]!, provider, model, protocol, at, at + 300, at + 2_300, input, read, write, output, pico / 1e12, read, pico, noCache);
      }
    })();
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  console.log(`wrote ${ROWS.toLocaleString("en-US")} ledger rows over ${SESSIONS} sessions and ${DAYS} days in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { id: "s_bench00000", requests: sizes[0]! };
}

function cachet(args: string[]): void {
  const r = Bun.spawnSync([BINARY, ...args], { env: { ...process.env, CACHET_HOME: home, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`cachet ${args.join(" ")} failed: ${r.stderr.toString()}`);
}

/** The aggregate a person would write by hand for `cachet stats --by`, over cachet's own sessions. */
function statsQuery(db: Database, by: "session" | "model" | "role" | "day"): void {
  const key = { session: "r.session_id", model: "r.provider || '/' || r.model", role: "r.role", day: "date(r.started_at / 1000, 'unixepoch')" }[by];
  db.query(`SELECT ${key}, ${SUMS.replaceAll(/\b(input|cache_read|cache_write_5m|cache_write_1h|output|reasoning|cacheable_max|cost_pico|no_cache_pico|finished_at|first_token_at)\b/g, "r.$1")}
            FROM requests r JOIN sessions s ON s.id = r.session_id WHERE s.source = 'own' GROUP BY 1`).all();
}

/** The session's requests with their costs, and its totals: what `cachet cost SESSION` prints. */
function costQuery(db: Database, sessionId: string): void {
  db.query("SELECT id, role, provider, model, cost_usd, input, cache_read, cache_write_5m + cache_write_1h, output FROM requests WHERE session_id = ? ORDER BY started_at").all(sessionId);
  db.query(`SELECT ${SUMS} FROM requests WHERE session_id = ?`).all(sessionId);
}

/** The sums a person would write for a budget: cachet's own requests of the day, of the month, and of the session. */
function spendQuery(db: Database, sessionId: string, periods: ReturnType<typeof calendarPeriods>): void {
  const own = "SELECT TOTAL(r.cost_usd) FROM requests r JOIN sessions s ON s.id = r.session_id WHERE s.source = 'own' AND r.started_at >= ? AND r.started_at < ?";
  db.query(own).get(periods.day.startMs, periods.day.endMs);
  db.query(own).get(periods.month.startMs, periods.month.endMs);
  db.query("SELECT TOTAL(cost_usd) FROM requests WHERE session_id = ?").get(sessionId);
}

function medianMs(run: () => unknown): number {
  run(); // warm the page cache
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t = performance.now();
    run();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(SAMPLES / 2)]!;
}
