/**
 * The per-session turn lease: one process at a time runs a turn of a session.
 * A holder whose process is gone (same host) or whose lease expired unrefreshed
 * is taken over. The holder is the process the user sees running the turn
 * (src/edges.ts pid): for a turn the daemon runs, its client, whose end ends
 * the turn there too (src/daemon/server.ts), and which another process's
 * "busy" message then names.
 */
import { newId } from "../context/ids.ts";
import { edges } from "../edges.ts";
import { CachetError } from "../errors.ts";
import { hostname, prefetchHostname } from "../hostname.ts";
import { abortableSleep } from "../sleep.ts";
import { sessionNotFound, type StoreCore } from "./core.ts";
import type { KeeperStart } from "./lease-keeper.ts";
import type { LeaseRow } from "./rows.ts";
import { emptyShell } from "./sessions.ts";
import { processAlive } from "../process-alive.ts";

/** Options of {@link Store.acquireTurn}. */
export interface TurnOptions {
  /** How long to wait for another process's turn to finish, ms (default 180,000). */
  waitMs?: number;
  /** Lease lifetime without a refresh, ms (default 15,000); the holder refreshes it every third of that. */
  leaseMs?: number;
  /**
   * How long after the lease is taken its keeper thread starts, ms (default 0: at once; at most a third of
   * `leaseMs`, when the first refresh is due). Starting the thread holds this one for 17–45 ms (measured on a
   * loaded 2-core machine): a caller that sends a request soon after taking the lease passes a delay to keep
   * that off the request's way. The thread starts from a timer, so this thread must not run synchronously
   * for longer than the lease's lifetime before the timer fires.
   */
  keeperDelayMs?: number;
  /** Ends the wait (SIGINT / SIGTERM): acquireTurn rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called once when another process holds the lease, before waiting for it: its pid and host. */
  onBusy?: (holder: { pid: number; host: string }) => void;
}

/** A turn lease's lifetime without a refresh, ms. */
export const DEFAULT_LEASE_MS = 15_000;

// Read from the module's load on, while a run gets to its first lease: taking it then loads no node:os (src/hostname.ts).
prefetchHostname();

/** Takes and releases turn leases. */
export class Leases {
  constructor(private readonly core: StoreCore) {}

  /**
   * Takes the lease (see Store.acquireTurn), waiting while a live holder has it; `whenTaken` runs in the
   * write that takes it, so what it writes is done under the lease and in the same transaction.
   * @returns the release function and what `whenTaken` returned
   */
  async acquire<T>(sessionId: string, options: TurnOptions, whenTaken: () => T): Promise<{ release: () => void; taken: T }> {
    const waitMs = options.waitMs ?? 180_000;
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    const token = newId("t");
    const host = hostname();
    const deadline = Date.now() + waitMs;
    let delay = 5;
    let told = false;
    for (;;) {
      const attempt = this.tryLease(sessionId, token, host, leaseMs, whenTaken);
      if (!attempt.holder) return { release: this.hold(sessionId, token, options), taken: attempt.taken as T };
      const holder = attempt.holder;
      if (!told) options.onBusy?.({ pid: holder.owner_pid, host: holder.host });
      told = true;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CachetError("SESSION_CONFLICT", `session ${sessionId} is busy: process ${holder.owner_pid} on ${holder.host} has been running a turn for over ${Math.round(waitMs / 1000)} s`, {
          hint: "wait for it to finish, or stop that process (a dead process's lease is taken over automatically)",
        });
      }
      await abortableSleep(Math.min(left, delay + Math.random() * delay), options.signal);
      delay = Math.min(delay * 2, 50);
    }
  }

  /**
   * Takes the lease of a session created in the running write: no other process can see it yet, so
   * nobody holds it. Call {@link hold} with the returned token once the write has committed.
   * @param token the fencing token to take it under (a new random one by default)
   * @returns the lease's fencing token
   */
  takeNew(sessionId: string, leaseMs: number, token: string = newId("t")): string {
    this.core.db.query("INSERT INTO turn_leases (session_id, owner_pid, host, token, expires_at) VALUES (?, ?, ?, ?, ?)").run(sessionId, edges().pid, hostname(), token, Date.now() + leaseMs);
    return token;
  }

  /**
   * Holds a lease just taken under `token`: writes to the session check it from now on, and it is refreshed
   * in the background until released.
   * @returns the release function (calling it twice is harmless)
   */
  hold(sessionId: string, token: string, options: TurnOptions): () => void {
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.core.fences.set(sessionId, token);
    const stop = this.keepFresh(sessionId, token, leaseMs, options.keeperDelayMs ?? 0);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      stop();
      if (this.core.fences.get(sessionId) === token) this.core.fences.delete(sessionId);
      try {
        this.core.write(() => this.core.db.query("DELETE FROM turn_leases WHERE session_id = ? AND token = ?").run(sessionId, token));
      } catch {
        // A store that refuses writes (disk full, read-only) must not mask the turn's own error: the lease of
        // a process that has ended is taken over at once, and expires anyway.
      }
    };
  }

  /**
   * Refreshes the lease every third of its lifetime from a worker thread (lease-keeper.ts), which long
   * synchronous work here cannot starve; an in-memory store (tests) refreshes from a timer instead.
   * The thread starts `delayMs` after the lease is taken, at most a third of its lifetime (TurnOptions.keeperDelayMs).
   * @returns stops the refreshing
   */
  private keepFresh(sessionId: string, token: string, leaseMs: number, delayMs: number): () => void {
    const intervalMs = Math.max(10, Math.floor(leaseMs / 3));
    let timer: ReturnType<typeof setInterval> | undefined;
    const fallback = () => {
      timer ??= setInterval(() => {
        try {
          this.core.db.query("UPDATE turn_leases SET expires_at = ? WHERE session_id = ? AND token = ?").run(Date.now() + leaseMs, sessionId, token);
        } catch {
          // A busy database: the next tick retries, and the lease outlives two missed ticks.
        }
      }, intervalMs);
      timer.unref();
    };
    let keeper: Worker | undefined;
    let start: ReturnType<typeof setTimeout> | undefined;
    if (this.core.path !== ":memory:") {
      const path = this.core.path;
      const startKeeper = () => {
        keeper = new Worker(keeperUrl());
        keeper.unref();
        // A worker that cannot start (it never should) leaves the timer: starvable, but refreshed.
        keeper.onerror = fallback;
        keeper.postMessage({ path, sessionId, token, leaseMs, intervalMs } satisfies KeeperStart);
      };
      if (delayMs > 0) {
        start = setTimeout(startKeeper, Math.min(delayMs, intervalMs));
        start.unref();
      } else {
        startKeeper();
      }
    } else {
      fallback();
    }
    return () => {
      clearTimeout(start);
      keeper?.terminate();
      clearInterval(timer);
    };
  }

  /**
   * The shells ({@link emptyShell}) of new sessions and forks whose lease is abandoned: their first turn's process ended
   * before it stored anything, and it did not remove them.
   * @returns their ids
   */
  abandonedShells(): string[] {
    // CROSS JOIN keeps turn_leases (a row per turn under way, or left by an ended one) the outer loop: planned the
    // other way round, the shell test ran for every session (7 ms a turn with 10,000 sessions).
    const rows = this.core.db.query(`SELECT l.* FROM turn_leases l CROSS JOIN sessions s ON s.id = l.session_id WHERE ${emptyShell("s")}`).all() as LeaseRow[];
    const now = Date.now();
    const host = hostname();
    return rows.filter((row) => abandoned(row, host, now)).map((row) => row.session_id);
  }

  /** Whether no turn holds the session: it has no lease, or one free to take over (expired, or its holder gone). */
  unheld(sessionId: string): boolean {
    const lease = this.core.db.query("SELECT * FROM turn_leases WHERE session_id = ?").get(sessionId) as LeaseRow | null;
    return lease === null || abandoned(lease, hostname(), Date.now());
  }

  private tryLease<T>(sessionId: string, token: string, host: string, leaseMs: number, whenTaken: () => T): { holder: LeaseRow | null; taken?: T } {
    try {
      return this.core.write(() => {
        const now = Date.now();
        const holder = this.core.db.query("SELECT * FROM turn_leases WHERE session_id = ?").get(sessionId) as LeaseRow | null;
        if (holder && !abandoned(holder, host, now)) return { holder };
        this.core.db
          .query("INSERT OR REPLACE INTO turn_leases (session_id, owner_pid, host, token, expires_at) VALUES (?, ?, ?, ?, ?)")
          .run(sessionId, edges().pid, host, token, now + leaseMs);
        return { holder: null, taken: whenTaken() };
      });
    } catch (error) {
      // busy_timeout already waited; treat a still-busy database as "held" and poll again.
      if ((error as { code?: string }).code === "SQLITE_BUSY") return { holder: { session_id: sessionId, owner_pid: 0, host: "(busy database)", token: "", expires_at: 0 } };
      // The lease row's foreign key is the check that the session exists: no statement of its own before the request.
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_FOREIGNKEY") throw sessionNotFound(sessionId);
      throw error;
    }
  }
}

/**
 * Where lease-keeper.ts is: beside this file when run from source; in a
 * compiled binary, at its path under the embedded root (the common folder of
 * the build's entry points, src/), since this code may sit in a chunk elsewhere.
 */
function keeperUrl(): string {
  const here = import.meta.url;
  const embedded = /^(.*?(?:\$bunfs|~BUN)\/root\/)/.exec(here);
  return embedded ? `${embedded[1]}session/lease-keeper.ts` : new URL("./lease-keeper.ts", here).href;
}

/** Whether a lease is free to take over: expired unrefreshed, or its holder's process (on this host) is gone. */
function abandoned(lease: LeaseRow, host: string, now: number): boolean {
  return lease.expires_at <= now || (lease.host === host && !processAlive(lease.owner_pid));
}
