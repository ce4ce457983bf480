/**
 * What the Chat Completions API (OpenAI and the compatible servers the
 * emulator serves) refuses before generating, with the provider's message,
 * `param` and `code`: roles, tool-call/tool-message pairing (every call of an
 * assistant message answered by the tool messages right after it; no tool
 * message without a call), assistant messages with neither content nor
 * calls, temperature/top_p on models that accept only the default,
 * `max_tokens` on OpenAI reasoning models, an output limit above the
 * model's (OpenAI), and DeepSeek's thinking-mode rule
 * (an assistant message with tool calls carries its `reasoning_content`,
 * CASES.md case 38).
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://api-docs.deepseek.com/guides/thinking_mode
 */
import type { ModelFacts } from "../facts/model-facts.ts";
import { EmulatorRequestError, invalidRequest } from "../request-error.ts";
import type { EmulatedProvider } from "../types.ts";

const ROLES = new Set(["system", "assistant", "user", "function", "tool", "developer"]);

type Message = Record<string, unknown>;

/**
 * Checks a Chat Completions body.
 * @throws EmulatorRequestError 400 invalid_request_error with the provider's param and code.
 */
export function validateChat(body: Record<string, unknown>, provider: EmulatedProvider | "unknown", facts: ModelFacts): void {
  checkDefaultOnly(body, facts);
  if (provider === "openai" && facts.reasoning && body.max_tokens !== undefined) {
    throw invalidRequest("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter");
  }
  if (provider === "openai") checkOutputLimit(body, facts);
  const messages = body.messages as Message[];
  messages.forEach((message, i) => {
    if (!ROLES.has(String(message.role))) {
      throw invalidRequest(`Invalid value: '${String(message.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`, `messages[${i}].role`, "invalid_value");
    }
    if (message.role === "assistant" && (message.content === null || message.content === undefined) && !hasCalls(message)) {
      throw invalidRequest("Invalid value for 'content': expected a string, got null.", `messages.[${i}].content`, null);
    }
  });
  checkPairing(messages);
  if (thinkingReplayRequired(body, provider, facts)) {
    messages.forEach((message) => {
      if (message.role === "assistant" && hasCalls(message) && typeof message.reasoning_content !== "string") {
        throw new EmulatorRequestError(400, "invalid_request_error", "The `reasoning_content` in the thinking mode must be passed back to the API.", null, "invalid_request_error");
      }
    });
  }
}

/**
 * `max_completion_tokens` (or `max_tokens`) above the model's output limit
 * (catalog `limit.output`, e.g. 128,000 for gpt-5) is refused, not clamped.
 */
function checkOutputLimit(body: Record<string, unknown>, facts: ModelFacts): void {
  const name = body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
  const value = body[name];
  if (typeof value === "number" && facts.output !== undefined && value > facts.output) {
    throw invalidRequest(`${name} is too large: ${value}. This model supports at most ${facts.output} completion tokens, whereas you provided ${value}.`, name, "invalid_value");
  }
}

/**
 * OpenAI reasoning models (catalog `temperature: false`) take temperature
 * and top_p only at their default, 1.
 */
export function checkDefaultOnly(body: Record<string, unknown>, facts: ModelFacts): void {
  if (facts.temperature) return;
  for (const name of ["temperature", "top_p"]) {
    const value = body[name];
    if (value !== undefined && value !== null && value !== 1) {
      throw invalidRequest(`Unsupported value: '${name}' does not support ${String(value)} with this model. Only the default (1) value is supported.`, name, "unsupported_value");
    }
  }
}

/**
 * DeepSeek thinking mode: models whose catalog entry names `reasoning_content`
 * as the replayed field, unless the request turns thinking off.
 */
export function thinkingReplayRequired(body: Record<string, unknown>, provider: EmulatedProvider | "unknown", facts: ModelFacts): boolean {
  if (provider !== "deepseek" || facts.replayField !== "reasoning_content") return false;
  return (body.thinking as { type?: string } | undefined)?.type !== "disabled";
}

function hasCalls(message: Message): boolean {
  return Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

function checkPairing(messages: Message[]): void {
  let pending: string[] = [];
  let pendingAt = -1;
  let answerable = new Set<string>();
  messages.forEach((message, i) => {
    if (message.role === "tool") {
      const id = String(message.tool_call_id ?? "");
      if (!answerable.has(id)) {
        throw invalidRequest("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`, null);
      }
      pending = pending.filter((p) => p !== id);
      return;
    }
    if (pending.length > 0) throw unanswered(pending, pendingAt);
    answerable = new Set();
    if (message.role === "assistant" && hasCalls(message)) {
      pending = (message.tool_calls as { id?: string }[]).map((call) => String(call.id ?? ""));
      answerable = new Set(pending);
      pendingAt = i;
    }
  });
  // A conversation ending in unanswered calls is refused too: the next turn must answer them.
  if (pending.length > 0) throw unanswered(pending, pendingAt);
}

function unanswered(ids: string[], at: number): EmulatorRequestError {
  return invalidRequest(
    `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(", ")}`,
    `messages.[${at}].role`,
    null,
  );
}
