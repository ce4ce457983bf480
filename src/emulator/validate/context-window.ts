/**
 * The context-window check every provider makes once it has counted the
 * prompt: a prompt (plus the requested output, where the provider adds it)
 * larger than the model's window is refused with the provider's "too long"
 * error, before anything is generated or billed. Limits come from the
 * catalog (../facts/model-facts.ts).
 * @see https://platform.claude.com/docs/en/build-with-claude/context-windows
 * @see https://platform.openai.com/docs/guides/error-codes
 */
import type { ModelFacts } from "../facts/model-facts.ts";
import { invalidRequest } from "../request-error.ts";
import type { Protocol } from "../types.ts";

/**
 * Refuses a prompt of `prompt` tokens asking for `maxTokens` more that does not fit.
 * @throws EmulatorRequestError 400, worded per protocol.
 */
export function checkContextWindow(protocol: Protocol, facts: ModelFacts, prompt: number, maxTokens: number | undefined): void {
  const window = facts.context;
  if (window === undefined) return;
  const output = maxTokens ?? 0;
  switch (protocol) {
    case "anthropic-messages":
      if (prompt > window) throw invalidRequest(`prompt is too long: ${prompt} tokens > ${window} maximum`);
      if (prompt + output > window) throw invalidRequest(`input length and \`max_tokens\` exceed context limit: ${prompt} + ${output} > ${window}, decrease input length or \`max_tokens\` and try again`);
      return;
    case "openai-chat":
      if (prompt + output <= window && (facts.input === undefined || prompt <= facts.input)) return;
      throw invalidRequest(
        maxTokens === undefined
          ? `This model's maximum context length is ${window} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`
          : `This model's maximum context length is ${window} tokens. However, you requested ${prompt + output} tokens (${prompt} in the messages, ${output} in the completion). Please reduce the length of the messages or completion.`,
        "messages",
        "context_length_exceeded",
      );
    case "openai-responses":
      if (prompt + output <= window && (facts.input === undefined || prompt <= facts.input)) return;
      throw invalidRequest("Your input exceeds the context window of this model. Please adjust your input and try again.", "input", "context_length_exceeded");
    case "gemini":
      if (prompt > window) throw invalidRequest(`The input token count (${prompt}) exceeds the maximum number of tokens allowed (${window}).`);
  }
}
