/** Stable prefix versions and the summary state of a session. */
import type { Message, StablePrefix, SummaryState } from "../context/types.ts";
import type { StoreCore } from "./core.ts";
import { toPrefixVersion, type PrefixRow } from "./rows.ts";
import type { PrefixVersion } from "./types.ts";

/** Prefix versions (cached per process: a version never changes) and summaries. Writes must run inside {@link StoreCore.write}. */
export class PrefixTable {
  private readonly cache = new Map<string, PrefixVersion>();

  constructor(private readonly core: StoreCore) {}

  current(sessionId: string): PrefixVersion | null {
    const row = this.core.db.query("SELECT version FROM prefixes WHERE session_id = ? ORDER BY version DESC LIMIT 1").get(sessionId) as { version: number } | null;
    if (!row) return null;
    const key = `${sessionId}:${row.version}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const full = this.core.db.query("SELECT * FROM prefixes WHERE session_id = ? AND version = ?").get(sessionId, row.version) as PrefixRow;
    const version = toPrefixVersion(full);
    this.cache.set(key, version);
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

  summary(sessionId: string): SummaryState {
    const row = this.core.db.query("SELECT messages, covers_through FROM summaries WHERE session_id = ?").get(sessionId) as { messages: string; covers_through: string | null } | null;
    return row ? { messages: JSON.parse(row.messages) as Message[], coversThrough: row.covers_through } : { messages: [], coversThrough: null };
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
    for (const key of this.cache.keys()) if (key.startsWith(`${sessionId}:`)) this.cache.delete(key);
  }
}
