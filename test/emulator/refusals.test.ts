/**
 * The emulator refuses what the real providers refuse, with their status,
 * error type and message (quoted from the providers' own error bodies as
 * seen in public reports; src/emulator/validate cites them), and accepts
 * the valid form of each request. One row per rule.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emulator, post, tokens } from "./_helpers.ts";

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator();
});
afterAll(() => emu.stop());

/** One refused body: where it goes, what comes back. */
interface Refusal {
  rule: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  /** Anthropic `error.type`, OpenAI `error.type`, Gemini `error.status`. */
  type: string;
  message: string;
  param?: string | null;
  code?: string | null;
}

const user = (text: string) => ({ role: "user", content: text });
const A = { model: "claude-sonnet-4-5", max_tokens: 100 };
const toolUse = (id: string) => ({ type: "tool_use", id, name: "lookup", input: { q: "x" } });
const toolResult = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "42" });
const anthropicTools = [{ name: "lookup", description: "look up", input_schema: { type: "object", properties: { q: { type: "string" } } } }];
const thinking = { type: "enabled", budget_tokens: 1024 };
const webSearch = { type: "web_search_20250305", name: "web_search", max_uses: 2 };
const searchUse = (id: string) => ({ type: "server_tool_use", id, name: "web_search", input: { query: "cachet" } });
const searchResult = (id: string, encrypted = true) => ({ type: "web_search_tool_result", tool_use_id: id, content: [{ type: "web_search_result", url: "https://example.com", title: "x", ...(encrypted ? { encrypted_content: "e30=" } : {}) }] });

const ANTHROPIC: Refusal[] = [
  { rule: "tool_use left unanswered before a new prompt (case 39)", path: "/anthropic/v1/messages", body: { ...A, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: [toolUse("toolu_1")] }, user("never mind")] }, status: 400, type: "invalid_request_error", message: "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message." },
  { rule: "two parallel tool_use answered by one tool_result", path: "/anthropic/v1/messages", body: { ...A, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: [toolUse("toolu_1"), toolUse("toolu_2")] }, { role: "user", content: [toolResult("toolu_1")] }] }, status: 400, type: "invalid_request_error", message: "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_2." },
  { rule: "tool_result without its tool_use", path: "/anthropic/v1/messages", body: { ...A, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: "ok" }, { role: "user", content: [toolResult("toolu_9")] }] }, status: 400, type: "invalid_request_error", message: "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9." },
  { rule: "whitespace-only text block (case 40)", path: "/anthropic/v1/messages", body: { ...A, messages: [user("hi"), { role: "assistant", content: [{ type: "text", text: "\n\n" }] }, user("are you there?")] }, status: 400, type: "invalid_request_error", message: "messages: text content blocks must contain non-whitespace text" },
  { rule: "empty text block", path: "/anthropic/v1/messages", body: { ...A, messages: [{ role: "user", content: [{ type: "text", text: "" }] }] }, status: 400, type: "invalid_request_error", message: "messages: text content blocks must be non-empty" },
  { rule: "no messages at all", path: "/anthropic/v1/messages", body: { ...A, messages: [] }, status: 400, type: "invalid_request_error", message: "messages: at least one message is required" },
  { rule: "a message left empty (not the final assistant)", path: "/anthropic/v1/messages", body: { ...A, messages: [user("hi"), { role: "assistant", content: [] }, user("again")] }, status: 400, type: "invalid_request_error", message: "messages.1: all messages must have non-empty content except for the optional final assistant message" },
  { rule: "a role other than user/assistant", path: "/anthropic/v1/messages", body: { ...A, messages: [{ role: "system", content: "be brief" }, user("hi")] }, status: 400, type: "invalid_request_error", message: "messages.0.role: Input should be 'user' or 'assistant'" },
  { rule: "thinking on: the tool-using assistant turn sent back without its thinking block", path: "/anthropic/v1/messages", body: { ...A, max_tokens: 2000, thinking, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: [toolUse("toolu_1")] }, { role: "user", content: [toolResult("toolu_1")] }] }, status: 400, type: "invalid_request_error", message: "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block" },
  { rule: "a thinking block without its signature", path: "/anthropic/v1/messages", body: { ...A, max_tokens: 2000, thinking, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: [{ type: "thinking", thinking: "hmm" }, toolUse("toolu_1")] }, { role: "user", content: [toolResult("toolu_1")] }] }, status: 400, type: "invalid_request_error", message: "messages.1.content.0.thinking.signature: Field required" },
  { rule: "temperature other than 1 with thinking", path: "/anthropic/v1/messages", body: { ...A, max_tokens: 2000, thinking, temperature: 0.2, messages: [user("hi")] }, status: 400, type: "invalid_request_error", message: "`temperature` may only be set to 1 when thinking is enabled" },
  { rule: "max_tokens above the model's output limit", path: "/anthropic/v1/messages", body: { ...A, max_tokens: 64_001, messages: [user("hi")] }, status: 400, type: "invalid_request_error", message: "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5" },
  { rule: "prompt plus max_tokens over the context window", path: "/anthropic/v1/messages", body: { ...A, max_tokens: 60_000, messages: [user(tokens(150_000))] }, status: 400, type: "invalid_request_error", message: "input length and `max_tokens` exceed context limit: 150000 + 60000 > 200000, decrease input length or `max_tokens` and try again" },
  { rule: "a server_tool_use replayed without its web_search_tool_result", path: "/anthropic/v1/messages", body: { ...A, tools: [webSearch], messages: [user("q"), { role: "assistant", content: [searchUse("srvtoolu_1"), { type: "text", text: "found it" }] }, user("more?")] }, status: 400, type: "invalid_request_error", message: "messages.1: `server_tool_use` ids were found without a corresponding `web_search_tool_result` block in the same message: srvtoolu_1" },
  { rule: "a web search result replayed without its encrypted_content", path: "/anthropic/v1/messages", body: { ...A, tools: [webSearch], messages: [user("q"), { role: "assistant", content: [searchUse("srvtoolu_1"), searchResult("srvtoolu_1", false)] }, user("more?")] }, status: 400, type: "invalid_request_error", message: "messages.1.content.1.content.0.encrypted_content: Field required" },
  { rule: "five breakpoints", path: "/anthropic/v1/messages", body: { ...A, system: Array.from({ length: 5 }, () => ({ type: "text", text: "s", cache_control: { type: "ephemeral" } })), messages: [user("hi")] }, status: 400, type: "invalid_request_error", message: "A maximum of 4 blocks with cache_control may be provided. Found 5." },
  { rule: "an unknown top-level field (a capitalised Messages)", path: "/anthropic/v1/messages", body: { ...A, messages: [user("hi")], Messages: [user("hi")] }, status: 400, type: "invalid_request_error", message: "Messages: Extra inputs are not permitted" },
  { rule: "an unknown top-level field (SYSTEM)", path: "/anthropic/v1/messages", body: { ...A, messages: [user("hi")], SYSTEM: "x" }, status: 400, type: "invalid_request_error", message: "SYSTEM: Extra inputs are not permitted" },
];

const C = { model: "gpt-4o" };
const call = (id: string) => ({ id, type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } });
const chatTools = [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } } } }];

const CHAT: Refusal[] = [
  { rule: "tool call left unanswered before a new prompt (case 39)", path: "/v1/chat/completions", body: { ...C, tools: chatTools, messages: [user("q"), { role: "assistant", content: null, tool_calls: [call("call_1")] }, user("never mind")] }, status: 400, type: "invalid_request_error", message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1", param: "messages.[1].role" },
  { rule: "two parallel calls answered by one tool message", path: "/v1/chat/completions", body: { ...C, tools: chatTools, messages: [user("q"), { role: "assistant", content: null, tool_calls: [call("call_1"), call("call_2")] }, { role: "tool", tool_call_id: "call_1", content: "42" }] }, status: 400, type: "invalid_request_error", message: "The following tool_call_ids did not have response messages: call_2", param: "messages.[1].role" },
  { rule: "a tool message without a preceding tool call", path: "/v1/chat/completions", body: { ...C, messages: [user("q"), { role: "tool", tool_call_id: "call_9", content: "42" }] }, status: 400, type: "invalid_request_error", message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: "messages.[1].role" },
  { rule: "an assistant message with neither content nor calls", path: "/v1/chat/completions", body: { ...C, messages: [user("q"), { role: "assistant", content: null }, user("again")] }, status: 400, type: "invalid_request_error", message: "Invalid value for 'content': expected a string, got null.", param: "messages.[1].content" },
  { rule: "an unknown role", path: "/v1/chat/completions", body: { ...C, messages: [{ role: "narrator", content: "x" }] }, status: 400, type: "invalid_request_error", message: "Invalid value: 'narrator'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", param: "messages[0].role", code: "invalid_value" },
  { rule: "temperature other than the default on a reasoning model", path: "/v1/chat/completions", body: { model: "gpt-5", temperature: 0.2, messages: [user("q")] }, status: 400, type: "invalid_request_error", message: "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.", param: "temperature", code: "unsupported_value" },
  { rule: "top_p other than the default on a reasoning model", path: "/v1/chat/completions", body: { model: "gpt-5", top_p: 0.5, messages: [user("q")] }, status: 400, type: "invalid_request_error", message: "Unsupported value: 'top_p' does not support 0.5 with this model.", param: "top_p", code: "unsupported_value" },
  { rule: "max_tokens on a reasoning model", path: "/v1/chat/completions", body: { model: "gpt-5", max_tokens: 100, messages: [user("q")] }, status: 400, type: "invalid_request_error", message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", param: "max_tokens", code: "unsupported_parameter" },
  { rule: "max_completion_tokens above the model's output limit (gpt-5: 128,000)", path: "/v1/chat/completions", body: { model: "gpt-5", max_completion_tokens: 480_002, messages: [user("q")] }, status: 400, type: "invalid_request_error", message: "max_completion_tokens is too large: 480002. This model supports at most 128000 completion tokens, whereas you provided 480002.", param: "max_completion_tokens", code: "invalid_value" },
  { rule: "max_tokens above the model's output limit (gpt-4o: 16,384)", path: "/v1/chat/completions", body: { ...C, max_tokens: 20_000, messages: [user("q")] }, status: 400, type: "invalid_request_error", message: "max_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas you provided 20000.", param: "max_tokens", code: "invalid_value" },
  { rule: "prompt over the context window", path: "/v1/chat/completions", body: { ...C, max_tokens: 1_000, messages: [user(tokens(130_000))] }, status: 400, type: "invalid_request_error", message: "This model's maximum context length is 128000 tokens. However, you requested 131000 tokens (130000 in the messages, 1000 in the completion).", param: "messages", code: "context_length_exceeded" },
  { rule: "DeepSeek thinking mode: a tool-calling turn sent back without reasoning_content (case 38)", path: "/deepseek/chat/completions", body: { model: "deepseek-v4-flash", tools: chatTools, messages: [user("q"), { role: "assistant", content: null, tool_calls: [call("call_1")] }, { role: "tool", tool_call_id: "call_1", content: "42" }] }, status: 400, type: "invalid_request_error", message: "The `reasoning_content` in the thinking mode must be passed back to the API.", code: "invalid_request_error" },
  { rule: "DeepSeek: tool call unanswered", path: "/deepseek/chat/completions", body: { model: "deepseek-chat", tools: chatTools, messages: [user("q"), { role: "assistant", content: "", tool_calls: [call("call_1")] }, user("never mind")] }, status: 400, type: "invalid_request_error", message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'." },
  { rule: "an unknown top-level field", path: "/v1/chat/completions", body: { ...C, messages: [user("q")], a: "" }, status: 400, type: "invalid_request_error", message: "Unrecognized request argument supplied: a", param: null, code: null },
  { rule: "DeepSeek: an unknown top-level field (OpenAI's prompt_cache_key is not DeepSeek's)", path: "/deepseek/chat/completions", body: { model: "deepseek-chat", messages: [user("q")], prompt_cache_key: "k" }, status: 400, type: "invalid_request_error", message: "Unrecognized request argument supplied: prompt_cache_key" },
];

const R = { model: "gpt-5" };
const fnCall = (id: string) => ({ type: "function_call", call_id: id, name: "lookup", arguments: '{"q":"x"}' });
const fnOutput = (id: string) => ({ type: "function_call_output", call_id: id, output: "42" });

const RESPONSES: Refusal[] = [
  { rule: "function_call left unanswered before a new prompt (case 39)", path: "/v1/responses", body: { ...R, input: [user("q"), fnCall("call_1"), user("never mind")] }, status: 400, type: "invalid_request_error", message: "No tool output found for function call call_1.", param: "input" },
  { rule: "two parallel calls answered by one output", path: "/v1/responses", body: { ...R, input: [user("q"), fnCall("call_1"), fnCall("call_2"), fnOutput("call_1")] }, status: 400, type: "invalid_request_error", message: "No tool output found for function call call_2.", param: "input" },
  { rule: "an output without its call", path: "/v1/responses", body: { ...R, input: [user("q"), fnOutput("call_9")] }, status: 400, type: "invalid_request_error", message: "No tool call found for function call output with call_id call_9.", param: "input" },
  { rule: "an unknown message role", path: "/v1/responses", body: { ...R, input: [{ role: "tool", content: "x" }] }, status: 400, type: "invalid_request_error", message: "Invalid value: 'tool'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", param: "input[0].role", code: "invalid_value" },
  { rule: "temperature other than the default on a reasoning model", path: "/v1/responses", body: { ...R, temperature: 0, input: "q" }, status: 400, type: "invalid_request_error", message: "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.", param: "temperature", code: "unsupported_value" },
  { rule: "max_output_tokens below 16", path: "/v1/responses", body: { ...R, max_output_tokens: 8, input: "q" }, status: 400, type: "invalid_request_error", message: "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 8 instead.", param: "max_output_tokens", code: "integer_below_min_value" },
  { rule: "max_output_tokens above the model's output limit (gpt-5: 128,000)", path: "/v1/responses", body: { ...R, max_output_tokens: 480_002, input: "q" }, status: 400, type: "invalid_request_error", message: "Invalid 'max_output_tokens': integer above maximum value. Expected a value <= 128000, but got 480002 instead.", param: "max_output_tokens", code: "integer_above_max_value" },
  { rule: "input over the model's input limit (gpt-5: 272,000)", path: "/v1/responses", body: { ...R, input: tokens(280_000) }, status: 400, type: "invalid_request_error", message: "Your input exceeds the context window of this model. Please adjust your input and try again.", param: "input", code: "context_length_exceeded" },
  { rule: "an unknown top-level field", path: "/v1/responses", body: { ...R, input: "q", System: "x" }, status: 400, type: "invalid_request_error", message: "Unknown parameter: 'System'.", param: "System", code: "unknown_parameter" },
];

const G = "/google/v1beta/models/gemini-2.5-flash:generateContent";
const G3 = "/google/v1beta/models/gemini-3-pro-preview:generateContent";
const text = (role: string, t: string) => ({ role, parts: [{ text: t }] });
const fc = (name: string, signature?: string) => ({ functionCall: { name, args: { q: "x" } }, ...(signature ? { thoughtSignature: signature } : {}) });
const fr = (name: string) => ({ functionResponse: { name, response: { result: 42 } } });

const GEMINI: Refusal[] = [
  { rule: "function call left unanswered before a new prompt (case 39)", path: G, body: { contents: [text("user", "q"), { role: "model", parts: [fc("lookup")] }, text("user", "never mind")] }, status: 400, type: "INVALID_ARGUMENT", message: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn." },
  { rule: "two parallel calls answered by one response", path: G, body: { contents: [text("user", "q"), { role: "model", parts: [fc("a"), fc("b")] }, { role: "user", parts: [fr("a")] }] }, status: 400, type: "INVALID_ARGUMENT", message: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn." },
  { rule: "a function response without a call turn before it", path: G, body: { contents: [text("user", "q"), text("model", "ok"), { role: "user", parts: [fr("a")] }] }, status: 400, type: "INVALID_ARGUMENT", message: "Please ensure that function response turn comes immediately after a function call turn." },
  { rule: "a function call turn right after a model turn", path: G, body: { contents: [text("user", "q"), text("model", "thinking about it"), { role: "model", parts: [fc("a")] }, { role: "user", parts: [fr("a")] }] }, status: 400, type: "INVALID_ARGUMENT", message: "Please ensure that function call turn comes immediately after a user turn or after a function response turn." },
  { rule: "a content with no parts", path: G, body: { contents: [text("user", "q"), { role: "model", parts: [] }, text("user", "again")] }, status: 400, type: "INVALID_ARGUMENT", message: "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty." },
  { rule: "an empty text part", path: G, body: { contents: [{ role: "user", parts: [{ text: "" }] }] }, status: 400, type: "INVALID_ARGUMENT", message: "Unable to submit request because it has an empty text parameter." },
  { rule: "an unknown role", path: G, body: { contents: [text("assistant", "x")] }, status: 400, type: "INVALID_ARGUMENT", message: "Please use a valid role: user, model." },
  { rule: "Gemini 3: a function call of the current turn sent back without its thought signature", path: G3, body: { contents: [text("user", "q"), { role: "model", parts: [fc("lookup")] }, { role: "user", parts: [fr("lookup")] }] }, status: 400, type: "INVALID_ARGUMENT", message: "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:lookup` , position 2." },
  { rule: "an unknown top-level field (temperature belongs in generationConfig)", path: G, body: { temperature: 0.2, contents: [text("user", "q")] }, status: 400, type: "INVALID_ARGUMENT", message: 'Invalid JSON payload received. Unknown name "temperature": Cannot find field.' },
  { rule: "a dotted name is not a path", path: G, body: { "generationConfig.temperature": 0.1, contents: [text("user", "q")] }, status: 400, type: "INVALID_ARGUMENT", message: 'Invalid JSON payload received. Unknown name "generationConfig.temperature": Cannot find field.' },
  { rule: "an unknown generationConfig field", path: G, body: { generationConfig: { temprature: 0.1 }, contents: [text("user", "q")] }, status: 400, type: "INVALID_ARGUMENT", message: `Invalid JSON payload received. Unknown name "temprature" at 'generation_config': Cannot find field.` },
  { rule: "temperature above the model's range (0 to 2)", path: G, body: { generationConfig: { temperature: 3 }, contents: [text("user", "q")] }, status: 400, type: "INVALID_ARGUMENT", message: "Unable to submit request because it has a temperature value of 3 but the supported range is from 0 (inclusive) to 2.0001 (exclusive). Update the value and try again." },
  { rule: "prompt over the context window", path: "/google/v1beta/models/gemini-2.0-flash:generateContent", body: { contents: [text("user", tokens(1_050_000))] }, status: 400, type: "INVALID_ARGUMENT", message: "The input token count (1050000) exceeds the maximum number of tokens allowed (1048576)." },
];

const ROUTES: Refusal[] = [
  { rule: "an unknown path", path: "/nosuch/chat/completions", body: { ...C, messages: [user("q")] }, status: 404, type: "not_found_error", message: "Invalid URL (POST /nosuch/chat/completions)" },
];

function typeOf(json: any): string {
  return json.error?.status ?? json.error?.type;
}

describe.each([
  ["anthropic-messages", ANTHROPIC],
  ["openai-chat", CHAT],
  ["openai-responses", RESPONSES],
  ["gemini", GEMINI],
  ["paths", ROUTES],
] as const)("%s refuses", (_protocol, rows) => {
  test.each(rows.map((r) => [r.rule, r] as const))("%s", async (_rule, row) => {
    const { status, json } = await post(`${emu.url}${row.path}`, row.body);
    expect(status).toBe(row.status);
    expect(typeOf(json)).toBe(row.type);
    expect(json.error.message).toContain(row.message);
    if (row.param !== undefined) expect(json.error.param).toBe(row.param);
    if (row.code !== undefined) expect(json.error.code).toBe(row.code);
  });
});

test("the corpus holds at least 30 refused bodies, at least 6 per protocol", () => {
  for (const rows of [ANTHROPIC, CHAT, RESPONSES, GEMINI]) expect(rows.length).toBeGreaterThanOrEqual(6);
  expect(ANTHROPIC.length + CHAT.length + RESPONSES.length + GEMINI.length).toBeGreaterThanOrEqual(30);
});

/** The repaired form of the refused conversations: each is accepted. */
const VALID: [string, string, Record<string, unknown>][] = [
  ["anthropic: tool_use answered in the next message", "/anthropic/v1/messages", { ...A, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: [toolUse("toolu_1"), toolUse("toolu_2")] }, { role: "user", content: [toolResult("toolu_1"), toolResult("toolu_2"), { type: "text", text: "and now?" }] }] }],
  ["anthropic: thinking replayed with its signature first", "/anthropic/v1/messages", { ...A, max_tokens: 2000, thinking, tools: anthropicTools, messages: [user("q"), { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "sig" }, toolUse("toolu_1")] }, { role: "user", content: [toolResult("toolu_1")] }] }],
  ["anthropic: a final assistant prefill may be empty of blocks", "/anthropic/v1/messages", { ...A, messages: [user("hi"), { role: "assistant", content: "Sure:" }] }],
  ["anthropic: server web search blocks replayed as they came", "/anthropic/v1/messages", { ...A, tools: [webSearch], messages: [user("q"), { role: "assistant", content: [searchUse("srvtoolu_1"), searchResult("srvtoolu_1"), { type: "text", text: "found it" }] }, user("more?")] }],
  ["anthropic: temperature 1 with thinking", "/anthropic/v1/messages", { ...A, max_tokens: 2000, thinking, temperature: 1, messages: [user("hi")] }],
  ["anthropic: the documented top-level fields", "/anthropic/v1/messages", { ...A, system: "be brief", stream: false, metadata: { user_id: "u" }, stop_sequences: ["END"], temperature: 0.5, top_k: 5, top_p: 0.9, tool_choice: { type: "auto" }, tools: anthropicTools, service_tier: "auto", inference_geo: "global", messages: [user("hi")] }],
  ["chat: the documented top-level fields, legacy functions included", "/v1/chat/completions", { ...C, messages: [user("q")], frequency_penalty: 0, presence_penalty: 0, logit_bias: {}, logprobs: false, n: 1, seed: 1, stop: ["END"], store: false, user: "u", safety_identifier: "s", prompt_cache_key: "k", metadata: {}, parallel_tool_calls: true, functions: [{ name: "f", parameters: { type: "object" } }], function_call: "auto" }],
  ["chat: DeepSeek's documented fields", "/deepseek/chat/completions", { model: "deepseek-chat", messages: [user("q")], thinking: { type: "disabled" }, frequency_penalty: 0, presence_penalty: 0, stop: ["END"], stream: false, temperature: 0.5, top_p: 0.9, logprobs: false, response_format: { type: "text" } }],
  ["responses: the documented top-level fields", "/v1/responses", { ...R, input: "q", instructions: "be brief", include: [], max_tool_calls: 3, metadata: {}, parallel_tool_calls: true, prompt_cache_key: "k", reasoning: { effort: "low" }, safety_identifier: "s", service_tier: "auto", store: false, text: { verbosity: "low" }, truncation: "disabled", user: "u" }],
  ["chat: parallel calls each answered", "/v1/chat/completions", { ...C, tools: chatTools, messages: [user("q"), { role: "assistant", content: null, tool_calls: [call("call_1"), call("call_2")] }, { role: "tool", tool_call_id: "call_1", content: "1" }, { role: "tool", tool_call_id: "call_2", content: "2" }, user("and now?")] }],
  ["chat: a reasoning model with max_completion_tokens and the default temperature", "/v1/chat/completions", { model: "gpt-5", max_completion_tokens: 50, temperature: 1, messages: [user("q")] }],
  ["chat: max_completion_tokens at the model's output limit", "/v1/chat/completions", { model: "gpt-5", max_completion_tokens: 128_000, messages: [user("q")] }],
  ["responses: max_output_tokens at the model's output limit", "/v1/responses", { ...R, max_output_tokens: 128_000, input: "q" }],
  ["chat: DeepSeek thinking mode with reasoning_content sent back", "/deepseek/chat/completions", { model: "deepseek-v4-flash", tools: chatTools, messages: [user("q"), { role: "assistant", content: null, reasoning_content: "let me look", tool_calls: [call("call_1")] }, { role: "tool", tool_call_id: "call_1", content: "42" }] }],
  ["chat: DeepSeek with thinking disabled needs no reasoning_content", "/deepseek/chat/completions", { model: "deepseek-v4-flash", thinking: { type: "disabled" }, tools: chatTools, messages: [user("q"), { role: "assistant", content: null, tool_calls: [call("call_1")] }, { role: "tool", tool_call_id: "call_1", content: "42" }] }],
  ["responses: parallel calls each answered", "/v1/responses", { ...R, input: [user("q"), fnCall("call_1"), fnCall("call_2"), fnOutput("call_1"), fnOutput("call_2"), user("and now?")] }],
  ["gemini: every request and generationConfig field, snake_case spellings too, temperature 2", G, { safety_settings: [], toolConfig: { functionCallingConfig: { mode: "AUTO" } }, system_instruction: { parts: [{ text: "be brief" }] }, generationConfig: { temperature: 2, top_p: 0.9, topK: 40, maxOutputTokens: 100, stopSequences: ["END"], seed: 1, candidateCount: 1, presencePenalty: 0, frequencyPenalty: 0, responseMimeType: "text/plain", thinkingConfig: { thinkingBudget: 0 }, mediaResolution: "MEDIA_RESOLUTION_LOW" }, contents: [text("user", "q")] }],
  ["gemini: parallel calls each answered", G, { contents: [text("user", "q"), { role: "model", parts: [fc("a"), fc("b")] }, { role: "user", parts: [fr("a"), fr("b")] }] }],
  ["gemini 3: the signature sent back on the first call of the step", G3, { contents: [text("user", "q"), { role: "model", parts: [fc("a", "sig"), fc("b")] }, { role: "user", parts: [fr("a"), fr("b")] }] }],
  ["gemini 3: older turns need no signature", G3, { contents: [text("user", "q"), { role: "model", parts: [fc("a")] }, { role: "user", parts: [fr("a")] }, text("model", "done"), text("user", "next")] }],
];

describe("accepts the valid forms", () => {
  test.each(VALID)("%s", async (_name, path, body) => {
    const { status, json } = await post(`${emu.url}${path}`, body);
    expect(json.error ?? undefined).toBeUndefined();
    expect(status).toBe(200);
  });
});

test("gemini: unknown names come all at once, each a BadRequest field violation, as the API's JSON parser reports them", async () => {
  const { status, json } = await post(`${emu.url}${G}`, { temperature: 0.2, top_k: 3, generationConfig: { temprature: 0.1 }, contents: [text("user", "q")] });
  expect(status).toBe(400);
  expect(json).toEqual({
    error: {
      code: 400,
      status: "INVALID_ARGUMENT",
      message: 'Invalid JSON payload received. Unknown name "temperature": Cannot find field.\nInvalid JSON payload received. Unknown name "top_k": Cannot find field.\nInvalid JSON payload received. Unknown name "temprature" at \'generation_config\': Cannot find field.',
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [
            { description: 'Invalid JSON payload received. Unknown name "temperature": Cannot find field.' },
            { description: 'Invalid JSON payload received. Unknown name "top_k": Cannot find field.' },
            { field: "generation_config", description: `Invalid JSON payload received. Unknown name "temprature" at 'generation_config': Cannot find field.` },
          ],
        },
      ],
    },
  });
});

describe("output limit", () => {
  test("no answer is longer than the model's output limit (gpt-4o: 16,384), asked for or scripted, with or without max_tokens: cut, finish reason length", async () => {
    const script = join(mkdtempSync(join(tmpdir(), "cachet-limit-")), "script.json");
    writeFileSync(script, JSON.stringify([{ text: tokens(20_000) }]));
    const long = await emulator({ CACHET_EMULATOR_ANSWER_TOKENS: "480002" });
    try {
      const asked = await post(`${long.url}/v1/chat/completions`, { ...C, messages: [user("q")] });
      expect([asked.json.usage.completion_tokens, asked.json.choices[0].finish_reason]).toEqual([16_384, "length"]);
      const scripted = await post(`${long.url}/v1/chat/completions`, { ...C, messages: [user("q")] }, { "x-emulator-script": script });
      expect([scripted.json.usage.completion_tokens, scripted.json.choices[0].finish_reason]).toEqual([16_384, "length"]);
      const below = await post(`${long.url}/v1/chat/completions`, { ...C, max_tokens: 100, messages: [user("q")] }, { "x-emulator-script": script });
      expect([below.json.usage.completion_tokens, below.json.choices[0].finish_reason]).toEqual([100, "length"]);
    } finally {
      long.stop();
    }
  });


  test("a structured answer is cut at max_tokens, with finish reason length (chat) and max_tokens (anthropic)", async () => {
    const schema = { type: "object", additionalProperties: false, required: ["reasoning", "answer"], properties: { reasoning: { type: "string", minLength: 200 }, answer: { type: "string" } } };
    const chat = await post(`${emu.url}/v1/chat/completions`, { ...C, max_tokens: 16, response_format: { type: "json_schema", json_schema: { name: "out", schema, strict: true } }, messages: [user("q")] });
    expect(chat.json.choices[0].finish_reason).toBe("length");
    expect(chat.json.usage.completion_tokens).toBe(16);
    expect(() => JSON.parse(chat.json.choices[0].message.content)).toThrow();
    const anthropic = await post(`${emu.url}/anthropic/v1/messages`, { ...A, max_tokens: 16, output_config: { format: { type: "json_schema", schema } }, messages: [user("q")] });
    expect(anthropic.json.stop_reason).toBe("max_tokens");
    expect(anthropic.json.usage.output_tokens).toBe(16);
  });
});
