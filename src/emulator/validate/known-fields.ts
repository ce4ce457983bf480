/**
 * Top-level request fields each API documents, and the refusal a name outside
 * them gets: the real APIs validate the body against their schema and answer
 * an unknown field with HTTP 400 instead of ignoring it.
 * - Anthropic Messages: `<field>: Extra inputs are not permitted` (invalid_request_error).
 * - OpenAI Chat Completions: `Unrecognized request argument supplied: <field>` (invalid_request_error, param and code null).
 * - OpenAI Responses: `Unknown parameter: '<field>'.` (invalid_request_error, param the field, code unknown_parameter).
 * DeepSeek's Chat Completions answers in OpenAI's shape (its docs say nothing
 * else), with its own documented field list.
 * @see https://docs.claude.com/en/api/messages
 * @see https://rubydoc.info/github/anthropics/anthropic-sdk-ruby/main/Anthropic/Models/Beta/MessageCreateParams (beta fields)
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://platform.openai.com/docs/api-reference/responses/create
 * @see https://developers.openai.com/api/docs/guides/prompt-caching (prompt_cache_options, GPT-5.6 and later)
 * @see https://api-docs.deepseek.com/api/create-chat-completion
 * @see https://github.com/anthropics/claude-code/issues/14135 (context_management: Extra inputs are not permitted)
 * @see https://github.com/davidmigloz/langchain_dart/issues/712 (Unrecognized request argument supplied: reasoning_effort)
 * @see https://github.com/cogwheel0/conduit/issues/258 (Unknown parameter: 'parent_id'., code unknown_parameter)
 */
import { invalidRequest } from "../request-error.ts";
import type { EmulatedProvider } from "../types.ts";

/**
 * Messages API request fields, `cache_control` being its automatic-caching
 * marker, `context_management` its compaction edits, and `output_format` and
 * `speed` the beta ones (the SDK's beta MessageCreateParams).
 */
const ANTHROPIC = new Set([
  "model", "messages", "max_tokens", "system", "stream", "metadata", "stop_sequences", "temperature", "top_k", "top_p",
  "thinking", "tools", "tool_choice", "service_tier", "container", "context_management", "mcp_servers", "output_config", "cache_control",
  "inference_geo", "output_format", "speed",
]);

/** Chat Completions request fields (OpenAI), legacy `functions`/`function_call` included. */
const OPENAI_CHAT = new Set([
  "model", "messages", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
  "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
  "prompt_cache_options", "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
  "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
]);

/** DeepSeek's Chat Completions request fields, `thinking` its thinking-mode switch. */
const DEEPSEEK_CHAT = new Set([
  "model", "messages", "thinking", "reasoning_effort", "frequency_penalty", "max_tokens", "presence_penalty", "response_format", "stop",
  "stream", "stream_options", "temperature", "top_p", "tools", "tool_choice", "logprobs", "top_logprobs",
]);

/** Responses API request fields. */
const OPENAI_RESPONSES = new Set([
  "model", "input", "instructions", "background", "context_management", "conversation", "include", "max_output_tokens", "max_tool_calls", "metadata",
  "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "reasoning", "safety_identifier",
  "service_tier", "store", "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation", "user",
]);

const unknown = (body: Record<string, unknown>, known: ReadonlySet<string>) => Object.keys(body).find((key) => !known.has(key));

/**
 * Refuses the first unknown top-level field of a Messages body.
 * @throws EmulatorRequestError 400 invalid_request_error `<field>: Extra inputs are not permitted`
 */
export function checkAnthropicFields(body: Record<string, unknown>): void {
  const field = unknown(body, ANTHROPIC);
  if (field !== undefined) throw invalidRequest(`${field}: Extra inputs are not permitted`);
}

/**
 * Refuses the first unknown top-level field of a Chat Completions body for
 * OpenAI and DeepSeek; the other compatible servers are not checked (their
 * field lists and refusals are not documented here).
 * @throws EmulatorRequestError 400 invalid_request_error `Unrecognized request argument supplied: <field>`
 */
export function checkChatFields(body: Record<string, unknown>, provider: EmulatedProvider | "unknown"): void {
  const known = provider === "openai" ? OPENAI_CHAT : provider === "deepseek" ? DEEPSEEK_CHAT : undefined;
  const field = known && unknown(body, known);
  if (field !== undefined) throw invalidRequest(`Unrecognized request argument supplied: ${field}`);
}

/**
 * Refuses the first unknown top-level field of an OpenAI Responses body (xAI's
 * Responses endpoint is not checked).
 * @throws EmulatorRequestError 400 invalid_request_error `Unknown parameter: '<field>'.`, param the field, code unknown_parameter
 */
export function checkResponsesFields(body: Record<string, unknown>, provider: EmulatedProvider | "unknown"): void {
  const field = provider === "openai" ? unknown(body, OPENAI_RESPONSES) : undefined;
  if (field !== undefined) throw invalidRequest(`Unknown parameter: '${field}'.`, field, "unknown_parameter");
}
