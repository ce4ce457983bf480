/**
 * A message's content JSON stored in parts: a row holding a 500 MB input as
 * one value costs SQLite and the binding each a whole copy of it while it is
 * written. Content up to {@link PART_CHARS} is one part, stored in
 * `messages.content` as before; a larger one keeps its first part there and
 * the rest in `message_parts`, in order (`messages.parts` counts them).
 * Joined, the parts are exactly `JSON.stringify(content)`.
 */
import type { Database } from "bun:sqlite";
import type { Block } from "../context/types.ts";
import { jsonPieces } from "../wire/json-pieces.ts";

/** Schema of the parts (appended to the store's migrations). */
export const MESSAGE_PARTS_MIGRATION = `
  ALTER TABLE messages ADD COLUMN parts INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE message_parts (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    part       INTEGER NOT NULL,
    content    TEXT NOT NULL,
    PRIMARY KEY (session_id, message_id, part)
  ) WITHOUT ROWID;
`;

/**
 * A part holds at least this many UTF-16 code units of JSON, unless it is the
 * last (a long string is sliced to this length too). Each part written leaves
 * copies of it (UTF-16, UTF-8, SQLite's record) in the allocators' caches:
 * parts of 256 Ki keep those a few MB however large the message.
 */
export const PART_CHARS = 1 << 18;

/** The content JSON in parts, made as they are read: one for ordinary content (`JSON.stringify(content)`). */
export function* contentParts(content: readonly Block[]): Generator<string> {
  let part = "";
  let parts = 0;
  for (const piece of jsonPieces(content, { sliceChars: PART_CHARS })) {
    part += piece;
    if (part.length < PART_CHARS) continue;
    yield part;
    parts++;
    part = "";
  }
  if (part !== "" || parts === 0) yield part;
}

/**
 * Stores the parts after the first of a message's content JSON, replacing any
 * it had, one part in memory at a time.
 * @returns the first part (for `messages.content`) and how many followed it
 */
export function writeParts(db: Database, sessionId: string, messageId: string, parts: Iterable<string>): { first: string; rest: number } {
  db.query("DELETE FROM message_parts WHERE session_id = ? AND message_id = ?").run(sessionId, messageId);
  const each = parts[Symbol.iterator]();
  const first = each.next();
  return { first: first.done ? "" : first.value, rest: first.done ? 0 : writeNewParts(db, sessionId, messageId, each) };
}

/**
 * Stores what is left of `rest` as the parts after the first of a message
 * that has none stored (just inserted), one part in memory at a time; for
 * ordinary content there is none, and no statement runs.
 * @returns how many parts were stored
 */
export function writeNewParts(db: Database, sessionId: string, messageId: string, rest: Iterator<string>): number {
  let stored = 0;
  for (let part = rest.next(); !part.done; part = rest.next()) {
    db.query("INSERT INTO message_parts (session_id, message_id, part, content) VALUES (?, ?, ?, ?)").run(sessionId, messageId, ++stored, part.value);
  }
  return stored;
}

/** The whole content JSON of a stored message: `first` (its `messages.content`) and its `parts` more. */
export function joinParts(db: Database, sessionId: string, messageId: string, first: string, parts: number): string {
  if (parts === 0) return first;
  const rest = db.query("SELECT content FROM message_parts WHERE session_id = ? AND message_id = ? ORDER BY part").all(sessionId, messageId) as { content: string }[];
  return first + rest.map((row) => row.content).join("");
}

/**
 * The whole content JSON of a stored message as its parts, in order, one
 * part read from the store at a time: `first` (its `messages.content`) and
 * its `parts` more. Joined, exactly what {@link joinParts} returns.
 */
export function* eachPart(db: Database, sessionId: string, messageId: string, first: string, parts: number): Generator<string> {
  yield first;
  if (parts === 0) return;
  const rows = db.query("SELECT content FROM message_parts WHERE session_id = ? AND message_id = ? ORDER BY part").iterate(sessionId, messageId) as IterableIterator<{ content: string }>;
  for (const row of rows) yield row.content;
}
