/**
 * The o200k_base BPE tokenizer (OpenAI's GPT-4o/GPT-5 encoding), counting
 * only: its ranks are read from a packed file embedded as an asset
 * (build/tokenizer-data.ts makes it from gpt-tokenizer's `.tiktoken` data;
 * src/tokenizer/rank-table.ts is its layout) and counted by src/tokenizer/bpe.ts.
 * Loading is one zstd unpacking, about 1/35 of the CPU that building
 * gpt-tokenizer's encoder took (test/bench/tokenizer.ts); o200k.exact.test.ts
 * checks the counts against gpt-tokenizer's.
 *
 * Used by the emulator (its token counts) and by the meter (per-node token
 * estimates). Exact for OpenAI's GPT-4o/GPT-5 family; an approximation for
 * other providers, whose tokenizers are not published.
 */
import { bpeCounter, O200K_PATTERN } from "./bpe.ts";
import ranksPath from "./o200k_base.ranks.zst" with { type: "file" };
import { readRanks } from "./rank-table.ts";

/** Counts the tokens of a text. */
export type TokenCounter = (text: string) => number;

let loading: Promise<TokenCounter> | undefined;

/**
 * Loads the tokenizer once (tens of ms of CPU at most) and returns its counter. Special-token
 * text such as `<|endoftext|>` is counted as ordinary text.
 * @throws Error when the embedded ranks file is unreadable or not a packed rank table (a broken build).
 */
export function loadO200k(): Promise<TokenCounter> {
  loading ??= (async () => {
    const count = bpeCounter(readRanks(await Bun.file(ranksPath).bytes()), O200K_PATTERN);
    return (input: string) => countBounded(input, count);
  })();
  return loading;
}

/**
 * Lets go of the loaded tokenizer (its rank table and buffers, about 8 MB
 * resident), so that the memory can be reused once it is collected; the next
 * {@link loadO200k} loads it again (tens of ms of CPU). For a process about
 * to hold a huge input's transient copies, whose count is already made.
 */
export function unloadO200k(): void {
  loading = undefined;
}

/** Texts up to this many characters are counted exactly by {@link countOrEstimate}. */
export const EXACT_CHARS = 1 << 20;

/** Characters in each of the samples {@link countOrEstimate} counts. */
const SAMPLE_CHARS = 1 << 16;

/**
 * Tokens of a text for the per-node estimates of the meter: exact up to
 * {@link EXACT_CHARS}; a longer text is estimated from four evenly spaced
 * samples of {@link SAMPLE_CHARS} (its start, its end and two between),
 * counted exactly and scaled by its length. Counting 100 MB exactly took
 * 15 s and held memory several times the input's size; an estimate is off
 * by however much the text's density varies between the samples and the
 * rest (for text of one kind, a few percent). Billed usage always comes from
 * the provider; the estimate weighs attribution, forecasts and the local
 * context-window check ("about N tokens").
 */
export function countOrEstimate(text: string, count: TokenCounter): number {
  if (text.length <= EXACT_CHARS) return count(text);
  let tokens = 0;
  for (let i = 0; i < 4; i++) {
    const from = Math.floor((i * (text.length - SAMPLE_CHARS)) / 3);
    tokens += count(text.slice(from, from + SAMPLE_CHARS));
    // Counting a sample leaves megabytes of pieces behind: collected before the next, they do not add up.
    Bun.gc(true);
  }
  return Math.round((tokens * text.length) / (4 * SAMPLE_CHARS));
}

/**
 * An upper bound of {@link countOrEstimate}'s count of `text`, without the
 * tokenizer: every o200k token is at least one byte, so an exact count is at
 * most the UTF-8 byte length; an estimate from samples (over
 * {@link EXACT_CHARS}) scales counts that are at most 3 bytes per UTF-16 unit.
 */
export function tokenBound(text: string): number {
  return text.length > EXACT_CHARS ? 3 * text.length : Buffer.byteLength(text, "utf8");
}

/**
 * Letter runs at least this long are counted in slices of this length. The
 * o200k pre-tokenizer keeps a run of letters as one piece, and BPE over one
 * piece is quadratic in its length: 40,000 letters took 1.6 s, 100 MB of one
 * letter would never finish. Prose has no such runs, so its counts stay exact;
 * for a pathological run the count is off by at most a token per slice.
 */
const LONG_RUN = 256;
const LONG_LETTER_RUN = new RegExp(`[\\p{L}\\p{M}]{${LONG_RUN},}`, "gu");

/**
 * Texts longer than this are counted in slices cut between two words (a single
 * space between non-space characters, where the pre-tokenizer splits anyway),
 * so counting a 100 MB input never holds more than one slice's tokens.
 */
const SLICE = 1 << 20;
const WORD_GAP = / (?=\S)/g;

function countBounded(input: string, count: (text: string) => number): number {
  if (input.length <= SLICE) return countRuns(input, count);
  let total = 0;
  let from = 0;
  while (from < input.length) {
    let to = Math.min(input.length, from + SLICE);
    if (to < input.length) {
      WORD_GAP.lastIndex = to;
      const gap = WORD_GAP.exec(input);
      // Without a word gap within 64 KiB, cut anyway: at most one token is miscounted.
      if (gap && gap.index - to < 1 << 16 && /\S/.test(input[gap.index - 1] ?? "")) to = gap.index;
    }
    total += countRuns(input.slice(from, to), count);
    // Each slice leaves its pieces and token arrays behind (several times its size): collected every
    // COLLECT_EVERY characters, they do not pile up to the size of the heap that holds the input.
    if (Math.floor(to / COLLECT_EVERY) > Math.floor(from / COLLECT_EVERY)) Bun.gc(true);
    from = to;
  }
  return total;
}

/** Counting a long text runs a full garbage collection after each this many characters. */
const COLLECT_EVERY = 32 << 20;

function countRuns(input: string, count: (text: string) => number): number {
  if (input === "") return 0;
  if (input.length < LONG_RUN) return count(input);
  let total = 0;
  let from = 0;
  for (const match of input.matchAll(LONG_LETTER_RUN)) {
    const start = match.index;
    if (start > from) total += count(input.slice(from, start));
    for (let at = start; at < start + match[0].length; at += LONG_RUN) total += count(match[0].slice(at - start, at - start + LONG_RUN));
    from = start + match[0].length;
  }
  if (from === 0) return count(input);
  if (from < input.length) total += count(input.slice(from));
  return total;
}
