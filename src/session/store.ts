/**
 * The session store: one SQLite database (bun:sqlite, WAL) holding sessions,
 * their stable prefix versions, the append-only log, summary state, the
 * ledger, the token memo and the per-session turn lease. Each concern lives in
 * its own module (sessions, prefixes, log, ledger, token-memo, leases); this
 * class is the one API over them and runs what spans several in one write.
 *
 * Every write is a short `BEGIN IMMEDIATE` transaction, so concurrent
 * processes queue on SQLite's write lock (bounded by `busy_timeout`) instead
 * of failing with SQLITE_BUSY. A whole turn (load, call the provider, append)
 * is serialized per session by {@link Store.acquireTurn}.
 */
import type { Database } from "bun:sqlite";
import type { Block, Message, StablePrefix, SummaryState } from "../context/types.ts";
import { newId } from "../context/ids.ts";
import { CachetError } from "../errors.ts";
import { storeFile } from "../paths.ts";
import { keepPrivate } from "../private-files.ts";
import { CompactionTable, type CompactionRecord } from "./compactions.ts";
import { sessionNotFound, StoreCore } from "./core.ts";
import { forksRefusal } from "./forks-refusal.ts";
import { closeDatabase, type OpenOptions } from "./database.ts";
import { Ledger, type LedgerFilter, type LedgerPatch } from "./ledger.ts";
import { DEFAULT_LEASE_MS, Leases, type TurnOptions } from "./leases.ts";
import { MessageLog, type LogEntry, type StoredMessage } from "./log.ts";
import { PrefixTable } from "./prefixes.ts";
import { SessionTable } from "./sessions.ts";
import { TokenMemo } from "./token-memo.ts";
import { LedgerFigures } from "./ledger-figures.ts";
import { toGeneration, toLedgerRow, toPrefixVersion, toSession } from "./rows.ts";
import type { LedgerRow, LoadedSession, PrefixVersion, SessionGeneration, SessionRecord } from "./types.ts";

export type { LedgerFilter, LedgerPatch } from "./ledger.ts";
export type { TurnOptions } from "./leases.ts";
export type { LogEntry, StoredMessage } from "./log.ts";

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
  /** The open database (tests reach it to simulate a failing disk). */
  private readonly db: Database;
  private readonly core: StoreCore;
  private readonly sessions: SessionTable;
  private readonly prefixes: PrefixTable;
  private readonly log: MessageLog;
  private readonly ledgerRows: Ledger;
  private readonly tokens: TokenMemo;
  /** Sessions {@link beginSession} made that no write has stored yet, as they will be loaded. */
  private readonly planned = new Map<string, LoadedSession>();
  private readonly leases: Leases;
  private readonly compactionRows: CompactionTable;

  constructor(path: string, options: OpenOptions = {}) {
    this.path = path;
    this.readonly = options.readonly === true;
    this.core = new StoreCore(path, options);
    this.db = this.core.db;
    this.sessions = new SessionTable(this.core);
    this.prefixes = new PrefixTable(this.core);
    this.log = new MessageLog(this.core);
    this.ledgerRows = new Ledger(this.core);
    this.tokens = new TokenMemo(this.core);
    this.leases = new Leases(this.core);
    this.compactionRows = new CompactionTable(this.core);
  }

  /**
   * Runs `fn` on the store's connection in a BEGIN IMMEDIATE transaction
   * (joining an outer one), for modules that keep their own tables in the
   * store (budget counters, export watermark): concurrent processes queue on
   * the write lock, so a read-check-write inside `fn` cannot race.
   * @throws CachetError STORE when the file cannot be written (nothing is changed)
   */
  transaction<T>(fn: (db: Database) => T): T {
    return this.core.write(() => fn(this.db));
  }

  /**
   * Holds one read snapshot of the store until the returned function is called: every read in between sees the store
   * as the first of them found it (a WAL read transaction), so a reader streaming a session out while a turn writes it
   * never mixes two states (a ledger row already ok beside its answer still half written). Writers are not blocked;
   * a checkpoint waits for the snapshot's end. Inside a transaction it joins it and the function does nothing.
   * @returns the end of the snapshot (idempotent)
   */
  readSnapshot(): () => void {
    if (this.db.inTransaction) return () => {};
    this.db.run("BEGIN");
    return () => {
      if (this.db.inTransaction) this.db.run("COMMIT");
    };
  }

  /** The store's connection, for reads by modules that keep their own tables in the store. */
  get database(): Database {
    return this.db;
  }

  /**
   * Makes the store's files private (opened with `keepPrivateLater`; see src/private-files.ts).
   * @throws the file system's error when a mode cannot be changed
   */
  keepPrivate(): void {
    if (this.path !== ":memory:") keepPrivate(this.path);
  }

  /** Closes the database (a resident process keeps its connection open: src/session/database.ts). The instance must not be used afterwards. */
  close(): void {
    this.log.releaseLarge();
    closeDatabase(this.db);
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
    return this.core.write(() => {
      const name = options.name ?? null;
      if (name !== null) this.sessions.checkNameFree(name);
      let forkPoint: string | null = null;
      let parentLog: LogEntry[] = [];
      const parentId = options.parentId ?? null;
      if (parentId !== null) {
        const parent = this.sessions.find(parentId);
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
      const session = this.sessions.insert({ name, model: options.model, parentId, forkPoint, affinityKey: options.affinityKey });
      if (parentId !== null) this.prefixes.inherit(session.id, parentId, forkPoint, parentLog.map((entry) => entry.message.id), session.createdAt);
      return session;
    });
  }

  /**
   * Finds the session named `name`, or creates it with `prefix` as its stable
   * prefix version 1 and takes its turn lease, in one write: concurrent processes
   * starting the same new name all get the one session (the others then queue
   * on its turn lease), and no process sees it before its prefix is stored.
   * @returns the session; whether this call created it, and then the release function of its lease
   * @throws CachetError STORE when the file cannot be written
   */
  findOrCreateNamed(options: { name: string; model: string; prefix: StablePrefix }, lease: TurnOptions = {}): { session: SessionRecord; created: false } | { session: SessionRecord; created: true; release: () => void } {
    const found = this.core.write(() => {
      const created = this.sessions.insertNamed({ name: options.name, model: options.model, parentId: null, forkPoint: null });
      if (created === null) return { session: this.sessions.find(options.name), token: undefined };
      this.prefixes.first(created.id, options.prefix, created.createdAt);
      return { session: created, token: this.leases.takeNew(created.id, lease.leaseMs ?? DEFAULT_LEASE_MS) };
    });
    if (found.token === undefined) return { session: found.session, created: false };
    return { session: found.session, created: true, release: this.holdNew(found.session.id, found.token, lease) };
  }

  /**
   * The session with this id, or else with this name.
   * @throws CachetError SESSION_NOT_FOUND
   */
  findSession(idOrName: string): SessionRecord {
    return this.planned.get(idOrName)?.session ?? this.sessions.find(idOrName);
  }

  /**
   * {@link findSession} for the commands that read a session (`sessions show`, `export`, `cost`, `why`, `stats`): a
   * new session or fork with nothing stored in it (sessions.ts, emptyShell) is not one, as listings skip it, since a
   * failed first turn removes it again. The error names `idOrName`, the word the user typed.
   * @throws CachetError SESSION_NOT_FOUND, saying so when the session's first turn is still running
   */
  findStoredSession(idOrName: string): SessionRecord {
    const session = this.sessions.find(idOrName);
    if (!this.sessions.isShell(session.id)) return session;
    if (this.leases.unheld(session.id)) throw sessionNotFound(idOrName);
    throw new CachetError("SESSION_NOT_FOUND", `no session "${idOrName}" yet: its first turn is still running and has stored nothing`, {
      hint: "a session is stored with its first prompt: try again once that turn has finished",
    });
  }

  /**
   * The most recently updated of cachet's own sessions (not those recorded by `cachet proxy`), or null when there
   * is none; a new session or a fork with nothing stored in it yet (or ever: sessions.ts, emptyShell) is not one.
   */
  latestSession(): SessionRecord | null {
    return this.sessions.latest();
  }

  /**
   * The session `-c` continues and a bare `--fork` forks: {@link latestSession} unless it holds no conversation (its
   * only turn failed before any answer), then the latest that does (sessions.ts latestConversation).
   */
  latestConversation(): SessionRecord | null {
    return this.sessions.latestConversation();
  }

  /** Every session, most recently updated first; a new session or a fork with nothing stored in it is not listed (sessions.ts, emptyShell). */
  listSessions(): SessionRecord[] {
    return this.sessions.list();
  }

  /** The sessions forked directly from this one. */
  forksOf(sessionId: string): SessionRecord[] {
    return this.sessions.forksOf(sessionId);
  }

  /** Counts for listings: messages in the session's visible log and ledger rows. */
  sessionCounts(sessionId: string): { messages: number; requests: number } {
    const requests = this.ledgerRows.count(sessionId);
    return { messages: this.log.count(sessionId), requests };
  }

  /** Records the `provider/model` of the session's latest turn. */
  setModel(sessionId: string, model: string): void {
    this.core.write(() => this.sessions.setModel(sessionId, model));
  }

  /** Stores the generation settings the session's turns send from now on (src/run/sticky-generation.ts); undefined clears them. */
  setGeneration(sessionId: string, generation: SessionGeneration | undefined): void {
    this.core.write(() => this.sessions.setGeneration(sessionId, generation));
  }

  /**
   * Removes the shells (sessions.ts, emptyShell) of new sessions and forks whose first turn's process ended before
   * it stored anything (SIGKILL, a crash) and so could not remove them: no message of their
   * own, no ledger row, no fork, and a turn lease whose holder is gone. Reads first; writes only when there is one.
   * @returns the ids removed
   * @throws CachetError STORE when the file cannot be written
   */
  dropAbandoned(): string[] {
    if (this.leases.abandonedShells().length === 0) return [];
    return this.core.write(() => this.leases.abandonedShells().flatMap((id) => this.removeSession(id)));
  }

  /**
   * Removes the shells (sessions.ts, emptyShell) among the forks of `idOrName` and theirs that no turn holds, deepest
   * first, so that a chain of them goes: forks whose first turn's process ended before it stored anything, as
   * {@link dropAbandoned} removes them, and those a cachet before this rule left without a lease (a fork's first
   * turn refused before sending was kept, and a later bare `--fork` could fork it). Run before `sessions rm`
   * counts the session's forks. A fork whose first turn is under way is kept. Reads first; writes only when there is one.
   * @returns the ids removed
   * @throws CachetError SESSION_NOT_FOUND; STORE when the file cannot be written
   */
  dropAbandonedForks(idOrName: string): string[] {
    const forks = () => this.sessions.descendants(this.sessions.find(idOrName)).slice(1).reverse();
    const gone = (id: string) => this.sessions.isShell(id) && this.leases.unheld(id);
    if (!forks().some((s) => gone(s.id))) return [];
    return this.core.write(() => forks().flatMap((s) => (gone(s.id) ? this.removeSession(s.id) : [])));
  }

  /**
   * Removes the session when it is a shell (sessions.ts, emptyShell): the turn that created it is ending before
   * it stored anything in it. Call under its turn lease.
   * @returns whether it was removed
   * @throws CachetError STORE when the file cannot be written
   */
  dropShell(sessionId: string): boolean {
    // Never stored (beginSession, its first write not made): nothing to remove, and nothing is written.
    if (this.core.cancelDeferred(sessionId)) return this.planned.delete(sessionId);
    return this.core.write(() => {
      if (!this.sessions.isShell(sessionId)) return false;
      this.removeSession(sessionId);
      return true;
    });
  }

  /**
   * The ids {@link removeSession} would delete: the session, then its forks and theirs.
   * @throws CachetError SESSION_NOT_FOUND; SESSION_HAS_FORKS (exit 2) when it has forks and `force` is not set,
   *   naming every session `--force` would remove
   */
  removalOf(idOrName: string, options: { force?: boolean } = {}): string[] {
    const family = this.sessions.descendants(this.sessions.find(idOrName));
    if (family.length > 1 && !options.force) throw forksRefusal(family);
    return family.map((s) => s.id);
  }

  /**
   * Deletes a session with its prefix versions, own messages, summary and
   * ledger rows. Messages it shares from a parent stay with the parent.
   * @returns the ids removed (the session, then its forks and theirs with `force`)
   * @throws CachetError as {@link removalOf} (with `force`, the forks, which need its messages, are removed too)
   */
  removeSession(idOrName: string, options: { force?: boolean } = {}): string[] {
    return this.core.write(() => {
      const order = this.removalOf(idOrName, options);
      // Deepest first: a fork's row references its parent.
      for (const id of [...order].reverse()) {
        this.sessions.delete(id);
        this.log.forget(id);
        this.ledgerRows.forget(id);
        this.prefixes.forget(id);
      }
      return order;
    });
  }

  // ── stable prefix and summary ───────────────────────────────────────────

  /** The session's current stable prefix version, or null before the first. */
  currentPrefix(sessionId: string): PrefixVersion | null {
    return this.prefixes.current(sessionId);
  }

  /** Every prefix version of the session, oldest first. */
  prefixVersions(sessionId: string): PrefixVersion[] {
    return this.prefixes.versions(sessionId);
  }

  /**
   * Makes `prefix` the session's stable prefix. A new version is stored only
   * when its fingerprint differs from the current one's; otherwise the current
   * version is returned unchanged (reason ignored).
   * @param reason why it changed ("system changed", ...); stored as null for version 1
   * @throws CachetError SESSION_NOT_FOUND
   */
  setPrefix(sessionId: string, prefix: StablePrefix, reason: string | null): PrefixVersion {
    return this.core.write(() => this.prefixes.set(sessionId, prefix, reason));
  }

  /** The session's summary state (empty until the first compaction). */
  summary(sessionId: string): SummaryState {
    return this.prefixes.summary(sessionId);
  }

  /**
   * Replaces the session's summary state.
   * @throws CachetError SESSION_NOT_FOUND
   */
  saveSummary(sessionId: string, summary: SummaryState): void {
    this.core.write(() => this.prefixes.saveSummary(sessionId, summary));
  }

  // ── compaction ──────────────────────────────────────────────────────────

  /**
   * Stores a compaction: the new summary state (Z1 appended, covering through
   * the last collapsed message) and the compaction's row, in one write.
   * @throws CachetError SESSION_NOT_FOUND
   */
  recordCompaction(record: CompactionRecord, summary: SummaryState): void {
    this.core.write(() => {
      this.prefixes.saveSummary(record.sessionId, summary);
      this.compactionRows.record(record);
    });
  }

  /** The session's compactions, oldest first. */
  compactions(sessionId: string): CompactionRecord[] {
    return this.compactionRows.list(sessionId);
  }

  /** A stored summary by its content key (shared/compaction.md, "Content-addressed summary cache"), or null. */
  summaryText(key: string): string | null {
    return this.compactionRows.summaryText(key);
  }

  /** Stores a summary under its content key; an existing key keeps its first text. */
  saveSummaryText(key: string, text: string, model: string): void {
    this.core.write(() => this.compactionRows.saveSummaryText(key, text, model));
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
    const planned = this.planned.get(idOrName);
    if (planned) return { ...planned, messages: [] };
    // One read of the session's row serves the record, its generation settings and the log's revision check.
    const row = this.sessions.findRow(idOrName);
    const session = toSession(row);
    const prefix = this.prefixes.current(session.id);
    if (!prefix) {
      throw new CachetError("STORE", `session ${session.id} has no stable prefix yet`, { hint: "it was created but no turn was stored; start a new session" });
    }
    const generation = toGeneration(row);
    return { session, prefix, summary: this.prefixes.summary(session.id), messages: this.log.visible(session.id, row).messages.slice(), ...(generation ? { generation } : {}) };
  }

  /**
   * The visible log with storage details: a fork's parent messages up to the
   * fork point (recursively), then its own, oldest first.
   * @throws CachetError SESSION_NOT_FOUND
   */
  logEntries(sessionId: string): LogEntry[] {
    if (this.planned.has(sessionId)) return [];
    return this.log.visible(sessionId).entries.slice();
  }

  /**
   * The visible log of {@link logEntries} as stored, read as iterated, each
   * message's content JSON in its stored parts: for readers that print a
   * message without holding it whole (`sessions show`, `export`).
   * @throws CachetError SESSION_NOT_FOUND
   */
  storedLog(sessionId: string): Iterable<StoredMessage> {
    return this.log.stored(sessionId);
  }

  /**
   * Appends a message to the session's log with the next sequence number.
   * Appending the same id again with identical content is a no-op (a retried
   * write); with other content it is refused: only {@link updatePartial} may
   * change a stored message.
   * @throws CachetError SESSION_NOT_FOUND; STORE when the id is taken by another message
   */
  appendMessage(sessionId: string, message: Message): void {
    this.core.write(() => this.log.append(sessionId, message));
  }

  /**
   * Takes an unanswered prompt back out of the log: the session's last
   * message, when it is its own user message that no answer followed (its
   * request failed before any output, or its process was killed before the
   * first byte). Without this the next request would carry two user messages
   * in a row. Its ledger rows stay (their `messageId` is null).
   * @returns true when `messageId` was removed; false when it is not such a message
   *   (answered, not the last, a parent's, or a fork's branch point)
   * @throws CachetError SESSION_NOT_FOUND
   */
  rollbackUnanswered(sessionId: string, messageId: string): boolean {
    return this.core.write(() => this.log.rollbackUnanswered(sessionId, messageId));
  }

  /**
   * Replaces the content of a message that is still incomplete (a streaming
   * answer written early), and marks it complete when `incomplete` is false.
   * @throws CachetError STORE when the message does not exist in this session or is already complete
   */
  updatePartial(sessionId: string, messageId: string, content: Block[], incomplete: boolean): void {
    this.core.write(() => this.log.updatePartial(sessionId, messageId, content, incomplete));
  }

  // ── ledger ──────────────────────────────────────────────────────────────

  /**
   * Adds a ledger row. Every provider call gets its own row: a provider
   * request id is not a key (local servers and proxies reuse or omit them,
   * CASES.md case 46), so two rows with the same one are both kept.
   * The chain is stored as a delta of the session's previous request; the store
   * keeps `row.chain` as the base for the next one, so do not mutate it afterwards.
   * @throws CachetError SESSION_NOT_FOUND; STORE when a row with this id is already stored (nothing is written)
   */
  recordRequest(row: LedgerRow): void {
    this.core.write(() => this.ledgerRows.record(row));
  }

  /**
   * Deletes the session's ledger rows `ids`: the in-flight rows of a turn, in
   * the transaction that writes its final rows.
   */
  discardRequests(sessionId: string, ids: readonly string[]): void {
    this.core.write(() => this.ledgerRows.discard(sessionId, ids));
  }

  /**
   * Changes fields of a ledger row (e.g. usage and timings once the stream ends).
   * @throws CachetError SESSION_NOT_FOUND when there is no row with this id
   */
  updateRequest(id: string, patch: LedgerPatch): void {
    this.core.write(() => this.ledgerRows.update(id, patch));
  }

  /** The session's ledger rows in the order the requests started. */
  requests(sessionId: string): LedgerRow[] {
    return this.ledgerRows.requests(sessionId);
  }

  /** Ledger rows of every session (or one), started at or after `since`, in start order. */
  ledger(filter: LedgerFilter = {}): LedgerRow[] {
    return this.ledgerRows.rows(filter);
  }

  /** The ledger's stored per-request figures and their aggregation in SQL (`cachet stats`, `cachet cost`). */
  figures(): LedgerFigures {
    return new LedgerFigures(this.db, (row) => toLedgerRow(row, []));
  }

  /** The session's latest `limit` finished ledger rows (not in flight or lost, usage reported), oldest first (the live-entry search of the cacheable maximum). */
  recentRequests(sessionId: string, limit: number): LedgerRow[] {
    return this.ledgerRows.recent(sessionId, limit);
  }

  /**
   * The requests of other sessions whose cache entries a request of `current`'s
   * session could read (same provider and model: a provider caches per model,
   * shared by every session of one account): each other session's latest
   * finished row started in [`since`, `current.startedAt`], at most `sessions`
   * of them, oldest first. Rows without usage wrote nothing and are left out.
   */
  otherSessionsRequests(current: Pick<LedgerRow, "sessionId" | "provider" | "model" | "startedAt">, since: number, sessions: number): LedgerRow[] {
    return this.ledgerRows.latestOfOtherSessions(current.sessionId, current.provider, current.model, since, current.startedAt, sessions);
  }

  /** The session's latest finished ledger row (not in flight or lost, usage reported), or null. */
  lastRequest(sessionId: string): LedgerRow | null {
    return this.ledgerRows.last(sessionId);
  }

  /**
   * One ledger row by id (for `cachet why REQUEST`).
   * @throws CachetError SESSION_NOT_FOUND when no request has this id
   */
  request(id: string): LedgerRow {
    return this.ledgerRows.request(id);
  }

  // ── token memo ──────────────────────────────────────────────────────────

  /**
   * Token counts memoized by content hash (the caller folds the tokenizer into
   * the hash if counts differ between tokenizers). Missing hashes are absent.
   */
  nodeTokens(hashes: readonly string[]): Map<string, number> {
    return this.tokens.get(hashes);
  }

  /** Stores token counts by content hash. */
  saveNodeTokens(entries: Iterable<readonly [string, number]>): void {
    this.core.write(() => this.tokens.save(entries));
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
    return (await this.leases.acquire(sessionId, options, () => undefined)).release;
  }

  /**
   * {@link acquireTurn} for running a turn: the write that takes the lease also marks the session's
   * in-flight ledger rows `lost` (their process ended before the answer did: under the lease no other
   * process can be sending for the session), one write instead of two before the turn's request.
   * @returns the release function, and how many rows were marked lost
   * @throws CachetError SESSION_CONFLICT after `waitMs`; SESSION_NOT_FOUND; STORE when the file cannot be written
   */
  async beginTurn(sessionId: string, options: TurnOptions = {}): Promise<{ release: () => void; lost: number }> {
    const { release, taken } = await this.leases.acquire(sessionId, options, () => this.ledgerRows.settleInFlight(sessionId));
    return { release, lost: taken };
  }

  /**
   * Creates a session with `prefix` as its stable prefix version 1 and takes its turn lease, in one write
   * (instead of three before the turn's request): no other process sees the session before its prefix is
   * stored or without its lease. A fork (`parentId`) inherits as {@link createSession} says; its inherited
   * prefix stays when it is `prefix`.
   * @returns the session as loaded (no messages of its own yet) and the release function of its lease
   * @throws CachetError as {@link createSession}; STORE when the file cannot be written (nothing is created)
   */
  startSession(options: NewSession & { prefix: StablePrefix }, lease: TurnOptions = {}): { loaded: LoadedSession; release: () => void } {
    const { session, prefix, token } = this.core.write(() => {
      const created = this.createSession(options);
      // A fork's inherited version 1 is kept when it is `prefix`; a new session has none yet.
      const prefix = created.parentId === null ? this.prefixes.first(created.id, options.prefix, created.createdAt) : this.prefixes.set(created.id, options.prefix, null);
      const token = this.leases.takeNew(created.id, lease.leaseMs ?? DEFAULT_LEASE_MS);
      return { session: created.parentId === null ? created : this.sessions.find(created.id), prefix, token };
    });
    const release = this.holdNew(session.id, token, lease);
    if (session.parentId !== null) return { loaded: this.loadSession(session.id), release };
    return { loaded: { session, prefix, summary: { messages: [], coversThrough: null }, messages: [] }, release };
  }

  /**
   * A new session (no parent, no name) stored by this store's next write, whichever it is, in that same transaction:
   * its row, `prefix` as its stable prefix version 1 and its turn lease. A turn's next write is its prompt with the
   * request's in-flight row, so the session costs no write of its own before the request; a turn refused before it
   * (a spending limit, the context window, a hook that throws) leaves nothing to remove. Until then no other process
   * sees the session, so none can hold its lease, and reads of it here find nothing of it stored (no messages, no
   * ledger rows); `name` turns (and forks) use {@link startSession}, whose name is claimed at once.
   * @returns the session as it will be loaded (no messages yet), and the release function: once the session was
   *   stored, its lease's; before that, it drops the pending write, and nothing of the session is ever stored
   */
  beginSession(options: { model: string; prefix: StablePrefix }, lease: TurnOptions = {}): { loaded: LoadedSession; release: () => void } {
    const id = newId("s");
    const token = newId("t");
    const now = Date.now();
    const prefixText = JSON.stringify(options.prefix);
    const prefix = toPrefixVersion({ session_id: id, version: 1, fingerprint: options.prefix.fingerprint, prefix: prefixText, reason: null, created_at: now });
    const session: SessionRecord = { id, name: null, model: options.model, parentId: null, forkPoint: null, affinityKey: id, createdAt: now, updatedAt: now };
    const loaded: LoadedSession = { session, prefix, summary: { messages: [], coversThrough: null }, messages: [] };
    let release: (() => void) | undefined;
    this.planned.set(id, loaded);
    this.core.defer(id, () => {
      this.sessions.insert({ name: null, model: options.model, parentId: null, forkPoint: null }, id);
      this.prefixes.first(id, options.prefix, now, { text: prefixText, version: prefix });
      this.leases.takeNew(id, lease.leaseMs ?? DEFAULT_LEASE_MS, token);
      this.core.afterCommit(() => {
        this.planned.delete(id);
        release = this.holdNew(id, token, lease);
      });
    });
    return {
      loaded: { ...loaded, messages: [] },
      release: () => {
        if (release) return release();
        this.core.cancelDeferred(id);
        this.planned.delete(id);
      },
    };
  }

  /** Holds the lease of a session this process just created (and committed): it has no ledger rows yet. */
  private holdNew(sessionId: string, token: string, lease: TurnOptions): () => void {
    const release = this.leases.hold(sessionId, token, lease);
    this.ledgerRows.created(sessionId, token);
    return release;
  }
}
