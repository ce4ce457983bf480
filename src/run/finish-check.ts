/**
 * Why a structured answer cannot be judged as JSON: the finish reason says
 * it was cut at the output limit or refused, and that, not the schema, is
 * what the user must act on (CASES.md case 41).
 */
import { CachetError } from "../errors.ts";
import type { FinishEvent } from "../plugin/stream.ts";

/**
 * The ANSWER_INVALID error for a `--schema` answer that ended for a reason
 * other than a finished answer, or undefined when it finished normally.
 * `length`: cut at the output limit (raise `--max-tokens`); `refusal` and
 * `content_filter`: the model or the provider's filter refused.
 * @param maxTokens the `--max-tokens` in effect, named in the message when known
 * @param stored false under `--no-store`: the hint then promises no stored answer
 */
export function structuredFinishError(finish: FinishEvent | undefined, maxTokens: number | undefined, stored = true): CachetError | undefined {
  const kept = (what: string) => (stored ? `; ${what} is stored (\`cachet export\`)` : "");
  const raw = finish?.rawReason ? ` (finish reason ${finish.rawReason})` : "";
  switch (finish?.reason) {
    case "length":
      return new CachetError("ANSWER_INVALID", `the structured answer was cut at the output limit${maxTokens !== undefined ? ` of ${maxTokens} tokens` : ""}${raw} before its JSON was complete`, {
        hint: `raise --max-tokens${maxTokens !== undefined ? ` above ${maxTokens}` : ""} and run again${kept("the cut answer")}`,
      });
    case "refusal":
    case "content_filter":
      return new CachetError("ANSWER_INVALID", `the model refused to answer${finish.reason === "content_filter" ? " (the provider's content filter stopped it)" : ""}${raw}, so there is no structured answer`, {
        hint: `rephrase the prompt or the input${kept("the refusal")}`,
      });
    default:
      return undefined;
  }
}

/** What is known of an answer's output limit, for {@link finishNotice}. */
export interface OutputLimits {
  /** The `--max-tokens` in effect, when set. */
  maxTokens?: number;
  /** The output tokens the provider billed. */
  outputTokens?: number;
  /** The model's own output limit (catalog `limit.output`), when known. */
  modelOutput?: number;
}

/**
 * The stderr notice of an answer that did not end on its own, or undefined
 * for a finished answer (or a tool call). A text-mode run prints such an
 * answer like any other, so only this line says it is not one:
 * - `length`: cut at the output limit: `--max-tokens` (raise it) or, when
 *   that is the model's own limit or above it, the model's (continue with `-c`);
 * - `content_filter` / `refusal`: the provider's filter (OpenAI
 *   `content_filter`, Gemini `SAFETY`, `RECITATION`, …) or the model refused.
 */
export function finishNotice(finish: FinishEvent | undefined, limits: OutputLimits = {}): string | undefined {
  const raw = finish?.rawReason ? ` (finish reason ${finish.rawReason})` : "";
  if (finish?.reason === "length") {
    const { maxTokens, outputTokens, modelOutput } = limits;
    const goOn = `continue it with \`cachet -c "go on"\``;
    if (modelOutput !== undefined && (maxTokens ?? outputTokens ?? 0) >= modelOutput) {
      return `the answer was cut at the model's output limit of ${modelOutput} tokens${raw}: what came is printed and stored; ${goOn}`;
    }
    const limit = maxTokens !== undefined ? ` of ${maxTokens} tokens` : outputTokens !== undefined ? ` (${outputTokens} output tokens)` : "";
    return `the answer was cut at the output limit${limit}${raw}: what came is printed and stored; raise --max-tokens${maxTokens !== undefined ? ` above ${maxTokens}` : ""}, or ${goOn}`;
  }
  if (finish?.reason === "content_filter") return `the provider's content filter stopped the answer${raw}: what came is printed and stored, and may be cut short`;
  if (finish?.reason === "refusal") return `the model refused to answer${raw}: its reply is printed and stored as the answer`;
  return undefined;
}
