/**
 * The o200k_base BPE tokenizer (gpt-tokenizer), with its ranks read from a
 * packed file embedded as an asset (build/tokenizer-data.ts makes it from the
 * package's `.tiktoken` data). Loading the ranks as the package's JavaScript
 * array instead would compile a 200,000-element literal into the binary's
 * bytecode (about 15 MB more binary).
 *
 * Used by the emulator (its token counts) and by the meter (per-node token
 * estimates). Exact for OpenAI's GPT-4o/GPT-5 family; an approximation for
 * other providers, whose tokenizers are not published.
 */
import ranksPath from "./o200k_base.tokens.gz" with { type: "file" };

/** Counts the tokens of a text. */
export type TokenCounter = (text: string) => number;

let loading: Promise<TokenCounter> | undefined;

/**
 * Loads the tokenizer once (about 100-300 ms) and returns its counter.
 * @throws Error when the embedded ranks file is unreadable (a broken build).
 */
export function loadO200k(): Promise<TokenCounter> {
  loading ??= (async () => {
    const [{ GptEncoding }, packed] = await Promise.all([import("gpt-tokenizer/GptEncoding"), Bun.file(ranksPath).bytes()]);
    const ranks = JSON.parse(new TextDecoder().decode(Bun.gunzipSync(packed))) as (string | number[])[];
    const encoding = GptEncoding.getEncodingApi("o200k_base", () => ranks);
    return (input: string) => (input === "" ? 0 : encoding.countTokens(input));
  })();
  return loading;
}
