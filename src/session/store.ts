/**
 * The session store: one SQLite database (bun:sqlite, WAL) holding sessions,
 * their stable prefix versions, the append-only log, summary state, the
 * ledger, the token memo and the per-session turn lease.
 *
 * Every write is a short `BEGIN IMMEDIATE` transaction, so concurrent
 * processes queue on SQLite's write lock (bounded by `busy_timeout`) instead
 * of failing with SQLITE_BUSY. A whole turn (load, call the provider, append)
 * is serialized per session by {@link Store.acquireTurn}.
 */
import type { Database } from "bun:sqlite";
import { hostname } from "node:os";
import type { Block, Message, StablePrefix, SummaryState } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { storeFile } from "../paths.ts";
import { abortableSleep } from "../sleep.ts";
import { type ChainBase, decodeChain, encodeChain } from "./chain-delta.ts";
import { newId } from "../context/ids.ts";
import { openDatabase, type OpenOptions } from "./database.ts";
import { LEDGER_COLUMNS, ledgerValues, toEntry, toLedgerRow, toPrefixVersion, toSession, type LeaseRow, type MessageRow, type PrefixRow, type RequestRow, type SessionRow } from "./rows.ts";
import type { ChainLink, LedgerRow, LoadedSession, PrefixVersion, SessionRecord } from "./types.ts";
import { LedgerFigures } from "./ledger-figures.ts";

/** Options of {@link Store.createSession}. */
export interface NewSession {
  /** `provider/model`. */
  model: string;
  /** Unique name (`--session NAME`); SESSION_CONFLICT when taken. */
  name?: string | null;
  /** Parent of a fork. */
  parentId?: string | null;
  /**
   * Message id in the parent's log after which the fork branches. Omitted (undefined)
   * means the parent's newest message, i.e. a fork of the parent as it is now;
   * null means before the first message.
   */
  forkPoint?: string | null;
  /** Defaults to the new session's id. An exact fork passes the parent's. */
  affinityKey?: string;
}

/** A log message with where it is stored: the owning session (a fork's parent for shared messages) and its sequence number there. */
export interface LogEntry {
  sessionId: string;
  /** Per-session sequence number, 1-based, contiguous. */
  seq: number;
  /** Unix epoch ms when the message was appended. */
  createdAt: number;
  message: Message;
}

/** Fields of a ledger row that {@link Store.updateRequest} may change (the chain is immutable: later rows are stored as deltas of it). */
export type LedgerPatch = Partial<Omit<LedgerRow, "id" | "sessionId" | "chain">>;

/** Filter of {@link Store.ledger}. */
export interface LedgerFilter {
  sessionId?: string;
  /** Only requests started at or after this Unix epoch ms. */
  since?: number;
}

/** Options of {@link Store.acquireTurn}. */
export interface TurnOptions {
  /** How long to wait for another process's turn to finish, ms (default 180,000). */
  waitMs?: number;
  /** Lease lifetime without a refresh, ms (default 15,000); the holder refreshes it every third of that. */
  leaseMs?: number;
  /** Ends the wait (SIGINT / SIGTERM): acquireTurn rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Opens (creating directories and the database as needed) and migrates the store.
 * With `readonly` (the read commands: sessions, cost, why, stats, export) nothing
 * is created or changed, a missing store reads as empty, and a read-only state
 * directory works; every write method then fails with STORE.
 * @param path database file; defaults to {@link storeFile} (`CACHET_HOME` or the XDG data directory)
 * @throws CachetError STORE when the file is not a usable SQLite store (it is never deleted or rewritten)
 */
export function openStore(path: string = storeFile(), options: OpenOptions = {}): Store {
  return new Store(path, options);
}

/** The session store. One instance per process is enough; it caches prepared statements and what it has loaded. */
export class Store {
  /** Path of the database file. */
  readonly path: string;
  /** True when opened with `readonly` (every write fails with STORE). */
  readonly readonly: boolean;
  private readonly db: Database;
  private readonly segmentCache = new Map<string, Segment[]>();
  private readonly logCache = new Map<string, CachedLog>();
  private readonly prefixCache = new Map<string, PrefixVersion>();
  private readonly tokenMemo = new Map<string, number>();
  private readonly lastChains = new Map<string, ChainBase>();

  constructor(path: string, options: OpenOptions = {}) {
    this.path = path;
    this.readonly = options.readonly === true;
    this.db = openDatabase(path, options);
  }

  /**
   * Runs `fn` on the store's connection in a BEGIN IMMEDIATE transaction
   * (joining an outer one), for modules that keep their own tables in the
   * store (budget counters, export watermark): concurrent processes queue on
   * the write lock, so a read-check-write inside `fn` cannot race.
   * @throws CachetError STORE when the file cannot be written (nothing is changed)
   */
  transaction<T>(fn: (db: Database) => T): T {
    return this.write(() => fn(this.db));
  }

  /** The store's connection, for reads by modules that keep their own tables in the store. */
  get database(): Database {
    return this.db;
  }

  /** Closes the database. The instance must not be used afterwards. */
  close(): void {
    this.db.close();
  }

  // ── sessions ────────────────────────────────────────────────────────────

  /**
   * Creates a session. A fork (with `parentId`) shares the parent's messages up
   * to `forkPoint` (rows are shared, not copied) and starts with the parent's
   * current stable prefix as its version 1, and its summary state when the
   * summary covers only messages the fork sees.
   * @throws CachetError SESSION_CONFLICT when `name` is taken; SESSION_NOT_FOUND for an unknown parent;
   *   INPUT_INVALID when `forkPoint` is not in the parent's log
   */
  createSession(options: NewSession): SessionRecord {
    return this.write(() => {
      const name = options.name ?? null;
      if (name !== null && this.db.query("SELECT 1 FROM sessions WHERE name = ?").get(name)) {
        throw new CachetError("SESSION_CONFLICT", `a session named "${name}" already exists`, {
          hint: `continue it with \`--session ${name}\`, or pick another name`,
        });
      }
      const id = newId("s");
      const now = this.nextUpdateTime();
      let forkPoint: string | null = null;
      let parentLog: LogEntry[] = [];
      const parentId = options.parentId ?? null;
      if (parentId !== null) {
        const parent = this.findSession(parentId);
        parentLog = this.logEntries(parent.id);
        if (options.forkPoint === undefined) {
          forkPoint = parentLog.at(-1)?.message.id ?? null;
        } else if (options.forkPoint !== null) {
          forkPoint = options.forkPoint;
          if (!parentLog.some((entry) => entry.message.id === forkPoint)) {
            throw new CachetError("INPUT_INVALID", `message ${forkPoint} is not in session ${parent.id}`, {
              hint: `run \`cachet sessions show ${parent.id}\` to see its messages`,
            });
          }
        }
      }
      this.db
        .query("INSERT INTO sessions (id, name, model, parent_id, fork_point, affinity_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .run(id, name, options.model, parentId, forkPoint, options.affinityKey ?? id, now, now);
      if (parentId !== null) this.inheritFromParent(id, parentId, forkPoint, parentLog, now);
      return this.findSession(id);
    });
  }

  /**
   * The session with this id, or else with this name.
   * @throws CachetError SESSION_NOT_FOUND
   */
  findSession(idOrName: string): SessionRecord {
    const row = this.db.query("SELECT * FROM sessions WHERE id = ?1 OR name = ?1 ORDER BY id = ?1 DESC LIMIT 1").get(idOrName) as SessionRow | null;
    if (!row) {
      throw new CachetError("SESSION_NOT_FOUND", `no session "${idOrName}"`, { hint: "run `cachet sessions` to list sessions" });
    }
    return toSession(row);
  }

  /** The most recently updated of cachet's own sessions (not those recorded by `cachet proxy`), or null when there is none. */
  latestSession(): SessionRecord | null {
    const row = this.db.query("SELECT * FROM sessions WHERE source = 'own' ORDER BY updated_at DESC, rowid DESC LIMIT 1").get() as SessionRow | null;
    return row ? toSession(row) : null;
  }

  /** Every session, most recently updated first. */
  listSessions(): SessionRecord[] {
    return (this.db.query("SELECT * FROM sessions ORDER BY updated_at DESC, rowid DESC").all() as SessionRow[]).map(toSession);
  }

  /** The sessions forked directly from this one. */
  forksOf(sessionId: string): SessionRecord[] {
    return (this.db.query("SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, rowid").all(sessionId) as SessionRow[]).map(toSession);
  }

  /** Counts for listings: messages in the session's visible log and ledger rows. */
  sessionCounts(sessionId: string): { messages: number; requests: number } {
    const requests = (this.db.query("SELECT COUNT(*) AS n FROM requests WHERE session_id = ?").get(sessionId) as { n: number }).n;
    let messages = 0;
    for (const segment of this.segments(sessionId)) {
      messages += (this.db.query("SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND seq <= ?").get(segment.sessionId, segment.maxSeq) as { n: number }).n;
    }
    return { messages, requests };
  }

  /** Records the `provider/model` of the session's latest turn. */
  setModel(sessionId: string, model: string): void {
    this.write(() => {
      this.touch(sessionId);
      this.db.query("UPDATE sessions SET model = ? WHERE id = ?").run(model, sessionId);
    });
  }

  /**
   * Deletes a session with its prefix versions, own messages, summary and
   * ledger rows. Messages it shares from a parent stay with the parent.
   * @returns the ids removed (the session, then its forks with `force`)
   * @throws CachetError SESSION_NOT_FOUND; SESSION_CONFLICT when it has forks and `force` is not set
   *   (with `force`, the forks, which need its messages, are removed too)
   */
  removeSession(idOrName: string, options: { force?: boolean } = {}): string[] {
    return this.write(() => {
      const session = this.findSession(idOrName);
      const forks = this.forksOf(session.id);
      if (forks.length > 0 && !options.force) {
        throw new CachetError("SESSION_CONFLICT", `session ${session.id} has ${forks.length} fork(s): ${forks.map((f) => f.id).join(", ")}`, {
          hint: "remove the forks first, or pass --force to remove them too",
        });
      }
      const order = descendants(session.id, (id) => this.forksOf(id).map((f) => f.id));
      // Deepest first: a fork's row references its parent.
      for (const id of [...order].reverse()) {
        this.db.query("DELETE FROM sessions WHERE id = ?").run(id);
        this.forget(id);
      }
      return order;
    });
  }

  // ── stable prefix and summary ───────────────────────────────────────────

  /** The session's current stable prefix version, or null before the first. */
  currentPrefix(sessionId: string): PrefixVersion | null {
    const row = this.db.query("SELECT version FROM prefixes WHERE session_id = ? ORDER BY version DESC LIMIT 1").get(sessionId) as { version: number } | null;
    if (!row) return null;
    const key = `${sessionId}:${row.version}`;
    const cached = this.prefixCache.get(key);
    if (cached) return cached;
    const full = this.db.query("SELECT * FROM prefixes WHERE session_id = ? AND version = ?").get(sessionId, row.version) as PrefixRow;
    const version = toPrefixVersion(full);
    this.prefixCache.set(key, version);
    return version;
  }

  /** Every prefix version of the session, oldest first. */
  prefixVersions(sessionId: string): PrefixVersion[] {
    return (this.db.query("SELECT * FROM prefixes WHERE session_id = ? ORDER BY version").all(sessionId) as PrefixRow[]).map(toPrefixVersion);
  }

  /**
   * Makes `prefix` the session's stable prefix. A new version is stored only
   * when its fingerprint differs from the current one's; otherwise the current
   * version is returned unchanged (reason ignored).
   * @param reason why it changed ("system changed", ...); stored as null for version 1
   * @throws CachetError SESSION_NOT_FOUND
   */
  setPrefix(sessionId: string, prefix: StablePrefix, reason: string | null): PrefixVersion {
    return this.write(() => {
      const current = this.currentPrefix(sessionId);
      if (current && current.prefix.fingerprint === prefix.fingerprint) return current;
      this.touch(sessionId);
      const version = (current?.version ?? 0) + 1;
      this.db
        .query("INSERT INTO prefixes (session_id, version, fingerprint, prefix, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)")
        .run(sessionId, version, prefix.fingerprint, JSON.stringify(prefix), version === 1 ? null : reason, Date.now());
      return this.currentPrefix(sessionId)!;
    });
  }

  /** The session's summary state (empty until the first compaction). */
  summary(sessionId: string): SummaryState {
    const row = this.db.query("SELECT messages, covers_through FROM summaries WHERE session_id = ?").get(sessionId) as { messages: string; covers_through: string | null } | null;
    return row ? { messages: JSON.parse(row.messages) as Message[], coversThrough: row.covers_through } : { messages: [], coversThrough: null };
  }

  /**
   * Replaces the session's summary state.
   * @throws CachetError SESSION_NOT_FOUND
   */
  saveSummary(sessionId: string, summary: SummaryState): void {
    this.write(() => {
      this.touch(sessionId);
      this.db
        .query("INSERT INTO summaries (session_id, messages, covers_through) VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages, covers_through = excluded.covers_through")
        .run(sessionId, JSON.stringify(summary.messages), summary.coversThrough);
    });
  }

  // ── log ─────────────────────────────────────────────────────────────────

  /**
   * Everything needed to render the session's next request: session, current
   * prefix, summary state and the visible log. Repeated loads in one process
   * read only what changed since the last load (new rows and rows that were
   * incomplete), so a turn's cost does not grow with the history.
   * Returned messages are frozen: the log is append-only.
   * @throws CachetError SESSION_NOT_FOUND; STORE when the session has no stable prefix yet
   */
  loadSession(idOrName: string): LoadedSession {
    const session = this.findSession(idOrName);
    const prefix = this.currentPrefix(session.id);
    if (!prefix) {
      throw new CachetError("STORE", `session ${session.id} has no stable prefix yet`, { hint: "it was created but no turn was stored; start a new session" });
    }
    return { session, prefix, summary: this.summary(session.id), messages: this.visibleLog(session.id).messages.slice() };
  }

  /**
   * The visible log with storage details: a fork's parent messages up to the
   * fork point (recursively), then its own, oldest first.
   * @throws CachetError SESSION_NOT_FOUND
   */
  logEntries(sessionId: string): LogEntry[] {
    return this.visibleLog(sessionId).entries.slice();
  }

  /**
   * Appends a message to the session's log with the next sequence number.
   * Appending the same id again with identical content is a no-op (a retried
   * write); with other content it is refused: only {@link updatePartial} may
   * change a stored message.
   * @throws CachetError SESSION_NOT_FOUND; STORE when the id is taken by another message
   */
  appendMessage(sessionId: string, message: Message): void {
    const content = JSON.stringify(message.content);
    const incomplete = message.incomplete ? 1 : 0;
    this.write(() => {
      this.touch(sessionId);
      const existing = this.db.query("SELECT role, content, incomplete FROM messages WHERE session_id = ? AND id = ?").get(sessionId, message.id) as Pick<MessageRow, "role" | "content" | "incomplete"> | null;
      if (existing) {
        if (existing.role === message.role && existing.content === content && existing.incomplete === incomplete) return;
        throw new CachetError("STORE", `message ${message.id} is already stored in session ${sessionId} with other content`, {
          hint: "stored messages never change; append a new message with a new id",
        });
      }
      const { next } = this.db.query("SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM messages WHERE session_id = ?").get(sessionId) as { next: number };
      this.db
        .query("INSERT INTO messages (session_id, seq, id, role, content, incomplete, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .run(sessionId, next, message.id, message.role, content, incomplete, Date.now());
    });
  }

  /**
   * Replaces the content of a message that is still incomplete (a streaming
   * answer written early), and marks it complete when `incomplete` is false.
   * @throws CachetError STORE when the message does not exist in this session or is already complete
   */
  updatePartial(sessionId: string, messageId: string, content: Block[], incomplete: boolean): void {
    this.write(() => {
      const { changes } = this.db
        .query("UPDATE messages SET content = ?, incomplete = ? WHERE session_id = ? AND id = ? AND incomplete = 1")
        .run(JSON.stringify(content), incomplete ? 1 : 0, sessionId, messageId);
      if (changes === 0) {
        throw new CachetError("STORE", `message ${messageId} of session ${sessionId} is not an incomplete message`, {
          hint: "only a streaming answer stored with `incomplete: true` can be updated",
        });
      }
      this.touch(sessionId);
    });
  }

  // ── ledger ──────────────────────────────────────────────────────────────

  /**
   * Adds a ledger row. A row whose (provider, providerRequestId) or id is
   * already stored is ignored, so a resumed or forked request is never billed twice.
   * The chain is stored as a delta of the session's previous request; the store
   * keeps `row.chain` as the base for the next one, so do not mutate it afterwards.
   * @returns true when stored, false when it was a duplicate
   * @throws CachetError SESSION_NOT_FOUND
   */
  recordRequest(row: LedgerRow): boolean {
    return this.write(() => {
      this.rev(row.sessionId);
      const delta = encodeChain(row.chain, this.chainBase(row.sessionId));
      const { changes } = this.db
        .query(`INSERT OR IGNORE INTO requests (id, session_id, ${LEDGER_COLUMNS.join(", ")}, chain_base, chain_shared, chain_depth, chain_tail) VALUES (?, ?, ${LEDGER_COLUMNS.map(() => "?").join(", ")}, ?, ?, ?, ?)`)
        .run(row.id, row.sessionId, ...ledgerValues(row), delta.base, delta.shared, delta.depth, JSON.stringify(delta.tail));
      if (changes === 0) return false;
      this.lastChains.set(row.sessionId, { id: row.id, chain: row.chain, depth: delta.depth });
      return true;
    });
  }

  /**
   * Changes fields of a ledger row (e.g. usage and timings once the stream ends).
   * @returns false when the patch's providerRequestId is already billed on another row (nothing is changed)
   * @throws CachetError SESSION_NOT_FOUND when there is no row with this id
   */
  updateRequest(id: string, patch: LedgerPatch): boolean {
    return this.write(() => {
      const current = this.request(id);
      const next: LedgerRow = { ...current, ...patch, id: current.id, sessionId: current.sessionId, chain: current.chain };
      try {
        this.db.query(`UPDATE requests SET ${LEDGER_COLUMNS.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`).run(...ledgerValues(next), id);
      } catch (error) {
        if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") return false;
        throw error;
      }
      return true;
    });
  }

  /** The session's ledger rows in the order the requests started. */
  requests(sessionId: string): LedgerRow[] {
    return this.toLedgerRows(this.db.query("SELECT * FROM requests WHERE session_id = ? ORDER BY started_at, rowid").all(sessionId) as RequestRow[]);
  }

  /** Ledger rows of every session (or one), started at or after `since`, in start order. */
  ledger(filter: LedgerFilter = {}): LedgerRow[] {
    const rows = this.db
      .query("SELECT * FROM requests WHERE (?1 IS NULL OR session_id = ?1) AND started_at >= ?2 ORDER BY started_at, rowid")
      .all(filter.sessionId ?? null, filter.since ?? 0) as RequestRow[];
    return this.toLedgerRows(rows);
  }

  /** The ledger's stored per-request figures and their aggregation in SQL (`cachet stats`, `cachet cost`). */
  figures(): LedgerFigures {
    return new LedgerFigures(this.db, (row) => toLedgerRow(row, []));
  }

  /** The session's latest `limit` ledger rows, oldest first (the live-entry search of the cacheable maximum). */
  recentRequests(sessionId: string, limit: number): LedgerRow[] {
    const rows = this.db.query("SELECT * FROM requests WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?").all(sessionId, limit) as RequestRow[];
    return this.toLedgerRows(rows.reverse());
  }

  /** The session's latest ledger row, or null. */
  lastRequest(sessionId: string): LedgerRow | null {
    const row = this.db.query("SELECT * FROM requests WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1").get(sessionId) as RequestRow | null;
    return row ? this.toLedgerRows([row])[0]! : null;
  }

  /**
   * One ledger row by id (for `cachet why REQUEST`).
   * @throws CachetError SESSION_NOT_FOUND when no request has this id
   */
  request(id: string): LedgerRow {
    const row = this.db.query("SELECT * FROM requests WHERE id = ?").get(id) as RequestRow | null;
    if (!row) throw new CachetError("SESSION_NOT_FOUND", `no request "${id}" in the ledger`, { hint: "run `cachet sessions show` to see a session's requests" });
    return this.toLedgerRows([row])[0]!;
  }

  // ── token memo ──────────────────────────────────────────────────────────

  /**
   * Token counts memoized by content hash (the caller folds the tokenizer into
   * the hash if counts differ between tokenizers). Missing hashes are absent.
   */
  nodeTokens(hashes: readonly string[]): Map<string, number> {
    const out = new Map<string, number>();
    const missing: string[] = [];
    for (const hash of hashes) {
      const tokens = this.tokenMemo.get(hash);
      if (tokens === undefined) missing.push(hash);
      else out.set(hash, tokens);
    }
    for (let i = 0; i < missing.length; i += TOKEN_CHUNK) {
      const chunk = missing.slice(i, i + TOKEN_CHUNK);
      const rows = this.db.query(`SELECT hash, tokens FROM node_tokens WHERE hash IN (${chunk.map(() => "?").join(", ")})`).all(...chunk) as { hash: string; tokens: number }[];
      for (const row of rows) {
        this.tokenMemo.set(row.hash, row.tokens);
        out.set(row.hash, row.tokens);
      }
    }
    return out;
  }

  /** Stores token counts by content hash. */
  saveNodeTokens(entries: Iterable<readonly [string, number]>): void {
    this.write(() => {
      const insert = this.db.query("INSERT OR REPLACE INTO node_tokens (hash, tokens) VALUES (?, ?)");
      for (const [hash, tokens] of entries) {
        insert.run(hash, tokens);
        this.tokenMemo.set(hash, tokens);
      }
    });
  }

  // ── turn lock ───────────────────────────────────────────────────────────

  /**
   * Takes the session's turn lease, waiting (polling with backoff) while
   * another live process holds it. A holder whose process is gone (same host)
   * or whose lease expired unrefreshed is taken over. While held, the lease is
   * refreshed in the background; call the returned function to release it
   * (calling it twice is harmless).
   * @throws CachetError SESSION_CONFLICT after `waitMs`; SESSION_NOT_FOUND
   */
  async acquireTurn(sessionId: string, options: TurnOptions = {}): Promise<() => void> {
    const waitMs = options.waitMs ?? 180_000;
    const leaseMs = options.leaseMs ?? 15_000;
    const token = newId("t");
    const host = hostname();
    const deadline = Date.now() + waitMs;
    let delay = 5;
    for (;;) {
      const holder = this.tryLease(sessionId, token, host, leaseMs);
      if (holder === null) break;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CachetError("SESSION_CONFLICT", `session ${sessionId} is busy: process ${holder.owner_pid} on ${holder.host} has been running a turn for over ${Math.round(waitMs / 1000)} s`, {
          hint: "wait for it to finish, or stop that process (a dead process's lease is taken over automatically)",
        });
      }
      await abortableSleep(Math.min(left, delay + Math.random() * delay), options.signal);
      delay = Math.min(delay * 2, 50);
    }
    const refresh = setInterval(() => {
      try {
        this.db.query("UPDATE turn_leases SET expires_at = ? WHERE session_id = ? AND token = ?").run(Date.now() + leaseMs, sessionId, token);
      } catch {
        // A busy or closed database: the next tick retries, and the lease outlives two missed ticks.
      }
    }, Math.max(10, Math.floor(leaseMs / 3)));
    refresh.unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(refresh);
      this.write(() => this.db.query("DELETE FROM turn_leases WHERE session_id = ? AND token = ?").run(sessionId, token));
    };
  }

  // ── internals ───────────────────────────────────────────────────────────

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction (nested calls join the outer one).
   * A failed write rolls back whole; SQLite failures the user can act on (disk
   * full, read-only or corrupt file) become STORE errors naming the file.
   */
  private write<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    try {
      return this.db.transaction(fn).immediate();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string" && /^SQLITE_(FULL|READONLY|CORRUPT|NOTADB|IOERR|CANTOPEN|PERM)/.test(code)) {
        throw new CachetError("STORE", `cannot write the session store ${this.path}: ${(error as Error).message}`, {
          hint: "check free disk space and permissions; nothing already stored was changed",
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Bumps the session's revision and update time. @throws CachetError SESSION_NOT_FOUND */
  private touch(sessionId: string): void {
    const { changes } = this.db.query("UPDATE sessions SET rev = rev + 1, updated_at = ? WHERE id = ?").run(this.nextUpdateTime(), sessionId);
    if (changes === 0) throw new CachetError("SESSION_NOT_FOUND", `no session "${sessionId}"`, { hint: "run `cachet sessions` to list sessions" });
  }

  /**
   * Now, in Unix epoch ms, but later than any session's update time, so the
   * latest session (`-c`) is well defined even for updates in the same millisecond.
   */
  private nextUpdateTime(): number {
    const { latest } = this.db.query("SELECT MAX(updated_at) AS latest FROM sessions").get() as { latest: number | null };
    return Math.max(Date.now(), (latest ?? 0) + 1);
  }

  private rev(sessionId: string): number {
    const row = this.db.query("SELECT rev FROM sessions WHERE id = ?").get(sessionId) as { rev: number } | null;
    if (!row) throw new CachetError("SESSION_NOT_FOUND", `no session "${sessionId}"`, { hint: "run `cachet sessions` to list sessions" });
    return row.rev;
  }

  /** Drops what this process cached about a removed session. */
  private forget(sessionId: string): void {
    this.segmentCache.delete(sessionId);
    this.logCache.delete(sessionId);
    this.lastChains.delete(sessionId);
    for (const key of this.prefixCache.keys()) if (key.startsWith(`${sessionId}:`)) this.prefixCache.delete(key);
  }

  /**
   * Where a session's visible log lives: (session, last seq) ranges, oldest
   * first. Fixed at creation (parent and fork point never change), so cached.
   */
  private segments(sessionId: string): Segment[] {
    const cached = this.segmentCache.get(sessionId);
    if (cached) return cached;
    const row = this.db.query("SELECT parent_id, fork_point FROM sessions WHERE id = ?").get(sessionId) as { parent_id: string | null; fork_point: string | null } | null;
    if (!row) throw new CachetError("SESSION_NOT_FOUND", `no session "${sessionId}"`, { hint: "run `cachet sessions` to list sessions" });
    const own: Segment = { sessionId, maxSeq: Number.MAX_SAFE_INTEGER };
    let result: Segment[] = [own];
    if (row.parent_id !== null && row.fork_point !== null) {
      const inherited = this.segments(row.parent_id);
      const at = this.locate(inherited, row.fork_point);
      result = [...inherited.slice(0, at.index), { sessionId: inherited[at.index]!.sessionId, maxSeq: at.seq }, own];
    }
    this.segmentCache.set(sessionId, result);
    return result;
  }

  private locate(segments: Segment[], messageId: string): { index: number; seq: number } {
    for (let index = segments.length - 1; index >= 0; index--) {
      const segment = segments[index]!;
      const hit = this.db.query("SELECT seq FROM messages WHERE session_id = ? AND id = ?").get(segment.sessionId, messageId) as { seq: number } | null;
      if (hit && hit.seq <= segment.maxSeq) return { index, seq: hit.seq };
    }
    throw new CachetError("STORE", `the store is inconsistent: fork point ${messageId} is missing`, { hint: `move ${this.path} away and report the problem` });
  }

  /**
   * The cached visible log, brought up to date. Only the session's revisions
   * are compared; when only the session's own rows changed, just its new rows
   * and the rows that were incomplete are read. The result is shared: callers copy.
   */
  private visibleLog(sessionId: string): CachedLog {
    const segments = this.segments(sessionId);
    const revs = segments.map((segment) => this.rev(segment.sessionId));
    const cached = this.logCache.get(sessionId);
    if (cached && sameRevs(cached.revs, revs)) return cached;
    if (cached && sameRevs(cached.revs.slice(0, -1), revs.slice(0, -1))) {
      this.refreshOwn(sessionId, cached);
      cached.revs = revs;
      return cached;
    }
    const log: CachedLog = { revs, entries: [], messages: [], incomplete: [], lastOwnSeq: 0 };
    for (const segment of segments) {
      for (const row of this.db.query("SELECT * FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq").all(segment.sessionId, segment.maxSeq) as MessageRow[]) {
        push(log, toEntry(row), sessionId);
      }
    }
    this.logCache.set(sessionId, log);
    return log;
  }

  /** Re-reads the own rows that were incomplete, and appends the own rows stored since. */
  private refreshOwn(sessionId: string, log: CachedLog): void {
    const stillIncomplete: number[] = [];
    for (const index of log.incomplete) {
      const entry = toEntry(this.db.query("SELECT * FROM messages WHERE session_id = ? AND seq = ?").get(sessionId, log.entries[index]!.seq) as MessageRow);
      log.entries[index] = entry;
      log.messages[index] = entry.message;
      if (entry.message.incomplete) stillIncomplete.push(index);
    }
    log.incomplete = stillIncomplete;
    for (const row of this.db.query("SELECT * FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq").all(sessionId, log.lastOwnSeq) as MessageRow[]) {
      push(log, toEntry(row), sessionId);
    }
  }

  private inheritFromParent(id: string, parentId: string, forkPoint: string | null, parentLog: LogEntry[], now: number): void {
    const prefix = this.currentPrefix(parentId);
    if (prefix) {
      this.db
        .query("INSERT INTO prefixes (session_id, version, fingerprint, prefix, reason, created_at) VALUES (?, 1, ?, ?, NULL, ?)")
        .run(id, prefix.prefix.fingerprint, JSON.stringify(prefix.prefix), now);
    }
    const summary = this.summary(parentId);
    if (summary.messages.length === 0 && summary.coversThrough === null) return;
    // The summary is only valid for the fork when everything it covers is in the fork's log.
    const visible = forkPoint === null ? 0 : parentLog.findIndex((entry) => entry.message.id === forkPoint) + 1;
    const covered = summary.coversThrough === null ? 0 : parentLog.findIndex((entry) => entry.message.id === summary.coversThrough) + 1;
    if (covered > 0 && covered <= visible) {
      this.db.query("INSERT INTO summaries (session_id, messages, covers_through) VALUES (?, ?, ?)").run(id, JSON.stringify(summary.messages), summary.coversThrough);
    }
  }

  private tryLease(sessionId: string, token: string, host: string, leaseMs: number): LeaseRow | null {
    try {
      return this.write(() => {
        this.rev(sessionId);
        const now = Date.now();
        const holder = this.db.query("SELECT * FROM turn_leases WHERE session_id = ?").get(sessionId) as LeaseRow | null;
        if (holder && holder.expires_at > now && !(holder.host === host && !processAlive(holder.owner_pid))) return holder;
        this.db
          .query("INSERT OR REPLACE INTO turn_leases (session_id, owner_pid, host, token, expires_at) VALUES (?, ?, ?, ?, ?)")
          .run(sessionId, process.pid, host, token, now + leaseMs);
        return null;
      });
    } catch (error) {
      // busy_timeout already waited; treat a still-busy database as "held" and poll again.
      if ((error as { code?: string }).code === "SQLITE_BUSY") return { session_id: sessionId, owner_pid: 0, host: "(busy database)", token: "", expires_at: 0 };
      throw error;
    }
  }

  /** The chain a new request of the session is delta-encoded against. */
  private chainBase(sessionId: string): ChainBase | undefined {
    const memo = this.lastChains.get(sessionId);
    if (memo) return memo;
    const row = this.db.query("SELECT * FROM requests WHERE session_id = ? ORDER BY rowid DESC LIMIT 1").get(sessionId) as RequestRow | null;
    if (!row) return undefined;
    return { id: row.id, chain: this.resolveChains([row]).get(row.id)!, depth: row.chain_depth };
  }

  private toLedgerRows(rows: RequestRow[]): LedgerRow[] {
    const chains = this.resolveChains(rows);
    return rows.map((row) => toLedgerRow(row, chains.get(row.id)!));
  }

  /** Rebuilds the chains of `rows`, reading bases that are not among them. */
  private resolveChains(rows: RequestRow[]): Map<string, ChainLink[]> {
    const byId = new Map(rows.map((row) => [row.id, row]));
    const chains = new Map<string, ChainLink[]>();
    const resolve = (row: RequestRow): ChainLink[] => {
      const known = chains.get(row.id);
      if (known) return known;
      const tail = JSON.parse(row.chain_tail) as ChainLink[];
      let chain = tail;
      if (row.chain_base !== null) {
        const base = byId.get(row.chain_base) ?? (this.db.query("SELECT * FROM requests WHERE id = ?").get(row.chain_base) as RequestRow | null);
        if (!base) throw new CachetError("STORE", `the store is inconsistent: request ${row.id} refers to missing request ${row.chain_base}`, { hint: `move ${this.path} away and report the problem` });
        chain = decodeChain(resolve(base), row.chain_shared, tail);
      }
      chains.set(row.id, chain);
      return chain;
    };
    for (const row of rows) resolve(row);
    return chains;
  }
}

const TOKEN_CHUNK = 256;

interface Segment {
  sessionId: string;
  /** Last sequence number of this session visible here. */
  maxSeq: number;
}

interface CachedLog {
  /** Revision of each segment's session when `entries` were read. */
  revs: number[];
  entries: LogEntry[];
  /** `entries[i].message`, kept alongside so a load copies one array instead of mapping. */
  messages: Message[];
  /** Indexes of the session's own entries that were incomplete (they may still be updated). */
  incomplete: number[];
  /** Highest own sequence number read. */
  lastOwnSeq: number;
}

function push(log: CachedLog, entry: LogEntry, ownSessionId: string): void {
  if (entry.sessionId === ownSessionId) {
    log.lastOwnSeq = entry.seq;
    if (entry.message.incomplete) log.incomplete.push(log.entries.length);
  }
  log.entries.push(entry);
  log.messages.push(entry.message);
}

function sameRevs(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

function descendants(root: string, children: (id: string) => string[]): string[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...children(out[i]!));
  return out;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as { code?: string }).code === "EPERM";
  }
}

