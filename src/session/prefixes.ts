/** Stable prefix versions and the summary state of a session. */
import type { Message, StablePrefix, SummaryState } from "../context/types.ts";
import { keepRecent, type StoreCore } from "./core.ts";
import { deepFreeze, toPrefixVersion, type PrefixRow } from "./rows.ts";
import type { PrefixVersion } from "./types.ts";

/** Prefix versions (cached per process: a version never changes) and summaries. Writes must run inside {@link StoreCore.write}. */
export class PrefixTable {
  private readonly cache: Map<string, PrefixVersion>;
  /**
   * Summary states read lately, by session, with the stored text they were
   * parsed from. A turn loads its session more than once, and parsing the
   * summary again would give its messages new identities: every memo keyed on
   * them (the adapters' render memo, the per-turn checks over the log) would
   * then start over on every turn of a compacted session.
   */
  private readonly summaries: Map<string, { text: string; coversThrough: string | null; state: SummaryState }>;

  constructor(private readonly core: StoreCore) {
    // Kept with the connection (StoreCore.kept): a version never changes, and a summary is checked against its stored text.
    this.cache = core.kept("prefixes.versions", () => new Map());
    this.summaries = core.kept("prefixes.summaries", () => new Map());
  }

  current(sessionId: string): PrefixVersion | null {
    const row = this.core.db.query("SELECT version FROM prefixes WHERE session_id = ? ORDER BY version DESC LIMIT 1").get(sessionId) as { version: number } | null;
    if (!row) return null;
    const key = `${sessionId}:${row.version}`;
    const cached = this.cache.get(key);
    if (cached) {
      keepRecent(this.cache, key, cached, CACHED_VERSIONS);
      return cached;
    }
    const full = this.core.db.query("SELECT * FROM prefixes WHERE session_id = ? AND version = ?").get(sessionId, row.version) as PrefixRow;
    const version = toPrefixVersion(full);
    keepRecent(this.cache, key, version, CACHED_VERSIONS);
    return version;
  }

  versions(sessionId: string): PrefixVersion[] {
    return (this.core.db.query("SELECT * FROM prefixes WHERE session_id = ? ORDER BY version").all(sessionId) as PrefixRow[]).map(toPrefixVersion);
  }

  set(sessionId: string, prefix: StablePrefix, reason: string | null): PrefixVersion {
    const current = this.current(sessionId);
    if (current && current.prefix.fingerprint === prefix.fingerprint) return current;
    this.core.touch(sessionId);
    const version = (current?.version ?? 0) + 1;
    this.core.db
      .query("INSERT INTO prefixes (session_id, version, fingerprint, prefix, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(sessionId, version, prefix.fingerprint, JSON.stringify(prefix), version === 1 ? null : reason, Date.now());
    return this.current(sessionId)!;
  }

  /**
   * Stores `prefix` as version 1 of a session created in the running write (no version yet, nobody has
   * read it): the version is made from what is written, not read back.
   * @param made its JSON text and version when the caller made them already (Store.beginSession, which
   *   loads the session before it is written): not made twice for a large system prompt or tool list
   */
  first(sessionId: string, prefix: StablePrefix, now: number, made?: { text: string; version: PrefixVersion }): PrefixVersion {
    const text = made?.text ?? JSON.stringify(prefix);
    this.core.db.query("INSERT INTO prefixes (session_id, version, fingerprint, prefix, reason, created_at) VALUES (?, 1, ?, ?, NULL, ?)").run(sessionId, prefix.fingerprint, text, now);
    const version = made?.version ?? toPrefixVersion({ session_id: sessionId, version: 1, fingerprint: prefix.fingerprint, prefix: text, reason: null, created_at: now });
    keepRecent(this.cache, `${sessionId}:1`, version, CACHED_VERSIONS);
    return version;
  }

  /** The session's summary state; the same frozen object while its stored text stays the same. */
  summary(sessionId: string): SummaryState {
    const row = this.core.db.query("SELECT messages, covers_through FROM summaries WHERE session_id = ?").get(sessionId) as { messages: string; covers_through: string | null } | null;
    if (!row) return { messages: [], coversThrough: null };
    const kept = this.summaries.get(sessionId);
    if (kept && kept.text === row.messages && kept.coversThrough === row.covers_through) {
      // Used again: kept as recently used.
      this.summaries.delete(sessionId);
      this.summaries.set(sessionId, kept);
      return kept.state;
    }
    const state = deepFreeze({ messages: JSON.parse(row.messages) as Message[], coversThrough: row.covers_through });
    this.summaries.set(sessionId, { text: row.messages, coversThrough: row.covers_through, state });
    if (this.summaries.size > SUMMARIES) this.summaries.delete(this.summaries.keys().next().value!);
    return state;
  }

  saveSummary(sessionId: string, summary: SummaryState): void {
    this.core.touch(sessionId);
    this.core.db
      .query("INSERT INTO summaries (session_id, messages, covers_through) VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages, covers_through = excluded.covers_through")
      .run(sessionId, JSON.stringify(summary.messages), summary.coversThrough);
  }

  /**
   * A fork starts with the parent's current prefix as its version 1, and its
   * summary when the fork sees everything the summary covers.
   * @param parentLogIds the parent's visible message ids, oldest first
   */
  inherit(id: string, parentId: string, forkPoint: string | null, parentLogIds: readonly string[], now: number): void {
    const prefix = this.current(parentId);
    if (prefix) {
      this.core.db
        .query("INSERT INTO prefixes (session_id, version, fingerprint, prefix, reason, created_at) VALUES (?, 1, ?, ?, NULL, ?)")
        .run(id, prefix.prefix.fingerprint, JSON.stringify(prefix.prefix), now);
    }
    const summary = this.summary(parentId);
    if (summary.messages.length === 0 && summary.coversThrough === null) return;
    const visible = forkPoint === null ? 0 : parentLogIds.indexOf(forkPoint) + 1;
    const covered = summary.coversThrough === null ? 0 : parentLogIds.indexOf(summary.coversThrough) + 1;
    if (covered > 0 && covered <= visible) {
      this.core.db.query("INSERT INTO summaries (session_id, messages, covers_through) VALUES (?, ?, ?)").run(id, JSON.stringify(summary.messages), summary.coversThrough);
    }
  }

  /** Drops what this process cached about a removed session. */
  forget(sessionId: string): void {
    this.summaries.delete(sessionId);
    for (const key of this.cache.keys()) if (key.startsWith(`${sessionId}:`)) this.cache.delete(key);
  }
}

/** Prefix versions a connection keeps (see PrefixTable.cache): the current ones of the sessions a resident process serves in turn. */
const CACHED_VERSIONS = 64;

/** Sessions whose summary state a process keeps (see PrefixTable.summaries). */
const SUMMARIES = 16;
