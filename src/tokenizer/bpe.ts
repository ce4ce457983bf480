/**
 * Counts the tokens of a byte-pair encoding (tiktoken's scheme): the text is
 * split into pieces by the encoding's pre-tokenizer pattern, each piece is
 * encoded as UTF-8 (a lone surrogate as U+FFFD, as TextEncoder does), a piece
 * that is itself a token counts one, and any other piece is merged from
 * single bytes, always merging the adjacent pair of lowest rank (the leftmost
 * of equals) until no adjacent pair is a token.
 *
 * Special tokens (`<|endoftext|>` and the like) are not recognized: their
 * text is counted as ordinary text, as a provider does with message content.
 */
import type { RankTable } from "./rank-table.ts";

/**
 * The o200k_base pre-tokenizer (the GPT-4o/GPT-5 encoding), as published in
 * tiktoken's `o200k_base` definition.
 * @see https://github.com/openai/tiktoken/blob/main/tiktoken_ext/openai_public.py
 */
export const O200K_PATTERN = [
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
].join("|");

/** Merged pieces remembered per counter; the memo is emptied when it reaches this many. */
const MEMO_LIMIT = 50_000;

/**
 * A counter of tokens for `ranks` and the pre-tokenizer `pattern` (a regular
 * expression source, compiled with the `u` flag; none of its alternatives may
 * match the empty string). The counter is synchronous and keeps a small memo
 * of merged pieces (words outside the vocabulary recur).
 */
export function bpeCounter(ranks: RankTable, pattern: string): (text: string) => number {
  // Pieces are found by a sticky test at the end of the last one, which makes no match array and no piece string
  // (counting a 64 Ki-character sample of non-ASCII text left megabytes of both behind); the global search finds
  // the next piece only where no piece starts at that end (a character the pattern does not match is skipped, as
  // tiktoken's findall skips it), which o200k's pattern never leaves.
  const split = new RegExp(pattern, "gu");
  const piece = new RegExp(pattern, "uy");
  const memo = new Map<string, number>();
  let bytes = new Uint8Array(1024);
  let starts = new Int32Array(1024);
  let pairRanks = new Int32Array(1024);
  let wellFormed = true;

  /** Writes `text[from .. to)` as UTF-8 into `bytes` (grown as needed); returns its length and sets `wellFormed`. */
  function encode(text: string, from: number, to: number): number {
    if (bytes.length < (to - from) * 3) bytes = new Uint8Array((to - from) * 3);
    wellFormed = true;
    let n = 0;
    for (let i = from; i < to; i++) {
      let c = text.charCodeAt(i);
      if (c < 0x80) {
        bytes[n++] = c;
        continue;
      }
      if (c < 0x800) {
        bytes[n++] = 0xc0 | (c >> 6);
        bytes[n++] = 0x80 | (c & 0x3f);
        continue;
      }
      if (c >= 0xd8_00 && c <= 0xdf_ff) {
        const next = i + 1 < to ? text.charCodeAt(i + 1) : Number.NaN;
        if (c <= 0xdb_ff && next >= 0xdc_00 && next <= 0xdf_ff) {
          const cp = 0x1_00_00 + ((c - 0xd8_00) << 10) + (next - 0xdc_00);
          i++;
          bytes[n++] = 0xf0 | (cp >> 18);
          bytes[n++] = 0x80 | ((cp >> 12) & 0x3f);
          bytes[n++] = 0x80 | ((cp >> 6) & 0x3f);
          bytes[n++] = 0x80 | (cp & 0x3f);
          continue;
        }
        wellFormed = false;
        c = 0xff_fd;
      }
      bytes[n++] = 0xe0 | (c >> 12);
      bytes[n++] = 0x80 | ((c >> 6) & 0x3f);
      bytes[n++] = 0x80 | (c & 0x3f);
    }
    return n;
  }

  /** Rank of the pair of parts starting at part `i`, or -1 (never merged) when it is no token or there is no next part. */
  function pairRank(parts: number, i: number): number {
    return i + 2 < parts ? ranks.rankOf(bytes, starts[i]!, starts[i + 2]!) : -1;
  }

  /** Tokens the BPE merge of `bytes[0 .. length)` yields. */
  function merge(length: number): number {
    if (starts.length <= length) {
      starts = new Int32Array(length + 1);
      pairRanks = new Int32Array(length + 1);
    }
    // Part i is bytes[starts[i] .. starts[i + 1]); pairRanks[i] is the rank of parts i and i + 1 merged.
    let parts = length + 1;
    for (let i = 0; i < parts; i++) starts[i] = i;
    for (let i = 0; i < parts; i++) pairRanks[i] = pairRank(parts, i);
    while (parts > 2) {
      let lowest = -1;
      let at = -1;
      for (let i = 0; i < parts - 2; i++) {
        const rank = pairRanks[i]!;
        if (rank !== -1 && (lowest === -1 || rank < lowest)) {
          lowest = rank;
          at = i;
        }
      }
      if (at === -1) break;
      starts.copyWithin(at + 1, at + 2, parts);
      pairRanks.copyWithin(at, at + 1, parts);
      parts--;
      pairRanks[at] = pairRank(parts, at);
      if (at > 0) pairRanks[at - 1] = pairRank(parts, at - 1);
    }
    return parts - 1;
  }

  /** Tokens of the piece `text[from .. to)`; only a piece that is no token becomes a string (the memo's key). */
  function countPiece(text: string, from: number, to: number): number {
    const length = encode(text, from, to);
    if (length === 1 || (wellFormed && ranks.rankOf(bytes, 0, length) !== -1)) return 1;
    const piece = text.slice(from, to);
    const known = memo.get(piece);
    if (known !== undefined) return known;
    const tokens = merge(length);
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(piece, tokens);
    return tokens;
  }

  return (text) => {
    let tokens = 0;
    for (let at = 0; at < text.length; ) {
      piece.lastIndex = at;
      if (piece.test(text)) {
        tokens += countPiece(text, at, piece.lastIndex);
        at = piece.lastIndex;
        continue;
      }
      split.lastIndex = at;
      const match = split.exec(text);
      if (match === null) break;
      at = match.index + match[0].length;
      tokens += countPiece(text, match.index, at);
    }
    return tokens;
  };
}
