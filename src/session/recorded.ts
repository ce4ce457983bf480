/**
 * Storage of the sessions `cachet proxy` records: other clients' traffic,
 * kept apart from cachet's own sessions (`sessions.source = 'recorded'`).
 * Their ledger rows are ordinary rows (written with Store.recordRequest), so
 * `cost`, `stats` and `why` read them like any other; what a ledger row does
 * not hold (HTTP status, path, client, hashes and, with --keep-bodies, the
 * bodies) is in `recorded_exchanges`, one row per ledger row.
 *
 * A recorded session has no stable prefix and no log: only its requests.
 */
import type { Database } from "bun:sqlite";
import type { Store } from "./store.ts";

/** Where a session came from. */
export type SessionSource = "own" | "recorded";

/** What the store keeps of one proxied exchange besides its ledger row. */
export interface RecordedExchange {
  /** The ledger row's id. */
  requestId: string;
  /** HTTP status the upstream answered; null when no answer came (connection failed). */
  httpStatus: number | null;
  /** Request path without credentials in the query. */
  path: string;
  /** The client's user-agent. */
  client: string | null;
  /** How the session was found: affinity-key, header, log or new. */
  sessionVia: string;
  /** The provider's request or response id. */
  providerRequestId: string | null;
  /** Content hash of the request body bytes. */
  requestHash: string;
  /** Content hash of the response body bytes as sent to the client; null when none came. */
  responseHash: string | null;
  /** Bodies, only with --keep-bodies, with credentials cut out. */
  requestBody: string | null;
  responseBody: Uint8Array | null;
}

/** A recorded session as `sessions --recorded` and `stats --by client` read it. */
export interface RecordedSessionInfo {
  id: string;
  client: string | null;
  affinityKey: string;
}

/**
 * Reads and writes recorded sessions through the store's connection (so its
 * writes join `Store.transaction`). Closing the store closes it.
 */
export class RecordedStore {
  private readonly db: Database;

  constructor(store: Store) {
    this.db = store.database;
  }

  /**
   * Creates a recorded session with the given id (from `newId("s")`).
   * @param affinityKey the client's key, or undefined to use the session id
   */
  createSession(id: string, options: { model: string; affinityKey: string | undefined; client: string | null; now: number }): void {
    this.db
      .query("INSERT INTO sessions (id, name, model, affinity_key, created_at, updated_at, source, client) VALUES (?, NULL, ?, ?, ?, ?, 'recorded', ?)")
      .run(id, options.model, options.affinityKey ?? id, options.now, options.now, options.client);
  }

  /**
   * Stores an exchange (its ledger row must be stored already). Call inside
   * `Store.transaction` to commit many at once.
   */
  saveExchange(exchange: RecordedExchange): void {
    const e = exchange;
    this.db
      .query(
        "INSERT OR REPLACE INTO recorded_exchanges (request_id, http_status, path, client, session_via, provider_request_id, request_hash, response_hash, request_body, response_body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(e.requestId, e.httpStatus, e.path, e.client, e.sessionVia, e.providerRequestId, e.requestHash, e.responseHash, e.requestBody, e.responseBody);
  }

  /** Moves a session's update time (Unix epoch ms, never backwards) and records the `provider/model` of its latest request. */
  touchSession(id: string, model: string, at: number): void {
    this.db.query("UPDATE sessions SET updated_at = MAX(updated_at, ?), model = ?, rev = rev + 1 WHERE id = ?").run(at, model, id);
  }

  /** The exchange stored for a ledger row, or null. */
  exchange(requestId: string): RecordedExchange | null {
    const row = this.db.query("SELECT * FROM recorded_exchanges WHERE request_id = ?").get(requestId) as Record<string, unknown> | null;
    if (!row) return null;
    return {
      requestId: row.request_id as string,
      httpStatus: row.http_status as number | null,
      path: row.path as string,
      client: row.client as string | null,
      sessionVia: row.session_via as string,
      providerRequestId: row.provider_request_id as string | null,
      requestHash: row.request_hash as string,
      responseHash: row.response_hash as string | null,
      requestBody: row.request_body === null ? null : String(row.request_body),
      responseBody: row.response_body === null ? null : new Uint8Array(row.response_body as Uint8Array),
    };
  }

  /** Recorded sessions, most recently updated first (at most `limit` of them). */
  sessions(limit = -1): RecordedSessionInfo[] {
    return (
      this.db.query("SELECT id, client, affinity_key FROM sessions WHERE source = 'recorded' ORDER BY updated_at DESC, rowid DESC LIMIT ?").all(limit) as { id: string; client: string | null; affinity_key: string }[]
    ).map((r) => ({ id: r.id, client: r.client, affinityKey: r.affinity_key }));
  }

  /** The source of every session, by id. */
  sources(): Map<string, SessionSource> {
    const rows = this.db.query("SELECT id, source FROM sessions").all() as { id: string; source: SessionSource }[];
    return new Map(rows.map((r) => [r.id, r.source]));
  }
}
