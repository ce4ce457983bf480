/**
 * The append-only message log. A fork's visible log is its parent's messages up
 * to the fork point (rows shared, not copied), then its own; it is cached per
 * process and brought up to date by reading only what changed.
 */
import type { Block, Message } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { keepRecent, sessionNotFound, type StoreCore } from "./core.ts";
import { contentParts, eachPart, joinParts, PART_CHARS, writeNewParts, writeParts } from "./message-parts.ts";
import { toEntry, type MessageRow, type SessionRow } from "./rows.ts";

/** A log message with where it is stored: the owning session (a fork's parent for shared messages) and its sequence number there. */
export interface LogEntry {
  sessionId: string;
  /** Per-session sequence number, 1-based, contiguous. */
  seq: number;
  /** Unix epoch ms when the message was appended. */
  createdAt: number;
  message: Message;
}

/**
 * A message of a visible log as stored, its content JSON left in the parts it
 * is stored in (message-parts.ts): a reader that prints a huge message holds
 * one part of it at a time.
 */
export interface StoredMessage {
  /** The owning session (a fork's parent for shared messages). */
  sessionId: string;
  seq: number;
  /** Unix epoch ms when the message was appended. */
  createdAt: number;
  id: string;
  role: Message["role"];
  incomplete: boolean;
  /** The first part of the content JSON (the whole JSON when `parts` is 0). */
  firstPart: string;
  /** Parts after the first. */
  parts: number;
  /** The content JSON's parts in order, each read from the store as it is reached; joined, `JSON.stringify(content)`. */
  contentParts(): Iterable<string>;
}

/** The cached visible log of a session. Shared: callers copy. */
export interface VisibleLog {
  entries: LogEntry[];
  /** `entries[i].message`, kept alongside so a load copies one array instead of mapping. */
  messages: Message[];
}

/** Messages of every session. Writes must run inside {@link StoreCore.write}. */
export class MessageLog {
  private readonly segmentCache: Map<string, Segment[]>;
  private readonly logCache: Map<string, CachedLog>;

  constructor(private readonly core: StoreCore) {
    // Kept with the connection (StoreCore.kept): segments never change, and a cached log is checked against its sessions' revisions.
    this.segmentCache = core.kept("log.segments", () => new Map());
    this.logCache = core.kept("log.visible", () => new Map());
  }

  /** Messages in the session's visible log. */
  count(sessionId: string): number {
    let messages = 0;
    for (const segment of this.segments(sessionId)) {
      messages += (this.core.db.query("SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND seq <= ?").get(segment.sessionId, segment.maxSeq) as { n: number }).n;
    }
    return messages;
  }

  append(sessionId: string, message: Message): void {
    const incomplete = message.incomplete ? 1 : 0;
    this.core.touch(sessionId);
    const parts = contentParts(message.content);
    const first = parts.next();
    // The row first, numbered after the session's last: a message id already stored inserts nothing.
    const { changes } = this.core.db
      .query("INSERT INTO messages (session_id, seq, id, role, content, incomplete, created_at) VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?1), ?2, ?3, ?4, ?5, ?6) ON CONFLICT (session_id, id) DO NOTHING")
      .run(sessionId, message.id, message.role, first.done ? "" : first.value, incomplete, Date.now());
    if (changes === 0) {
      parts.return(undefined);
      this.checkSame(sessionId, message, incomplete);
      return;
    }
    // A content larger than one part: the rest in message_parts (message-parts.ts).
    const rest = writeNewParts(this.core.db, sessionId, message.id, parts);
    if (rest > 0) this.core.db.query("UPDATE messages SET parts = ? WHERE session_id = ? AND id = ?").run(rest, sessionId, message.id);
  }

  /** An append of a message id already stored: a repeat of the same message is a no-op. @throws CachetError STORE when it differs */
  private checkSame(sessionId: string, message: Message, incomplete: number): void {
    const existing = this.core.db.query("SELECT role, content, incomplete, parts FROM messages WHERE session_id = ? AND id = ?").get(sessionId, message.id) as Pick<MessageRow, "role" | "content" | "incomplete" | "parts">;
    const same = existing.role === message.role && existing.incomplete === incomplete && joinParts(this.core.db, sessionId, message.id, existing.content, existing.parts) === [...contentParts(message.content)].join("");
    if (same) return;
    throw new CachetError("STORE", `message ${message.id} is already stored in session ${sessionId} with other content`, {
      hint: "stored messages never change; append a new message with a new id",
    });
  }

  /** See Store.rollbackUnanswered. */
  rollbackUnanswered(sessionId: string, messageId: string): boolean {
    const last = this.core.db.query("SELECT id, role, seq FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1").get(sessionId) as { id: string; role: string; seq: number } | null;
    if (!last || last.id !== messageId || last.role !== "user") return false;
    if (this.core.db.query("SELECT 1 FROM sessions WHERE parent_id = ? AND fork_point = ?").get(sessionId, messageId)) return false;
    this.core.touch(sessionId);
    this.core.db.query("DELETE FROM messages WHERE session_id = ? AND seq = ?").run(sessionId, last.seq);
    writeParts(this.core.db, sessionId, messageId, []);
    this.logCache.delete(sessionId);
    return true;
  }

  updatePartial(sessionId: string, messageId: string, content: Block[], incomplete: boolean): void {
    const { first, rest } = writeParts(this.core.db, sessionId, messageId, contentParts(content));
    const { changes } = this.core.db
      .query("UPDATE messages SET content = ?, parts = ?, incomplete = ? WHERE session_id = ? AND id = ? AND incomplete = 1")
      .run(first, rest, incomplete ? 1 : 0, sessionId, messageId);
    if (changes === 0) {
      throw new CachetError("STORE", `message ${messageId} of session ${sessionId} is not an incomplete message`, {
        hint: "only a streaming answer stored with `incomplete: true` can be updated",
      });
    }
    this.core.touch(sessionId);
  }

  /**
   * The cached visible log, brought up to date. Only the session's revisions
   * are compared; when only the session's own rows changed, just its new rows
   * and the rows that were incomplete are read. The result is shared: callers copy.
   * @param own the session's row when the caller has just read it (its revision and parent are not read again)
   * @throws CachetError SESSION_NOT_FOUND
   */
  visible(sessionId: string, own?: Pick<SessionRow, "rev" | "parent_id" | "fork_point">): VisibleLog {
    const segments = this.segments(sessionId, own);
    const revs = segments.map((segment) => (own && segment.sessionId === sessionId ? own.rev : this.core.rev(segment.sessionId)));
    const cached = this.logCache.get(sessionId);
    if (cached) keepRecent(this.logCache, sessionId, cached, CACHED_LOGS);
    if (cached && sameRevs(cached.revs, revs)) return cached;
    if (cached && sameRevs(cached.revs.slice(0, -1), revs.slice(0, -1)) && this.lastOwnStillThere(sessionId, cached)) {
      this.refreshOwn(sessionId, cached);
      cached.revs = revs;
      return cached;
    }
    const log: CachedLog = { revs, entries: [], messages: [], incomplete: [], lastOwnSeq: 0, chars: 0 };
    for (const segment of segments) {
      for (const row of this.core.db.query("SELECT * FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq").all(segment.sessionId, segment.maxSeq) as MessageRow[]) {
        push(log, this.entry(row), sessionId, storedChars(row));
      }
    }
    keepRecent(this.logCache, sessionId, log, CACHED_LOGS);
    return log;
  }

  /**
   * The session's visible log as stored (the messages of {@link visible}, in
   * order), read row by row and never cached: what each holds is a part.
   * @throws CachetError SESSION_NOT_FOUND
   */
  *stored(sessionId: string): Generator<StoredMessage> {
    const db = this.core.db;
    for (const segment of this.segments(sessionId)) {
      const rows = db.query("SELECT * FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq").iterate(segment.sessionId, segment.maxSeq) as IterableIterator<MessageRow>;
      for (const row of rows) {
        yield {
          sessionId: row.session_id,
          seq: row.seq,
          createdAt: row.created_at,
          id: row.id,
          role: row.role as Message["role"],
          incomplete: row.incomplete !== 0,
          firstPart: row.content,
          parts: row.parts,
          contentParts: () => eachPart(db, row.session_id, row.id, row.content, row.parts),
        };
      }
    }
  }

  /** A row as a log entry, its content parts joined. */
  private entry(row: MessageRow): LogEntry {
    return toEntry(row.parts === 0 ? row : { ...row, content: joinParts(this.core.db, row.session_id, row.id, row.content, row.parts) });
  }

  /** Drops what this process cached about a removed session. */
  forget(sessionId: string): void {
    this.segmentCache.delete(sessionId);
    this.logCache.delete(sessionId);
  }

  /**
   * Drops the cached logs too large to keep between commands (a huge piped input is held by its log): a
   * resident process keeps its connection, and with it the cache, but not a command's peak memory.
   */
  releaseLarge(): void {
    for (const [sessionId, log] of this.logCache) if (log.chars > KEPT_LOG_CHARS) this.logCache.delete(sessionId);
  }

  /**
   * Where a session's visible log lives: (session, last seq) ranges, oldest
   * first. Fixed at creation (parent and fork point never change), so cached.
   */
  private segments(sessionId: string, known?: Pick<SessionRow, "parent_id" | "fork_point">): Segment[] {
    const cached = this.segmentCache.get(sessionId);
    if (cached) return cached;
    const row = known ?? (this.core.db.query("SELECT parent_id, fork_point FROM sessions WHERE id = ?").get(sessionId) as Pick<SessionRow, "parent_id" | "fork_point"> | null);
    if (!row) throw sessionNotFound(sessionId);
    const own: Segment = { sessionId, maxSeq: Number.MAX_SAFE_INTEGER };
    let result: Segment[] = [own];
    if (row.parent_id !== null && row.fork_point !== null) {
      const inherited = this.segments(row.parent_id);
      const at = this.locate(inherited, row.fork_point);
      result = [...inherited.slice(0, at.index), { sessionId: inherited[at.index]!.sessionId, maxSeq: at.seq }, own];
    }
    keepRecent(this.segmentCache, sessionId, result, CACHED_SEGMENTS);
    return result;
  }

  private locate(segments: Segment[], messageId: string): { index: number; seq: number } {
    for (let index = segments.length - 1; index >= 0; index--) {
      const segment = segments[index]!;
      const hit = this.core.db.query("SELECT seq FROM messages WHERE session_id = ? AND id = ?").get(segment.sessionId, messageId) as { seq: number } | null;
      if (hit && hit.seq <= segment.maxSeq) return { index, seq: hit.seq };
    }
    throw this.core.inconsistent(`fork point ${messageId} is missing`);
  }

  /** False when another process took the last own message back out (see rollbackUnanswered): the cache must be rebuilt. */
  private lastOwnStillThere(sessionId: string, log: CachedLog): boolean {
    const last = log.entries.findLast((entry) => entry.sessionId === sessionId);
    if (!last) return true;
    const row = this.core.db.query("SELECT id FROM messages WHERE session_id = ? AND seq = ?").get(sessionId, last.seq) as { id: string } | null;
    return row?.id === last.message.id;
  }

  /** Re-reads the own rows that were incomplete, and appends the own rows stored since. */
  private refreshOwn(sessionId: string, log: CachedLog): void {
    const stillIncomplete: number[] = [];
    for (const index of log.incomplete) {
      const entry = this.entry(this.core.db.query("SELECT * FROM messages WHERE session_id = ? AND seq = ?").get(sessionId, log.entries[index]!.seq) as MessageRow);
      log.entries[index] = entry;
      log.messages[index] = entry.message;
      if (entry.message.incomplete) stillIncomplete.push(index);
    }
    log.incomplete = stillIncomplete;
    for (const row of this.core.db.query("SELECT * FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq").all(sessionId, log.lastOwnSeq) as MessageRow[]) {
      push(log, this.entry(row), sessionId, storedChars(row));
    }
  }
}

/** Sessions whose visible log a connection keeps: the few a resident process serves in turn (each log is held whole). */
const CACHED_LOGS = 16;

/** Content characters beyond which a cached log is not kept between commands (see MessageLog.releaseLarge). */
const KEPT_LOG_CHARS = 4 << 20;

/** Sessions whose segments a connection keeps (a few ranges each). */
const CACHED_SEGMENTS = 256;

interface Segment {
  sessionId: string;
  /** Last sequence number of this session visible here. */
  maxSeq: number;
}

interface CachedLog extends VisibleLog {
  /** Revision of each segment's session when `entries` were read. */
  revs: number[];
  /** Indexes of the session's own entries that were incomplete (they may still be updated). */
  incomplete: number[];
  /** Highest own sequence number read. */
  lastOwnSeq: number;
  /** Content characters of the rows read into it (at most {@link PART_CHARS} per part after the first): what holding it costs, roughly. */
  chars: number;
}

/** A row's content characters, its parts after the first counted whole. */
function storedChars(row: MessageRow): number {
  return row.content.length + row.parts * PART_CHARS;
}

function push(log: CachedLog, entry: LogEntry, ownSessionId: string, chars: number): void {
  log.chars += chars;
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
