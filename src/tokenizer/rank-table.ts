/**
 * The packed form of a BPE vocabulary (token byte strings → ranks) that the
 * binary embeds: a hash table made at build time, so that loading is one
 * native decompression and a few typed-array views, with no JavaScript loop
 * over the tokens. Building a `Map` of 200,000 strings took about 430 ms per
 * process (and parsing them from JSON 160 ms more); building even a typed-array
 * hash table at load took 60-100 ms, as a loop of 200,000 iterations runs
 * mostly before the JIT has warmed up. The one loop left sums the lengths.
 *
 * Layout, zstd-compressed as a whole (3.7 MB → 1.4 MB for o200k: stored raw it
 * would take the binary over its size ceiling; unpacking costs a few ms):
 *   4 words (little-endian uint32): MAGIC, token count n, slot bits k, byte length b
 *   slots:   2^k words, an open-addressing (linear probing) table at most half
 *            full, of rank + 1 keyed by {@link hashBytes}; 0 is an empty slot
 *   lengths: n bytes, the length of each token in rank order (1..255; offsets
 *            compress to twice the size)
 *   bytes:   the tokens' bytes, concatenated in rank order (b bytes)
 *
 * Written at build time by build/tokenizer-data.ts with {@link packRanks}.
 */

const MAGIC = 0x6b_70_65_62; // "bepk"
const HEADER_WORDS = 4;

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

/** FNV-1a (32-bit) of `bytes[from .. to)`, its high bits folded into its low ones for slot indexing. */
function hashBytes(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x81_1c_9d_c5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, 0x01_00_01_93);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Packs tokens, given in rank order, into the compressed layout above.
 * @throws Error when a token is empty or longer than 255 bytes, or when two
 *   tokens have the same bytes (a lookup could not tell them apart).
 */
export function packRanks(tokens: readonly Uint8Array[]): Uint8Array {
  let slotBits = 1;
  while (1 << slotBits < tokens.length * 2) slotBits++;
  const byteLength = tokens.reduce((sum, t) => sum + t.length, 0);
  const words = HEADER_WORDS + (1 << slotBits);
  const out = new Uint8Array(words * 4 + tokens.length + byteLength);
  const head = new Uint32Array(out.buffer, 0, words);
  head.set([MAGIC, tokens.length, slotBits, byteLength]);
  const slots = head.subarray(HEADER_WORDS);
  const lengths = out.subarray(words * 4, words * 4 + tokens.length);
  const bytes = out.subarray(words * 4 + tokens.length);
  const offsets = new Uint32Array(tokens.length + 1);
  let at = 0;
  tokens.forEach((token, rank) => {
    if (token.length === 0 || token.length > 255) throw new Error(`token ${rank} has ${token.length} bytes; 1 to 255 can be packed`);
    lengths[rank] = token.length;
    offsets[rank] = at;
    bytes.set(token, at);
    at += token.length;
  });
  offsets[tokens.length] = at;
  const table = viewTable(offsets, slots, bytes, slotBits);
  const mask = (1 << slotBits) - 1;
  tokens.forEach((token, rank) => {
    const other = table.rankOf(token, 0, token.length);
    if (other !== -1) throw new Error(`token ${rank} repeats the bytes of token ${other}`);
    let slot = hashBytes(token, 0, token.length) & mask;
    while (slots[slot] !== 0) slot = (slot + 1) & mask;
    slots[slot] = rank + 1;
  });
  return Bun.zstdCompressSync(out, { level: 19 });
}

/**
 * Unpacks a buffer written by {@link packRanks}.
 * @throws Error when the buffer is not in that layout (a broken or stale build).
 */
export function readRanks(packed: Uint8Array): RankTable {
  let raw: Uint8Array;
  try {
    raw = Bun.zstdDecompressSync(packed);
  } catch {
    throw new Error("tokenizer ranks: not a packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  }
  // A copy when the decompressed bytes do not start on a word boundary, so the words can be viewed in place.
  const buffer = raw.byteOffset % 4 === 0 ? raw.buffer : raw.slice().buffer;
  const start = raw.byteOffset % 4 === 0 ? raw.byteOffset : 0;
  const head = raw.length >= HEADER_WORDS * 4 ? new Uint32Array(buffer, start, HEADER_WORDS) : undefined;
  if (head?.[0] !== MAGIC) throw new Error("tokenizer ranks: not a packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  const [, count = 0, slotBits = 0, byteLength = 0] = head;
  const words = HEADER_WORDS + 2 ** slotBits;
  if (raw.length !== words * 4 + count + byteLength) throw new Error("tokenizer ranks: truncated packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  const slots = new Uint32Array(buffer, start + HEADER_WORDS * 4, 2 ** slotBits);
  const offsets = sumLengths(new Uint8Array(buffer, start + words * 4, count));
  if (offsets[count] !== byteLength) throw new Error("tokenizer ranks: packed rank table with wrong lengths; rebuild with `bun build/tokenizer-data.ts`");
  return viewTable(offsets, slots, new Uint8Array(buffer, start + words * 4 + count, byteLength), slotBits);
}

/** Offsets from lengths: token r is at offsets[r] .. offsets[r + 1]. */
function sumLengths(lengths: Uint8Array): Uint32Array {
  const offsets = new Uint32Array(lengths.length + 1);
  let at = 0;
  for (let rank = 0; rank < lengths.length; rank++) {
    at += lengths[rank]!;
    offsets[rank + 1] = at;
  }
  return offsets;
}

function viewTable(offsets: Uint32Array, slots: Uint32Array, tokens: Uint8Array, slotBits: number): RankTable {
  const mask = 2 ** slotBits - 1;
  return {
    size: offsets.length - 1,
    rankOf(bytes, from, to) {
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
    },
  };
}
