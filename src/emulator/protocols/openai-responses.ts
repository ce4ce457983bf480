/**
 * OpenAI Responses API (`POST /v1/responses`), JSON and SSE: response.created,
 * response.in_progress, output items (message with output_text deltas,
 * function_call with argument deltas), response.completed carrying the usage.
 * Stored responses and `previous_response_id`: stored-responses.ts.
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
import { servedTier } from "../facts/service-tier.ts";
import { asSchema } from "../structured.ts";
import { canonicalJson } from "../../wire/canonical-json.ts";
import { invalidRequest } from "../request-error.ts";
import type { ContentItem } from "../types.ts";
import { openaiErrorType } from "./openai-chat.ts";
import { type Exchange, halves, MEDIA_TOKENS, type ParsedRequest, plainText, type ProtocolHandler, sse, textPieces } from "./protocol.ts";

const ASSISTANT_ITEMS = new Set(["function_call", "reasoning", "web_search_call", "file_search_call", "computer_call", "custom_tool_call"]);

/** The OpenAI Responses protocol handler. */
export const openaiResponses: ProtocolHandler = {
  parse(body, route) {
    const model = body.model;
    if (typeof model !== "string" || model === "") throw invalidRequest("you must provide a model parameter");
    const items: ContentItem[] = [];
    // Instructions first, then tools and the output format (the order of the chat parser, see there).
    if (typeof body.instructions === "string") items.push({ role: "developer>", text: body.instructions, messageEnd: true, eligible: true });
    for (const tool of (body.tools as unknown[] | undefined) ?? []) items.push({ role: "tool", text: canonicalJson(tool), messageEnd: true });
    const format = (body.text as { format?: unknown } | undefined)?.format;
    if (format !== undefined) items.push({ role: "format", text: canonicalJson(format), messageEnd: true });
    const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : ((body.input as Record<string, unknown>[] | undefined) ?? []);
    let assistantTurns = 0;
    let previousAssistant = false;
    const honorsBreakpoints = route.provider !== "xai";
    input.forEach((entry, index) => {
      const type = typeof entry.type === "string" ? entry.type : "message";
      const role = type === "message" ? String(entry.role ?? "user") : ASSISTANT_ITEMS.has(type) ? "assistant" : "tool";
      const assistant = role === "assistant";
      if (assistant && !previousAssistant) assistantTurns++;
      previousAssistant = assistant;
      const start = items.length;
      if (type === "message") {
        const parts = typeof entry.content === "string" ? [{ type: "input_text", text: entry.content }] : ((entry.content as Record<string, unknown>[] | undefined) ?? []);
        for (const part of parts) {
          const media = part.type === "input_image" || part.type === "input_file" || part.type === "input_audio";
          const marker = honorsBreakpoints && (part.prompt_cache_breakpoint as { mode?: string } | undefined)?.mode === "explicit" ? "5m" : undefined;
          items.push({ role, text: media ? canonicalJson(part) : String(part.text ?? plainText([part])), tokens: media ? MEDIA_TOKENS : undefined, marker });
        }
      } else if (type === "function_call") {
        items.push({ role, text: `${String(entry.name)} ${String(entry.arguments ?? "")}` });
      } else if (type === "function_call_output") {
        items.push({ role, text: `${String(entry.call_id)} ${plainText(entry.output)}` });
      } else if (type === "reasoning") {
        items.push({ role, text: canonicalJson(entry.summary ?? []), cacheable: false });
      } else {
        items.push({ role, text: canonicalJson(entry) });
      }
      if (items.length === start) items.push({ role, text: "", cacheable: false });
      items[start]!.role = `${role}>`;
      const next = input[index + 1];
      const nextType = next ? (typeof next.type === "string" ? next.type : "message") : undefined;
      const last = items[items.length - 1]!;
      last.messageEnd = true;
      last.eligible = role === "user" || (type === "function_call_output" && nextType !== "function_call_output") || ((role === "developer" || role === "system") && index === 0);
    });
    const maxTokens = body.max_output_tokens;
    return {
      items,
      model,
      stream: body.stream === true,
      includeUsage: true,
      affinityKey: typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : undefined,
      autoCache: undefined,
      cacheMode: (body.prompt_cache_options as { mode?: "implicit" | "explicit" } | undefined)?.mode,
      retention: typeof body.prompt_cache_retention === "string" ? body.prompt_cache_retention : undefined,
      assistantTurns,
      maxTokens: typeof maxTokens === "number" ? maxTokens : undefined,
      outputSchema: asSchema((body.text as { format?: { schema?: unknown } } | undefined)?.format?.schema),
    } satisfies ParsedRequest;
  },

  answerItems(answer) {
    const items: ContentItem[] = [];
    if (answer.text) items.push({ role: "assistant>", text: answer.text, messageEnd: true });
    for (const call of answer.toolCalls) items.push({ role: "assistant>", text: `${call.name} ${call.arguments}`, messageEnd: true });
    return items;
  },

  usage({ outcome, answer }) {
    const input = outcome.input + outcome.read + outcome.write5m + outcome.write1h;
    const output = answer.outputTokens + answer.reasoningTokens;
    return {
      input_tokens: input,
      input_tokens_details: outcome.explicit ? { cached_tokens: outcome.read, cache_write_tokens: outcome.write5m + outcome.write1h } : { cached_tokens: outcome.read },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: answer.reasoningTokens },
      total_tokens: input + output,
    };
  },

  json(exchange, usage) {
    return responseObject(exchange, outputItems(exchange), usage, exchange.answer.truncated ? "incomplete" : "completed");
  },

  stream(exchange, usage) {
    let sequence = 0;
    const event = (type: string, data: Record<string, unknown>) => sse({ type, sequence_number: sequence++, ...data }, type);
    const events = [event("response.created", { response: responseObject(exchange, [], null, "in_progress") })];
    events.push(event("response.in_progress", { response: responseObject(exchange, [], null, "in_progress") }));
    const contentStart = events.length;
    const items = outputItems(exchange);
    items.forEach((item, output_index) => {
      const id = String(item.id);
      if (item.type === "message") {
        const part = (item.content as { type: string; text?: string; refusal?: string }[])[0];
        events.push(event("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } }));
        if (part?.type === "refusal") {
          // A refusal is its own content part, streamed with response.refusal.delta / .done.
          const refusal = String(part.refusal);
          events.push(event("response.content_part.added", { item_id: id, output_index, content_index: 0, part: { type: "refusal", refusal: "" } }));
          for (const delta of textPieces(refusal)) events.push(event("response.refusal.delta", { item_id: id, output_index, content_index: 0, delta }));
          events.push(event("response.refusal.done", { item_id: id, output_index, content_index: 0, refusal }));
          events.push(event("response.content_part.done", { item_id: id, output_index, content_index: 0, part }));
        } else {
          const text = String(part?.text ?? "");
          const emptyPart = { type: "output_text", text: "", annotations: [], logprobs: [] };
          events.push(event("response.content_part.added", { item_id: id, output_index, content_index: 0, part: emptyPart }));
          for (const delta of textPieces(text)) events.push(event("response.output_text.delta", { item_id: id, output_index, content_index: 0, delta, logprobs: [] }));
          events.push(event("response.output_text.done", { item_id: id, output_index, content_index: 0, text, logprobs: [] }));
          events.push(event("response.content_part.done", { item_id: id, output_index, content_index: 0, part: { ...emptyPart, text } }));
        }
      } else if (item.type === "function_call") {
        events.push(event("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } }));
        for (const delta of halves(String(item.arguments))) events.push(event("response.function_call_arguments.delta", { item_id: id, output_index, delta }));
        events.push(event("response.function_call_arguments.done", { item_id: id, output_index, name: item.name, arguments: item.arguments }));
      } else {
        events.push(event("response.output_item.added", { output_index, item }));
      }
      events.push(event("response.output_item.done", { output_index, item }));
    });
    const contentEnd = events.length;
    const status = exchange.answer.truncated ? "incomplete" : "completed";
    events.push(event(`response.${status}`, { response: responseObject(exchange, items, usage, status) }));
    return { events, contentStart, contentEnd };
  },

  ping: ": keep-alive\n\n",
  chatter: [": keep-alive\n\n", ": upstream error: overloaded, retrying\n\n"],
  streamError(message) {
    return sse({ type: "error", code: "server_error", message, param: null, sequence_number: 0 }, "error");
  },
  errorBody(status, type, message, param = null, code = null) {
    return { error: { message, type: openaiErrorType(status, type), param, code: code ?? (status === 429 ? "rate_limit_exceeded" : null) } };
  },
};

/** The id of the response an exchange answers with (`resp_…`). */
export function responseId(exchange: Exchange): string {
  return `resp_emu${exchange.id}`;
}

/** The output items of an exchange's response, as the response and a stored conversation carry them. */
export function outputItems({ answer, id }: Exchange): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (answer.thinking) items.push({ id: `rs_emu${id}`, type: "reasoning", summary: [] });
  if (answer.text || answer.toolCalls.length === 0) {
    // The model's refusal is a `refusal` content part of a completed message, not output_text.
    const part = answer.refused ? { type: "refusal", refusal: answer.text } : { type: "output_text", text: answer.text, annotations: [], logprobs: [] };
    items.push({ id: `msg_emu${id}`, type: "message", status: "completed", role: "assistant", content: [part] });
  }
  answer.toolCalls.forEach((call, i) => {
    items.push({ id: `fc_emu${id}${i}`, type: "function_call", status: "completed", call_id: `call_${call.id}`, name: call.name, arguments: call.arguments });
  });
  return items;
}

function responseObject(exchange: Exchange, output: Record<string, unknown>[], usage: unknown, status: string): Record<string, unknown> {
  const body = exchange.body;
  return {
    id: responseId(exchange),
    object: "response",
    created_at: exchange.created,
    status,
    background: false,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: exchange.request.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: typeof body.previous_response_id === "string" ? body.previous_response_id : null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: servedTier(body.service_tier),
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: "text" } },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage,
    metadata: body.metadata ?? {},
  };
}
