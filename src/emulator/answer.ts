/**
 * The answer to a request: scripted when a script is named, else a short
 * deterministic text derived from the prompt (same prompt, same model → same
 * words), `CACHET_EMULATOR_ANSWER_TOKENS` tokens long (default 20).
 */
import { CachetError } from "../errors.ts";
import { envControl } from "./control-value.ts";
import { loadScript, SCRIPT_ENV, SCRIPT_HEADER } from "./script.ts";
import { exampleOf } from "./structured.ts";
import { countTokens } from "./tokenizer.ts";
import type { Answer, Prompt } from "./types.ts";

/** Environment variable setting the default answer length in tokens. */
export const ANSWER_TOKENS_ENV = "CACHET_EMULATOR_ANSWER_TOKENS";
const DEFAULT_ANSWER_TOKENS = 20;

/**
 * Refuses a `CACHET_EMULATOR_ANSWER_TOKENS` that is not a whole number of
 * tokens from 1, when the emulator starts: it would otherwise give the
 * default length without a word.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the form it takes
 */
export function checkAnswerTokensEnv(env: Record<string, string | undefined>): void {
  if (answerTokens(env) !== undefined) return;
  throw new CachetError("BAD_FLAG", `${ANSWER_TOKENS_ENV}=${JSON.stringify(env[ANSWER_TOKENS_ENV])}: expected a whole number of tokens from 1, e.g. 200`, { hint: `unset ${ANSWER_TOKENS_ENV} for the default ${DEFAULT_ANSWER_TOKENS}` });
}

// Mostly one o200k token each; a few non-ASCII words so streams carry multi-byte UTF-8.
const WORDS = [
  "cache", "prefix", "token", "stable", "answer", "model", "request", "emulated", "reply", "the", "a", "of", "and", "to",
  "in", "is", "café", "déjà", "über", "node", "turn", "session", "write", "read", "hit", "miss", "breakpoint", "window",
];

/**
 * Builds the answer for `prompt`.
 * @param seed a hash of the prompt (its last prefix hash), fixing the words
 * @throws EmulatorRequestError 400 when the named script file is unreadable or invalid.
 */
export function makeAnswer(prompt: Prompt, seed: string, headers: Headers, env: Record<string, string | undefined>): Answer {
  if (prompt.maxTokens === 0) return { text: "", thinking: "", toolCalls: [], outputTokens: 0, reasoningTokens: 0, truncated: true };
  const scriptPath = headers.get(SCRIPT_HEADER) ?? env[SCRIPT_ENV];
  if (scriptPath) {
    const scripted = loadScript(scriptPath)[prompt.assistantTurns];
    if (scripted) {
      const toolCalls = (scripted.tool_calls ?? []).map((call, i) => ({ id: callId(seed, i), name: call.name, arguments: call.arguments }));
      // A scripted text is cut at the output limit like any answer.
      const whole = scripted.text ?? "";
      const text = prompt.maxTokens === undefined ? whole : cutToTokens(whole, prompt.maxTokens);
      const thinking = scripted.thinking ?? "";
      const callTokens = toolCalls.reduce((sum, call) => sum + countTokens(call.name) + countTokens(call.arguments), 0);
      const reasoningTokens = countTokens(thinking);
      return {
        text,
        thinking,
        toolCalls,
        outputTokens: countTokens(text) + callTokens,
        reasoningTokens,
        truncated: text !== whole,
        ...(scripted.refusal ? { refused: true } : {}),
        ...(scripted.images ? { images: scripted.images } : {}),
        ...(scripted.web_search ? { webSearches: scripted.web_search } : {}),
      };
    }
  }
  if (prompt.outputSchema) {
    // Structured output: a deterministic instance of the requested schema, as a real model would return,
    // cut at the output limit like any answer (the JSON is then incomplete and the finish reason says so).
    const full = JSON.stringify(exampleOf(prompt.outputSchema));
    const text = prompt.maxTokens === undefined ? full : cutToTokens(full, prompt.maxTokens);
    return { text, thinking: "", toolCalls: [], outputTokens: countTokens(text), reasoningTokens: 0, truncated: text !== full };
  }
  const wanted = answerTokens(env) ?? DEFAULT_ANSWER_TOKENS;
  const target = Math.max(1, Math.min(wanted, prompt.maxTokens ?? Infinity));
  const text = deterministicText(seed, target);
  return { text, thinking: "", toolCalls: [], outputTokens: countTokens(text), reasoningTokens: 0, truncated: target < wanted };
}

/** The default answer length the variable sets: the default when unset or blank, undefined when it is not a whole number from 1. */
function answerTokens(env: Record<string, string | undefined>): number | undefined {
  const value = envControl(env, ANSWER_TOKENS_ENV);
  if (value === undefined) return DEFAULT_ANSWER_TOKENS;
  return /^[1-9]\d*$/.test(value) ? Number(value) : undefined;
}

/**
 * `answer` with reasoning, for models that always reason (DeepSeek thinking
 * mode): a scripted `thinking` is kept, else a short deterministic one.
 */
export function withReasoning(answer: Answer, seed: string): Answer {
  if (answer.thinking !== "" || answer.outputTokens === 0) return answer;
  const thinking = deterministicText(`${seed}|reasoning`, 8);
  return { ...answer, thinking, reasoningTokens: countTokens(thinking) };
}

/** The longest start of `text` counting at most `limit` tokens. */
function cutToTokens(text: string, limit: number): string {
  if (countTokens(text) <= limit) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (countTokens(text.slice(0, mid)) <= limit) low = mid;
    else high = mid - 1;
  }
  return text.slice(0, low);
}

/** A deterministic tool-call id suffix for the i-th call of an answer. */
function callId(seed: string, i: number): string {
  return Bun.hash.wyhash(`${seed}|call|${i}`).toString(36);
}

/** Deterministic filler text of about `tokens` tokens, fixed by `seed`. */
export function deterministicText(seed: string, tokens: number): string {
  let state = BigInt(Bun.hash.wyhash(seed)) | 1n;
  const words: string[] = [];
  let count = 0;
  while (count < tokens) {
    state ^= state << 13n;
    state ^= state >> 7n;
    state ^= state << 17n;
    state &= 0xffffffffffffffffn;
    const word = WORDS[Number(state % BigInt(WORDS.length))]!;
    const piece = words.length === 0 ? word : ` ${word}`;
    const cost = countTokens(piece);
    if (count + cost > tokens && words.length > 0) break;
    words.push(piece);
    count += cost;
  }
  return words.join("");
}
