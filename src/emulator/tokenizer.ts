/**
 * Token counts for every emulated provider, from the o200k_base BPE
 * (the OpenAI GPT-4o/GPT-5 encoding, src/tokenizer/o200k.ts).
 *
 * For OpenAI-family models the counts are the real encoding of the block
 * texts; for Claude, Gemini, DeepSeek, Kimi and Qwen they are an
 * approximation: those providers use their own tokenizers (Claude 4.7+ about
 * 30% more tokens for the same text), which are not published as npm
 * packages. The cache rules are applied to these counts exactly.
 * @see https://platform.claude.com/docs/en/about-claude/pricing
 */
import { loadO200k, type TokenCounter as Counter } from "../tokenizer/o200k.ts";

let counter: Counter | undefined;
const memo = new Map<bigint | number, number>();
const MEMO_LIMIT = 100_000;
/** Texts shorter than this are counted directly: hashing them costs as much. */
const MEMO_MIN_LENGTH = 256;

/** Loads the o200k_base ranks (tens of ms at most); later calls return at once. */
export async function loadTokenizer(): Promise<void> {
  if (counter) return;
  counter = await loadO200k();
}

/**
 * Tokens in `text` (o200k_base). Counts of long texts are memoized by content
 * hash, so a large prefix re-sent every turn is counted once.
 * @throws Error if {@link loadTokenizer} has not completed.
 */
export function countTokens(text: string): number {
  if (!counter) throw new Error("emulator tokenizer used before loadTokenizer()");
  if (text.length < MEMO_MIN_LENGTH) return text.length === 0 ? 0 : counter(text);
  const key = Bun.hash.wyhash(text);
  const known = memo.get(key);
  if (known !== undefined) return known;
  const count = counter(text);
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(key, count);
  return count;
}
