/**
 * The o200k counter (packed ranks + src/tokenizer/bpe.ts) against
 * gpt-tokenizer's o200k_base, an independent implementation with its own copy
 * of the ranks: every count must be equal. gpt-tokenizer is told to count
 * special-token text as ordinary text, as ours does.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { countTokens as reference } from "gpt-tokenizer/encoding/o200k_base";
import { TOKENIZER_OUTPUT } from "../../build/tokenizer-data.ts";
import { bpeCounter, O200K_PATTERN } from "./bpe.ts";
import { loadO200k } from "./o200k.ts";
import { readRanks } from "./rank-table.ts";

const ROOT = join(import.meta.dir, "..", "..");
const ordinary = { disallowedSpecial: new Set<string>() };
const TOKENIZER_BYTES = await Bun.file(TOKENIZER_OUTPUT).bytes();
const count = bpeCounter(readRanks(TOKENIZER_BYTES), O200K_PATTERN);

function mismatches(texts: readonly string[]): { text: string; ours: number; theirs: number }[] {
  return texts.map((text) => ({ text, ours: count(text), theirs: reference(text, ordinary) })).filter((r) => r.ours !== r.theirs);
}

test("every repository source, test fixture, scenario and README is counted as gpt-tokenizer counts it", async () => {
  const files = [...new Bun.Glob("{src,test,build}/**/*.{ts,md,json,jsonl,txt,yaml,toml}").scanSync({ cwd: ROOT }), "README.md"];
  expect(files.length).toBeGreaterThan(100);
  const texts = await Promise.all(files.map((f) => Bun.file(join(ROOT, f)).text()));
  expect(texts.reduce((sum, t) => sum + t.length, 0)).toBeGreaterThan(1_000_000);
  expect(mismatches(texts)).toEqual([]);
});

test("CJK, emoji, lone surrogates, whitespace runs, numbers, contractions and special-token text are counted as gpt-tokenizer counts them", () => {
  const texts = [
    "",
    "a",
    "日本語の文章を数えます。中文文本，한국어 텍스트도.",
    "👍🏽 👨‍👩‍👧‍👦 🇫🇷 flags and 🧪 emoji😀😀😀",
    "lone \ud800 high, lone \udc00 low, reversed \udc00\ud800, at the end \ud83d",
    "\ud83d\ude00\ud83d",
    " \t\n\n\r\n   \u00a0\u2003\u3000 x  \n  \n\t\t",
    " ".repeat(300),
    "\n".repeat(50) + "\t".repeat(20),
    "1234567890 3.14159 -42 1,000,000 0x1F 1e-9 ٣٤٥ ⅷ",
    "I'm, you're, they'LL, it'S, we'VE, he'd, DON'T, o'clock",
    "<|endoftext|> <|im_start|>user<|im_end|> <|endofprompt|>",
    "const x = (a) => a?.b ?? c; // comment\nif (x !== 0) { return [1, 2, 3]; }\n",
    "https://example.com/a/b?c=d&e=f#g //// ==== ---- ****",
    "ÀÉÎÕÜ àéîõü ǅungla ʰᵃ Ωμέγα Кириллица עברית العربية हिन्दी ไทย",
    "e\u0301 a\u0308\u0323 \u0301\u0301\u0301 combining marks",
    "Ab".repeat(100),
    "\u0000\u0001\u007f\u0080\u00ff\ufffd\uffff",
  ];
  expect(mismatches(texts)).toEqual([]);
});

test("3,000 random strings (fixed seed) from ASCII, Latin, CJK, emoji, marks, digits, spaces and surrogates are counted as gpt-tokenizer counts them", () => {
  const ranges: [number, number][] = [
    [0x20, 0x7e], [0x09, 0x0d], [0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a], [0xc0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff],
    [0x400, 0x4ff], [0x600, 0x6ff], [0x900, 0x97f], [0x3000, 0x303f], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3],
    [0xd800, 0xdfff], [0x1f300, 0x1faff], [0x2000, 0x206f], [0x10000, 0x1ffff],
  ];
  let seed = 20_261_130;
  const next = (n: number) => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return (seed >>> 8) % n;
  };
  const texts: string[] = [];
  for (let t = 0; t < 3_000; t++) {
    let text = "";
    const length = next(120);
    for (let i = 0; i < length; i++) {
      const [from, to] = ranges[next(ranges.length)]!;
      text += String.fromCodePoint(from + next(to - from + 1));
    }
    texts.push(text);
  }
  expect(new Set(texts).size).toBeGreaterThan(2_900);
  expect(mismatches(texts)).toEqual([]);
});

test("a byte-order mark (U+FEFF) is counted by the bytes of o200k_base.tiktoken, where gpt-tokenizer drops it from its tokens", () => {
  // o200k_base.tiktoken has tokens EF BB BF (rank 5574), EF BB BF "using" (9251) and EF BB BF EF BB BF (135153).
  // gpt-tokenizer decodes token bytes with a TextDecoder, which strips a leading BOM, and so counts 2, 3 and 4.
  expect([count("\ufeff"), count("\ufeffusing"), count("\ufeff\ufeff")]).toEqual([1, 1, 1]);
  expect([reference("\ufeff"), reference("\ufeffusing"), reference("\ufeff\ufeff")]).toEqual([2, 3, 4]);
});

test("the loaded counter (bounded counting around the same BPE) gives gpt-tokenizer's count for text without long letter runs", async () => {
  const loaded = await loadO200k();
  const text = await Bun.file(join(ROOT, "README.md")).text();
  expect(loaded(text)).toBe(reference(text, ordinary));
  expect(loaded("<|endoftext|>")).toBe(reference("<|endoftext|>", ordinary));
});

test("characters the pattern does not match are skipped, as tiktoken's findall skips them: the count is the sum of the matches' counts", () => {
  // o200k's own pattern matches every character; a narrower one leaves gaps between its pieces.
  const pattern = String.raw`[a-z]+|\p{N}{1,3}`;
  const narrow = bpeCounter(readRanks(TOKENIZER_BYTES), pattern);
  const text = "alpha, BETA 12345 déjà-vu 😀 gamma\u0301 zz";
  const pieces = [...text.matchAll(new RegExp(pattern, "gu"))].map((m) => m[0]);
  expect(pieces).toEqual(["alpha", "123", "45", "d", "j", "vu", "gamma", "zz"]);
  expect(narrow(text)).toBe(pieces.reduce((sum, piece) => sum + narrow(piece), 0));
  expect(narrow("ÉÉÉ ---")).toBe(0);
});
