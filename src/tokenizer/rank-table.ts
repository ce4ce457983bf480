/**
 * The packed form of a BPE vocabulary (token byte strings → ranks) that the
 * binary embeds, and the hash table read from it. Loading is a few typed-array
 * loops with no object per token: building a `Map` of 200,000 strings took
 * about 430 ms per process, and parsing them from JSON 160 ms more.
 *
 * Packed layout:
 *   4 bytes  MAGIC (little-endian)
 *   4 bytes  token count n (little-endian)
 *   n bytes  the length of each token, in rank order (1..255)
 *   the tokens' bytes, concatenated in rank order
 * The hash table is built when the file is read rather than stored: it would
 * add 2 MB to a binary near its size ceiling, and building it takes a few ms.
 *
 * Written at build time by build/tokenizer-data.ts with {@link packRanks}.
 */

const MAGIC = 0x6b_70_65_62; // "bepk"
const HEADER_BYTES = 8;

/** Ranks looked up by byte string. */
export interface RankTable {
  /** Tokens in the vocabulary (ranks are 0 .. size - 1). */
  readonly size: number;
  /**
   * The rank of the token whose bytes are `bytes[from .. to)`, or -1 when no
   * token has exactly those bytes.
   */
  rankOf(bytes: Uint8Array, from: number, to: number): number;
}

/**
 * A hash of `bytes[from .. to)` for slot indexing: FNV-1a over its length, its
 * first and last four bytes and its middle byte (all of a token up to 9 bytes
 * long). Bounded work per key keeps building the table at load time cheap.
 */
function hashBytes(bytes: Uint8Array, from: number, to: number): number {
  const length = to - from;
  let h = Math.imul(0x81_1c_9d_c5 ^ length, 0x01_00_01_93);
  const head = Math.min(to, from + 4);
  for (let i = from; i < head; i++) h = Math.imul(h ^ bytes[i]!, 0x01_00_01_93);
  for (let i = Math.max(head, to - 4); i < to; i++) h = Math.imul(h ^ bytes[i]!, 0x01_00_01_93);
  h = Math.imul(h ^ bytes[from + (length >> 1)]!, 0x01_00_01_93);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Packs tokens, given in rank order, into the layout above.
 * @throws Error when a token is empty or longer than 255 bytes.
 */
export function packRanks(tokens: readonly Uint8Array[]): Uint8Array {
  const byteLength = tokens.reduce((sum, t) => sum + t.length, 0);
  const out = new Uint8Array(HEADER_BYTES + tokens.length + byteLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, tokens.length, true);
  let at = HEADER_BYTES + tokens.length;
  tokens.forEach((token, rank) => {
    if (token.length === 0 || token.length > 255) throw new Error(`token ${rank} has ${token.length} bytes; 1 to 255 can be packed`);
    out[HEADER_BYTES + rank] = token.length;
    out.set(token, at);
    at += token.length;
  });
  return out;
}

/**
 * Reads a buffer written by {@link packRanks} into a hash table (open
 * addressing with linear probing, at most half full) over its bytes (no copy).
 * @throws Error when the buffer is not in that layout (a broken or stale build),
 *   or when two tokens have the same bytes (a lookup could not tell them apart).
 */
export function readRanks(packed: Uint8Array): RankTable {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  if (packed.length < HEADER_BYTES || view.getUint32(0, true) !== MAGIC) throw new Error("tokenizer ranks: not a packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  const count = view.getUint32(4, true);
  const lengths = packed.subarray(HEADER_BYTES, HEADER_BYTES + count);
  const tokens = packed.subarray(HEADER_BYTES + count);
  const offsets = new Uint32Array(count + 1);
  for (let rank = 0; rank < count; rank++) offsets[rank + 1] = offsets[rank]! + lengths[rank]!;
  if (lengths.length !== count || offsets[count] !== tokens.length) throw new Error("tokenizer ranks: truncated packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  let slotBits = 1;
  while (1 << slotBits < count * 2) slotBits++;
  const mask = (1 << slotBits) - 1;
  // Rank + 1 per slot; 0 is empty.
  const slots = new Uint32Array(1 << slotBits);

  function rankOf(bytes: Uint8Array, from: number, to: number): number {
    const length = to - from;
    for (let slot = hashBytes(bytes, from, to) & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[slot]!;
      if (entry === 0) return -1;
      const start = offsets[entry - 1]!;
      if (offsets[entry]! - start !== length) continue;
      let i = 0;
      while (i < length && tokens[start + i] === bytes[from + i]) i++;
      if (i === length) return entry - 1;
    }
  }

  function equalAt(aFrom: number, aTo: number, bFrom: number, bTo: number): boolean {
    if (aTo - aFrom !== bTo - bFrom) return false;
    for (let i = 0; i < aTo - aFrom; i++) if (tokens[aFrom + i] !== tokens[bFrom + i]) return false;
    return true;
  }

  for (let rank = 0; rank < count; rank++) {
    const start = offsets[rank]!;
    const end = offsets[rank + 1]!;
    let slot = hashBytes(tokens, start, end) & mask;
    for (; slots[slot] !== 0; slot = (slot + 1) & mask) {
      const other = slots[slot]! - 1;
      if (equalAt(offsets[other]!, offsets[other + 1]!, start, end)) throw new Error(`tokenizer ranks: token ${rank} repeats the bytes of token ${other}; rebuild with \`bun build/tokenizer-data.ts\``);
    }
    slots[slot] = rank + 1;
  }
  return { size: count, rankOf };
}
