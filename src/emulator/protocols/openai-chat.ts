/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`) and the
 * OpenAI-compatible variants of DeepSeek, Kimi, Qwen, OpenRouter and xAI.
 * Stream: `chat.completion.chunk` objects, tool_calls deltas, a final chunk
 * with `finish_reason`; with `stream_options.include_usage` (always on
 * OpenRouter) one more chunk with `choices: []` and the usage; Kimi also puts
 * the usage inside `choices[0]` of the final chunk; then `data: [DONE]`.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
import { openrouterBilling } from "../facts/openrouter-byok.ts";
import { servedTier } from "../facts/service-tier.ts";
import { asSchema } from "../structured.ts";
import { canonicalJson } from "../../wire/canonical-json.ts";
import { invalidRequest } from "../request-error.ts";
import type { Answer, ContentItem, EmulatedProvider } from "../types.ts";
import { chatUsage } from "../usage-shapes.ts";
import { type Exchange, halves, MEDIA_TOKENS, type ParsedRequest, plainText, type ProtocolHandler, sse, textPieces, ttlOf } from "./protocol.ts";

/** Providers whose chat messages carry `reasoning_content` for thinking. */
const REASONING_CONTENT = new Set<string>(["deepseek", "moonshotai", "alibaba", "xai"]);

/** The OpenAI Chat Completions protocol handler. */
export const openaiChat: ProtocolHandler = {
  parse(body, route, headers) {
    const model = body.model;
    if (typeof model !== "string" || model === "") throw invalidRequest("you must provide a model parameter");
    if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalidRequest("messages: expected a non-empty array");
    const honorsCacheControl = route.provider === "alibaba" || route.provider === "openrouter";
    const honorsBreakpoints = route.provider === "openai" || route.provider === "unknown" || route.provider === "openrouter";
    const items: ContentItem[] = [];
    // Prompt order: the leading system/developer instructions, then the tool definitions and the output format,
    // then the conversation (OpenAI's harmony format renders instructions before tools in the developer message).
    // @see https://cookbook.openai.com/articles/openai-harmony
    const head = () => {
      for (const tool of (body.tools as unknown[] | undefined) ?? []) items.push({ role: "tool", text: canonicalJson(tool), messageEnd: true });
      if (body.response_format !== undefined) items.push({ role: "format", text: canonicalJson(body.response_format), messageEnd: true });
    };
    const messages = body.messages as Record<string, unknown>[];
    const firstTurn = messages.findIndex((m) => m.role !== "system" && m.role !== "developer");
    let assistantTurns = 0;
    let initialDeveloper = true;
    messages.forEach((message, index) => {
      if (index === firstTurn) head();
      const role = String(message.role);
      if (role === "assistant") assistantTurns++;
      const next = messages[index + 1];
      const developer = role === "system" || role === "developer";
      const eligible =
        role === "user" ||
        (role === "tool" && next?.role !== "tool") ||
        (developer && initialDeveloper && next?.role !== "system" && next?.role !== "developer");
      if (!developer) initialDeveloper = false;
      const start = items.length;
      const parts = typeof message.content === "string" ? [{ type: "text", text: message.content }] : ((message.content as Record<string, unknown>[] | null | undefined) ?? []);
      for (const part of parts) {
        const marker = (honorsCacheControl ? ttlOf(part.cache_control) : undefined) ?? (honorsBreakpoints && (part.prompt_cache_breakpoint as { mode?: string } | undefined)?.mode === "explicit" ? "5m" : undefined);
        const media = part.type === "image_url" || part.type === "input_audio" || part.type === "file";
        items.push({ role, text: media ? canonicalJson(part) : String(part.text ?? plainText([part])), tokens: media ? MEDIA_TOKENS : undefined, marker });
      }
      for (const call of (message.tool_calls as { function?: { name?: string; arguments?: string } }[] | undefined) ?? []) {
        items.push({ role, text: `${call.function?.name ?? ""} ${call.function?.arguments ?? ""}` });
      }
      if (items.length === start) items.push({ role, text: "", cacheable: false });
      items[start]!.role = `${role}>`;
      if (role === "tool") items[start]!.text = `${String(message.tool_call_id ?? "")} ${items[start]!.text}`;
      items[items.length - 1]!.messageEnd = true;
      items[items.length - 1]!.eligible = eligible;
    });
    if (firstTurn === -1) head();
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
    const maxTokens = body.max_completion_tokens ?? body.max_tokens;
    return {
      items,
      model,
      stream: body.stream === true,
      includeUsage: streamOptions?.include_usage === true || route.provider === "openrouter",
      affinityKey: typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : route.provider === "xai" ? (headers.get("x-grok-conv-id") ?? undefined) : undefined,
      autoCache: honorsCacheControl ? ttlOf(body.cache_control) : undefined,
      cacheMode: (body.prompt_cache_options as { mode?: "implicit" | "explicit" } | undefined)?.mode,
      retention: typeof body.prompt_cache_retention === "string" ? body.prompt_cache_retention : undefined,
      assistantTurns,
      maxTokens: typeof maxTokens === "number" ? maxTokens : undefined,
      outputSchema: asSchema((body.response_format as { json_schema?: { schema?: unknown } } | undefined)?.json_schema?.schema),
    } satisfies ParsedRequest;
  },

  answerItems(answer) {
    const items: ContentItem[] = [];
    if (answer.text) items.push({ role: "assistant", text: answer.text });
    for (const call of answer.toolCalls) items.push({ role: "assistant", text: `${call.name} ${call.arguments}` });
    if (items.length === 0) items.push({ role: "assistant", text: "", cacheable: false });
    items[0]!.role = "assistant>";
    items[items.length - 1]!.messageEnd = true;
    return items;
  },

  usage({ route, outcome, answer, request, headers, env }) {
    return chatUsage(route.provider, outcome, answer, request.model, route.provider === "openrouter" ? openrouterBilling(headers, env) : "credits");
  },

  json(exchange, usage) {
    const { answer } = exchange;
    const message: Record<string, unknown> = { role: "assistant", content: answer.text === "" && answer.toolCalls.length > 0 ? null : answer.text, refusal: null, annotations: [] };
    if (answer.thinking && REASONING_CONTENT.has(exchange.route.provider)) message.reasoning_content = answer.thinking;
    if (answer.toolCalls.length > 0) message.tool_calls = answer.toolCalls.map((call) => ({ id: `call_${call.id}`, type: "function", function: { name: call.name, arguments: call.arguments } }));
    return {
      ...head(exchange, "chat.completion"),
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(answer) }],
      usage,
      service_tier: servedTier(exchange.body.service_tier),
    };
  },

  stream(exchange, usage) {
    const { answer, request } = exchange;
    const provider = exchange.route.provider as EmulatedProvider | "unknown";
    const base = head(exchange, "chat.completion.chunk");
    const extra = request.includeUsage ? { usage: null } : {};
    const chunk = (delta: Record<string, unknown>, finish: string | null = null, more: Record<string, unknown> = {}) =>
      sse({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...more }], ...extra });
    const events = [chunk({ role: "assistant", content: "", refusal: null })];
    const contentStart = events.length;
    if (answer.thinking && REASONING_CONTENT.has(provider)) for (const piece of textPieces(answer.thinking)) events.push(chunk({ reasoning_content: piece }));
    if (answer.text) for (const piece of textPieces(answer.text)) events.push(chunk({ content: piece }));
    answer.toolCalls.forEach((call, index) => {
      events.push(chunk({ tool_calls: [{ index, id: `call_${call.id}`, type: "function", function: { name: call.name, arguments: "" } }] }));
      for (const piece of halves(call.arguments)) events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    const contentEnd = events.length;
    events.push(chunk({}, finishReason(answer), provider === "moonshotai" ? { usage } : {}));
    if (request.includeUsage) events.push(sse({ ...base, choices: [], usage }));
    events.push("data: [DONE]\n\n");
    return { events, contentStart, contentEnd };
  },

  ping: ": keep-alive\n\n",
  chatter: [": keep-alive\n\n", ": upstream error: overloaded, retrying\n\n"],
  streamError(message) {
    return sse({ error: { message, type: "overloaded_error", param: null, code: "overloaded" } });
  },
  errorBody(status, type, message, param = null, code = null) {
    return { error: { message, type: openaiErrorType(status, type), param, code: code ?? (status === 429 ? "rate_limit_exceeded" : null) } };
  },
};

/** The OpenAI error `type` for an Anthropic-style type and a status. */
export function openaiErrorType(status: number, type: string): string {
  if (type === "invalid_request_error") return "invalid_request_error";
  if (status === 429) return "rate_limit_exceeded";
  return type === "overloaded_error" ? "server_error" : type;
}

function head(exchange: Exchange, object: string) {
  return { id: `chatcmpl-emu${exchange.id}`, object, created: exchange.created, model: exchange.request.model, service_tier: servedTier(exchange.body.service_tier), system_fingerprint: "fp_emulator" };
}

function finishReason(answer: Answer): string {
  if (answer.toolCalls.length > 0) return "tool_calls";
  if (answer.refused) return "content_filter";
  return answer.truncated ? "length" : "stop";
}
