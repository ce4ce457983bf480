/**
 * JSON text in bounded pieces: a request holding a 500 MB input is hashed,
 * stored and sent without its JSON ever existing as one string (each whole
 * copy of it costs as much memory as the input, and JSON.stringify's buffer
 * transiently twice that).
 *
 * The pieces, joined, are exactly `JSON.stringify(value)` (or
 * `canonicalJson(value)`): only strings of at least `sliceChars` characters
 * and the objects and arrays around them are written here; every other
 * subtree is one piece written by the serializer itself.
 */
import { canonicalJson } from "./canonical-json.ts";

/** Strings from this many UTF-16 code units on are written in slices of this length. */
export const SLICE_CHARS = 1 << 20;

/**
 * A full garbage collection runs after each this fraction of a long string
 * written (but never within half a {@link SLICE_CHARS} of the last): the
 * escaped slices the consumer is done with stay a small fraction of the input
 * (with text beyond Latin-1 each slice leaves about five bytes a character
 * behind: its escaped UTF-16 copy, the consumer's UTF-8 copy).
 */
const COLLECTIONS_PER_STRING = 16;

/** How to write the pieces. */
export interface PieceOptions {
  /** Sorted keys (`canonicalJson`) instead of insertion order (`JSON.stringify`). */
  canonical?: boolean;
  /** Slice length, code units (default {@link SLICE_CHARS}); tests use small ones. */
  sliceChars?: number;
  /** Full garbage collections while one long string is written (default {@link COLLECTIONS_PER_STRING}). */
  collections?: number;
  /** Fewest code units written between two of them (default half a {@link SLICE_CHARS}). */
  collectAfterChars?: number;
}

/**
 * True when `value` holds a string of at least `sliceChars` code units: the
 * one case where {@link jsonPieces} yields more than one piece.
 */
export function hasLongString(value: unknown, sliceChars: number = SLICE_CHARS): boolean {
  if (typeof value === "string") return value.length >= sliceChars;
  if (value === null || typeof value !== "object") return false;
  const remembered = sliceChars === SLICE_CHARS;
  if (remembered && withoutLongString.has(value)) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (hasLongString(value[i], sliceChars)) return true;
  } else {
    for (const key in value) if (hasLongString((value as Record<string, unknown>)[key], sliceChars)) return true;
  }
  if (remembered) withoutLongString.add(value);
  return false;
}

// Objects found to hold no long string. A request's old messages are the same objects turn after turn (the adapters'
// render memo), so each is walked once, not on every request. Only the choice between one piece and several rests on
// this, never the bytes: an object changed afterwards is at worst serialized in one piece.
const withoutLongString = new WeakSet<object>();

/**
 * The JSON text of `value` (plain JSON data: objects, arrays, strings,
 * numbers, booleans, null; `undefined` members dropped as JSON.stringify
 * does) as pieces of at most about 6 × `sliceChars` code units each (a slice
 * of control characters escapes to six times its length).
 * @throws TypeError as the serializer does (a cycle, a BigInt; canonical: a non-finite number).
 */
export function* jsonPieces(value: unknown, options: PieceOptions = {}): Generator<string> {
  const slice = options.sliceChars ?? SLICE_CHARS;
  const canonical = options.canonical === true;
  if (!hasLongString(value, slice)) {
    yield canonical ? canonicalJson(value) : JSON.stringify(value);
    return;
  }
  if (typeof value === "string") {
    yield '"';
    const collectEvery = Math.max(options.collectAfterChars ?? SLICE_CHARS / 2, value.length / (options.collections ?? COLLECTIONS_PER_STRING));
    let sinceCollection = 0;
    for (let from = 0; from < value.length; ) {
      let to = Math.min(from + slice, value.length);
      // A surrogate pair cut in two would be escaped as two lone surrogates (\udxxx).
      if (to < value.length && isHighSurrogate(value.charCodeAt(to - 1))) to--;
      yield JSON.stringify(value.slice(from, to)).slice(1, -1);
      sinceCollection += to - from;
      from = to;
      // Escaped slices the consumer is done with would otherwise pile up to the size of the heap (the input's) before a collection.
      if (sinceCollection >= collectEvery) {
        Bun.gc(true);
        sinceCollection = 0;
      }
    }
    yield '"';
    return;
  }
  if (Array.isArray(value)) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      const item = value[i];
      if (item === undefined || typeof item === "function" || typeof item === "symbol") yield "null";
      else yield* jsonPieces(item, options);
    }
    yield "]";
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = canonical ? Object.keys(record).sort() : Object.keys(record);
  yield "{";
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
    yield `${first ? "" : ","}${JSON.stringify(key)}:`;
    first = false;
    yield* jsonPieces(member, options);
  }
  yield "}";
}

/**
 * Bytes of `JSON.stringify(value)` in UTF-8, found without writing the JSON:
 * a long string is measured character by character, so announcing a huge
 * body's length leaves nothing behind to collect.
 * @throws TypeError as JSON.stringify does (a cycle, a BigInt).
 */
export function jsonByteLength(value: unknown, sliceChars: number = SLICE_CHARS): number {
  if (!hasLongString(value, sliceChars)) return Buffer.byteLength(JSON.stringify(value), "utf8");
  if (typeof value === "string") return escapedLength(value) + 2;
  if (Array.isArray(value)) {
    let n = 1 + Math.max(0, value.length - 1) + 1;
    for (const item of value) n += item === undefined || typeof item === "function" || typeof item === "symbol" ? 4 : jsonByteLength(item, sliceChars);
    return n;
  }
  const record = value as Record<string, unknown>;
  let n = 2;
  let members = 0;
  for (const key of Object.keys(record)) {
    const member = record[key];
    if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
    n += (members++ > 0 ? 1 : 0) + Buffer.byteLength(JSON.stringify(key), "utf8") + 1 + jsonByteLength(member, sliceChars);
  }
  return n;
}

/** UTF-8 bytes of a string's JSON escape, quotes excluded (JSON.stringify: \" \\ \b \f \n \r \t, \u00XX for other controls, \uXXXX for lone surrogates). */
function escapedLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += c >= 0x20 ? (c === 0x22 || c === 0x5c ? 2 : 1) : c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    else if (c < 0x800) n += 2;
    else if (c < 0xd800 || c > 0xdfff) n += 3;
    else if (isHighSurrogate(c) && i + 1 < text.length && isLowSurrogate(text.charCodeAt(i + 1))) {
      n += 4;
      i++;
    } else n += 6;
  }
  return n;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
