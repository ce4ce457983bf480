import { expect, test } from "bun:test";
import { packRanks, readRanks } from "./rank-table.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

test("packed ranks read back: every token's bytes give its rank, anything else -1, at any offset of the key buffer", () => {
  const tokens = ["a", "b", "ab", "abc", "hello world", "\u00e9", "0123456789abcdef"].map(bytes);
  const table = readRanks(packRanks([...tokens, new Uint8Array([0xff, 0x00])]));
  expect(table.size).toBe(8);
  tokens.forEach((t, rank) => expect(table.rankOf(t, 0, t.length)).toBe(rank));
  const key = bytes("xxabcxx");
  expect([table.rankOf(key, 2, 5), table.rankOf(key, 2, 4), table.rankOf(key, 0, 2), table.rankOf(key, 2, 2)]).toEqual([3, 2, -1, -1]);
  expect(table.rankOf(new Uint8Array([0xff, 0x00]), 0, 2)).toBe(7);
});

test("a buffer that is not a packed rank table, a truncated one, or tokens that repeat are refused, naming the rebuild command", () => {
  const packed = packRanks(["a", "bc"].map(bytes));
  expect(() => readRanks(new Uint8Array(16))).toThrow("not a packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  expect(() => readRanks(Bun.zstdCompressSync(new Uint8Array(64)))).toThrow("not a packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  const raw = Bun.zstdDecompressSync(packed);
  expect(() => readRanks(Bun.zstdCompressSync(raw.subarray(0, raw.length - 1)))).toThrow("truncated packed rank table; rebuild with `bun build/tokenizer-data.ts`");
  expect(() => packRanks(["a", "bc", "bc"].map(bytes))).toThrow("token 2 repeats the bytes of token 1");
});
