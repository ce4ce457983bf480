/**
 * A worker thread that keeps one turn lease fresh (see leases.ts). It has its
 * own SQLite connection and its own event loop, so long synchronous work on
 * the main thread (decoding 100 MB of stdin took 13 s of a 15 s lease) cannot
 * starve the refresh and let another process take a live turn over.
 *
 * Message in: {@link KeeperStart}. It refreshes every `intervalMs` until the
 * main thread terminates it; a busy or failing write is retried on the next tick.
 */
import { Database } from "bun:sqlite";

/** What the main thread sends once, right after starting the worker. */
export interface KeeperStart {
  path: string;
  sessionId: string;
  /** The lease's fencing token: only that row is refreshed. */
  token: string;
  /** Lease lifetime without a refresh, ms. */
  leaseMs: number;
  /** Time between refreshes, ms. */
  intervalMs: number;
}

declare const self: Worker;

self.onmessage = (event: MessageEvent<KeeperStart>) => {
  const { path, sessionId, token, leaseMs, intervalMs } = event.data;
  const db = new Database(path);
  db.exec("PRAGMA busy_timeout = 2000");
  const refresh = db.query("UPDATE turn_leases SET expires_at = ? WHERE session_id = ? AND token = ?");
  setInterval(() => {
    try {
      refresh.run(Date.now() + leaseMs, sessionId, token);
    } catch {
      // A busy database: the next tick retries, and the lease outlives two missed ticks.
    }
  }, intervalMs);
};
