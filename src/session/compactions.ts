/**
 * Compactions of a session and the content-addressed summaries they used
 * (shared/compaction.md, "Persistence and resume"). The summary zone itself
 * (the exact Z1 strings) is the session's summary state (prefixes.ts); these
 * rows say when and how it changed, for `cachet why`, stats and resume, and
 * let a replay or a fork reuse a summary instead of asking for it again.
 */
import type { StoreCore } from "./core.ts";

/** Schema of the compaction tables (appended to the store's migrations). */
export const COMPACTION_MIGRATION = `
  CREATE TABLE compactions (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_at      INTEGER NOT NULL,
    reason          TEXT NOT NULL,
    first_collapsed TEXT NOT NULL,
    last_collapsed  TEXT NOT NULL,
    first_kept      TEXT,
    summary_key     TEXT NOT NULL,
    summary_source  TEXT NOT NULL,
    summary_request TEXT,
    render_version  INTEGER NOT NULL,
    tokens_before   INTEGER NOT NULL,
    tokens_after    INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX compactions_session ON compactions(session_id, created_at);
  CREATE TABLE summary_texts (
    key        TEXT PRIMARY KEY,
    text       TEXT NOT NULL,
    model      TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
`;

/** One compaction of a session. */
export interface CompactionRecord {
  id: string;
  sessionId: string;
  /** Unix epoch ms. */
  createdAt: number;
  /** What triggered it: `threshold`, `on demand` (`cachet compact`), `too long` (recovery after the provider's refusal). */
  reason: string;
  /** Ids of the first and last log messages the summary zone took over. */
  firstCollapsed: string;
  lastCollapsed: string;
  /** Id of the first message of the kept tail (null when nothing was kept). */
  firstKept: string | null;
  /** Content key of the summary entry appended to Z1. */
  summaryKey: string;
  /** Where the entry came from: `extractive` (no call), `summary` (a model call), `stored` (content key hit), `fallback` (a call whose answer was rejected). */
  summarySource: "extractive" | "summary" | "stored" | "fallback";
  /** Ledger id of the summary call, if one was made. */
  summaryRequest: string | null;
  renderVersion: number;
  /** Calibrated wire estimates of the next request before and after, tokens. */
  tokensBefore: number;
  tokensAfter: number;
}

interface CompactionRow {
  id: string;
  session_id: string;
  created_at: number;
  reason: string;
  first_collapsed: string;
  last_collapsed: string;
  first_kept: string | null;
  summary_key: string;
  summary_source: CompactionRecord["summarySource"];
  summary_request: string | null;
  render_version: number;
  tokens_before: number;
  tokens_after: number;
}

/** Compaction rows and summary texts. Writes must run inside {@link StoreCore.write}. */
export class CompactionTable {
  constructor(private readonly core: StoreCore) {}

  record(c: CompactionRecord): void {
    this.core.touch(c.sessionId);
    this.core.db
      .query(
        "INSERT INTO compactions (id, session_id, created_at, reason, first_collapsed, last_collapsed, first_kept, summary_key, summary_source, summary_request, render_version, tokens_before, tokens_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(c.id, c.sessionId, c.createdAt, c.reason, c.firstCollapsed, c.lastCollapsed, c.firstKept, c.summaryKey, c.summarySource, c.summaryRequest, c.renderVersion, c.tokensBefore, c.tokensAfter);
  }

  list(sessionId: string): CompactionRecord[] {
    return (this.core.db.query("SELECT * FROM compactions WHERE session_id = ? ORDER BY created_at, id").all(sessionId) as CompactionRow[]).map(toRecord);
  }

  summaryText(key: string): string | null {
    const row = this.core.db.query("SELECT text FROM summary_texts WHERE key = ?").get(key) as { text: string } | null;
    return row?.text ?? null;
  }

  saveSummaryText(key: string, text: string, model: string): void {
    this.core.db.query("INSERT OR IGNORE INTO summary_texts (key, text, model, created_at) VALUES (?, ?, ?, ?)").run(key, text, model, Date.now());
  }
}

function toRecord(row: CompactionRow): CompactionRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    createdAt: row.created_at,
    reason: row.reason,
    firstCollapsed: row.first_collapsed,
    lastCollapsed: row.last_collapsed,
    firstKept: row.first_kept,
    summaryKey: row.summary_key,
    summarySource: row.summary_source,
    summaryRequest: row.summary_request,
    renderVersion: row.render_version,
    tokensBefore: row.tokens_before,
    tokensAfter: row.tokens_after,
  };
}
