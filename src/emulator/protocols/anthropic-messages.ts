/**
 * Anthropic Messages API: `POST /v1/messages` (JSON and SSE) and
 * `POST /v1/messages/count_tokens`.
 * Stream: message_start (usage with input and cache counts), ping,
 * content_block_start/delta/stop (thinking_delta + signature_delta,
 * text_delta, input_json_delta), message_delta with CUMULATIVE usage,
 * message_stop. Server web search blocks (web-search.ts) stream as
 * server_tool_use (input_json_delta) and a whole web_search_tool_result.
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */
import { asSchema } from "../structured.ts";
import { canonicalJson } from "../../wire/canonical-json.ts";
import { invalidRequest } from "../request-error.ts";
import { compactedFrom } from "../server-compaction.ts";
import type { CacheOutcome, ContentItem } from "../types.ts";
import { type Exchange, halves, MEDIA_TOKENS, type ParsedRequest, plainText, type ProtocolHandler, type StreamPlan, sse, textPieces, ttlOf } from "./protocol.ts";

/** The Anthropic Messages protocol handler. */
export const anthropicMessages: ProtocolHandler = {
  parse(body, route) {
    const model = body.model;
    if (typeof model !== "string" || model === "") throw invalidRequest("model: Field required");
    if (!Array.isArray(body.messages)) throw invalidRequest("messages: Field required");
    const maxTokens = body.max_tokens;
    if (route.endpoint === "messages" && (typeof maxTokens !== "number" || maxTokens < 0)) throw invalidRequest("max_tokens: Field required");
    if (body.stream === true && maxTokens === 0) throw invalidRequest("max_tokens: 0 (cache pre-warming) is not supported with stream: true");
    const items: ContentItem[] = [];
    for (const tool of (body.tools as Record<string, unknown>[] | undefined) ?? []) {
      const { cache_control, ...definition } = tool;
      items.push({ role: "tool", text: canonicalJson(definition), marker: ttlOf(cache_control), messageEnd: true });
    }
    const system = body.system;
    if (typeof system === "string") items.push({ role: "system", text: system, messageEnd: true });
    else if (Array.isArray(system)) {
      system.forEach((block: Record<string, unknown>, i) => items.push({ role: "system", text: plainText([block]), marker: ttlOf(block.cache_control), messageEnd: i === system.length - 1 }));
    }
    // tool_choice, thinking and the structured-output format invalidate the messages cache (not tools/system).
    // @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs (prompt modification)
    const format = (body.output_config as { format?: unknown } | undefined)?.format;
    const settings =
      body.tool_choice === undefined && body.thinking === undefined && format === undefined
        ? undefined
        : canonicalJson({ tool_choice: body.tool_choice, thinking: body.thinking, format });
    let assistantTurns = 0;
    let first = true;
    // Server-side compaction: everything before the last compaction block is ignored (server-compaction.ts).
    const [fromMessage, fromBlock] = compactedFrom(body.messages as Record<string, unknown>[]);
    (body.messages as Record<string, unknown>[]).forEach((message, m) => {
      const role = String(message.role);
      if (role === "assistant") assistantTurns++;
      if (m < fromMessage) return;
      const all = typeof message.content === "string" ? [{ type: "text", text: message.content }] : ((message.content as Record<string, unknown>[] | undefined) ?? []);
      const blocks = m === fromMessage ? all.slice(fromBlock) : all;
      blocks.forEach((block, i) => {
        const item = blockItem(role, block, i === 0);
        if (first) {
          item.settings = settings;
          first = false;
        }
        item.messageEnd = i === blocks.length - 1;
        items.push(item);
      });
    });
    return {
      items,
      model,
      stream: body.stream === true,
      includeUsage: true,
      affinityKey: undefined,
      autoCache: ttlOf(body.cache_control),
      cacheMode: undefined,
      retention: undefined,
      assistantTurns,
      maxTokens: typeof maxTokens === "number" ? maxTokens : undefined,
      outputSchema: asSchema((body.output_config as { format?: { schema?: unknown } } | undefined)?.format?.schema),
    } satisfies ParsedRequest;
  },

  answerItems(answer) {
    const items: ContentItem[] = [];
    // Server tool blocks come back as the client received them: the parser reads them as their canonical JSON.
    for (const block of answer.webSearch?.blocks ?? []) items.push({ role: items.length === 0 ? "assistant>" : "assistant", text: canonicalJson(block) });
    if (answer.text) items.push({ role: items.length === 0 ? "assistant>" : "assistant", text: answer.text });
    for (const call of answer.toolCalls) items.push({ role: items.length === 0 ? "assistant>" : "assistant", text: `${call.name} ${canonicalJson(JSON.parse(call.arguments))}` });
    if (items.length > 0) items[items.length - 1]!.messageEnd = true;
    return items;
  },

  usage({ outcome, answer, compaction }) {
    const output = answer.outputTokens + answer.reasoningTokens;
    const search = answer.webSearch;
    // Server-side compaction: the top-level counts are the answer's pass; every pass is in `iterations`.
    const iterations = compaction
      ? {
          iterations: [
            { type: "compaction", ...passUsage(compaction.outcome), output_tokens: compaction.outputTokens },
            ...(compaction.pause ? [] : [{ type: "message", ...passUsage(outcome), output_tokens: output }]),
          ],
        }
      : {};
    return {
      // The search results the model read are input tokens of this request.
      input_tokens: outcome.input + (search?.resultTokens ?? 0),
      cache_creation_input_tokens: outcome.write5m + outcome.write1h,
      cache_read_input_tokens: outcome.read,
      cache_creation: { ephemeral_5m_input_tokens: outcome.write5m, ephemeral_1h_input_tokens: outcome.write1h },
      output_tokens: output,
      ...(answer.reasoningTokens > 0 ? { output_tokens_details: { thinking_tokens: answer.reasoningTokens } } : {}),
      ...(search ? { server_tool_use: { web_search_requests: search.requests, web_fetch_requests: 0 } } : {}),
      service_tier: "standard",
      ...iterations,
    };
  },

  json(exchange, usage) {
    return { ...messageHead(exchange), content: contentBlocks(exchange), stop_reason: stopReason(exchange), stop_sequence: null, usage };
  },

  stream(exchange, usage) {
    const u = usage as Record<string, unknown>;
    const events: string[] = [];
    // message_start knows the prompt only: searches run later add their results to input_tokens and
    // their count to server_tool_use, both reported in message_delta's cumulative usage.
    // The thinking breakdown is known only once the output is: it comes with message_delta's final counts.
    const { server_tool_use: searched, output_tokens_details: breakdown, ...start } = u;
    const startUsage = { ...start, input_tokens: Number(u.input_tokens) - (exchange.answer.webSearch?.resultTokens ?? 0), output_tokens: Math.min(1, Number(u.output_tokens)) };
    events.push(sse({ type: "message_start", message: { ...messageHead(exchange), content: [], stop_reason: null, stop_sequence: null, usage: startUsage } }, "message_start"));
    events.push(sse({ type: "ping" }, "ping"));
    const contentStart = events.length;
    contentBlocks(exchange).forEach((block, index) => {
      if (block.type === "thinking") {
        events.push(sse({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } }, "content_block_start"));
        for (const piece of textPieces(String(block.thinking))) events.push(sse({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } }, "content_block_delta"));
        events.push(sse({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: block.signature } }, "content_block_delta"));
      } else if (block.type === "text") {
        events.push(sse({ type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start"));
        for (const piece of textPieces(String(block.text))) events.push(sse({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }, "content_block_delta"));
      } else if (block.type === "compaction") {
        // The summary arrives whole, in one delta.
        events.push(sse({ type: "content_block_start", index, content_block: { type: "compaction", content: null } }, "content_block_start"));
        events.push(sse({ type: "content_block_delta", index, delta: { type: "compaction_delta", content: block.content } }, "content_block_delta"));
      } else if (block.type === "web_search_tool_result") {
        events.push(sse({ type: "content_block_start", index, content_block: block }, "content_block_start"));
      } else {
        events.push(sse({ type: "content_block_start", index, content_block: { ...block, input: {} } }, "content_block_start"));
        for (const piece of halves(JSON.stringify(block.input))) events.push(sse({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } }, "content_block_delta"));
      }
      events.push(sse({ type: "content_block_stop", index }, "content_block_stop"));
    });
    const contentEnd = events.length;
    const deltaUsage = {
      input_tokens: u.input_tokens,
      cache_creation_input_tokens: u.cache_creation_input_tokens,
      cache_read_input_tokens: u.cache_read_input_tokens,
      output_tokens: u.output_tokens,
      // MessageDeltaUsage.output_tokens_details: the SDK's MessageStream takes it from message_delta (lib/MessageStream.ts).
      ...(breakdown === undefined ? {} : { output_tokens_details: breakdown }),
      ...(searched === undefined ? {} : { server_tool_use: searched }),
    };
    events.push(sse({ type: "message_delta", delta: { stop_reason: stopReason(exchange), stop_sequence: null }, usage: deltaUsage }, "message_delta"));
    events.push(sse({ type: "message_stop" }, "message_stop"));
    return { events, contentStart, contentEnd } satisfies StreamPlan;
  },

  ping: sse({ type: "ping" }, "ping"),
  chatter: [sse({ type: "ping" }, "ping"), ": upstream busy, retrying\n\n"],
  streamError(message) {
    return sse({ type: "error", error: { type: "overloaded_error", message } }, "error");
  },
  errorBody(_status, type, message) {
    return { type: "error", error: { type, message }, request_id: null };
  },
};

function blockItem(role: string, block: Record<string, unknown>, firstInMessage: boolean): ContentItem {
  const itemRole = firstInMessage ? `${role}>` : role;
  const marker = ttlOf(block.cache_control);
  switch (block.type) {
    case "text":
      return { role: itemRole, text: String(block.text ?? ""), marker, cacheable: String(block.text ?? "") !== "" };
    case "thinking":
      return { role: itemRole, text: String(block.thinking ?? ""), cacheable: false };
    case "redacted_thinking":
      return { role: itemRole, text: String(block.data ?? ""), tokens: 0, cacheable: false };
    case "tool_use":
      return { role: itemRole, text: `${String(block.name)} ${canonicalJson(block.input ?? {})}`, marker };
    case "tool_result":
      return { role: itemRole, text: `${String(block.tool_use_id)} ${plainText(block.content)}`, marker };
    case "image":
      return { role: itemRole, text: canonicalJson(block.source), tokens: MEDIA_TOKENS, marker };
    case "document": {
      const source = block.source as Record<string, unknown> | undefined;
      return source?.type === "text" ? { role: itemRole, text: String(source.data ?? ""), marker } : { role: itemRole, text: canonicalJson(source), tokens: MEDIA_TOKENS, marker };
    }
    default: {
      const { cache_control: _ignored, ...rest } = block;
      return { role: itemRole, text: canonicalJson(rest), marker };
    }
  }
}

function messageHead(exchange: Exchange) {
  return { id: `msg_emu${exchange.id}`, type: "message", role: "assistant", model: exchange.request.model };
}

function contentBlocks({ answer, id, compaction }: Exchange): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (compaction) {
    blocks.push({ type: "compaction", content: compaction.content });
    if (compaction.pause) return blocks;
  }
  if (answer.thinking) blocks.push({ type: "thinking", thinking: answer.thinking, signature: `emu-signature-${id}` });
  for (const block of answer.webSearch?.blocks ?? []) blocks.push(block);
  if (answer.text || (answer.toolCalls.length === 0 && !answer.truncated)) blocks.push({ type: "text", text: answer.text });
  for (const call of answer.toolCalls) blocks.push({ type: "tool_use", id: `toolu_emu${call.id}`, name: call.name, input: JSON.parse(call.arguments) });
  return blocks;
}

/** The input and cache counts of one pass (a usage iteration). */
function passUsage(outcome: CacheOutcome): Record<string, unknown> {
  return {
    input_tokens: outcome.input,
    cache_creation_input_tokens: outcome.write5m + outcome.write1h,
    cache_read_input_tokens: outcome.read,
    cache_creation: { ephemeral_5m_input_tokens: outcome.write5m, ephemeral_1h_input_tokens: outcome.write1h },
  };
}

function stopReason({ answer, compaction }: Exchange): string {
  if (compaction?.pause) return "compaction";
  if (answer.toolCalls.length > 0) return "tool_use";
  if (answer.refused) return "refusal";
  return answer.truncated ? "max_tokens" : "end_turn";
}
