/**
 * The `openai-chat` protocol (Chat Completions): rendering, streaming and the
 * adapter. Shared with the OpenAI-compatible presets, which differ only in
 * their usage mapping and the name of the max-tokens field.
 *
 * Layout: system parts (one system message each), then summary and log
 * messages. User messages always carry an array of content parts, so the
 * overlay can be one more part at the end without changing the bytes of the
 * parts before it. Tool results become `tool` messages; tool-call arguments
 * are the model's raw string, byte for byte (CASES.md case 14).
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */
import { refuseServerTools } from "../shared/server-tools.ts";
import type {
  FinishReason,
  Message,
  PluginServices,
  ProviderAdapter,
  RenderMemo,
  ProviderConfig,
  RequestContext,
  SendOptions,
  StreamEvent,
  UsageReport,
  WireRequest,
  WireSegment,
} from "../../src/plugin/index.ts";
import { toWireSchema } from "../../src/plugin/index.ts";
import { mergeOptions } from "../merge-options.ts";
import { toProviderError } from "../provider-error.ts";
import { openaiClient, type OpenAIClient } from "./client.ts";

/** How one provider speaks the chat protocol. */
export interface ChatDialect {
  /** `max_completion_tokens` (OpenAI; `max_tokens` is deprecated there) or `max_tokens` (most compatible servers). */
  maxTokensField: "max_completion_tokens" | "max_tokens";
  /** The provider's usage mapping (providers.md §1). */
  usage: (raw: unknown) => UsageReport;
  /**
   * The assistant-message field that carries the model's reasoning back on
   * tool-calling turns, for providers whose thinking mode refuses those turns
   * without it (DeepSeek V4, Kimi: `reasoning_content`; CASES.md case 38).
   * @see https://api-docs.deepseek.com/guides/thinking_mode
   */
  reasoningField?: "reasoning_content";
}

/**
 * Creates a chat adapter for a provider config and dialect. `memo` is the
 * provider's render memo ({@link chatMemo} of the same dialect), made once in
 * the plugin's setup so that the adapters a runtime creates turn after turn share it;
 * `client` the SDK client's getter, from the plugin's {@link openaiClients} for the same reason.
 */
export function createChatAdapter(
  config: ProviderConfig,
  services: PluginServices,
  dialect: ChatDialect,
  memo: RenderMemo = chatMemo(services, dialect),
  client: () => Promise<OpenAIClient> = openaiClient(config),
): ProviderAdapter {
  return {
    render: (context) => renderChat(context, services, dialect, memo),
    send: (wire, options) => sendChat(client, wire, options, services, config),
    usage: dialect.usage,
  };
}

/**
 * Renders the chat body. Segments: system parts, tools, schema, then one per
 * message (user messages: one per content part; tool results: one per `tool` message).
 * When streaming, `stream_options.include_usage` is always true, merged into
 * any stream options the user gave (CASES.md case 21).
 * The log goes through `memo` (one per adapter: only new messages are
 * rendered); without one every message is rendered afresh.
 * @throws CachetError SCHEMA_CONTRACT when the output schema breaks the strict-mode rules.
 */
export function renderChat(context: RequestContext, services: PluginServices, dialect: ChatDialect, memo: RenderMemo = chatMemo(services, dialect)): WireRequest {
  const segments: WireSegment[] = [];
  let messages: Record<string, unknown>[] = [];
  const { prefix, generation } = context;
  for (const part of prefix.system) {
    segments.push({ nodeId: part.id, kind: "system", path: ["messages", messages.length] });
    messages.push({ role: "system", content: part.text });
  }
  const body: Record<string, unknown> = { model: context.model, messages };
  refuseServerTools(context, services);
  if (prefix.tools.length > 0) {
    body.tools = prefix.tools.map((tool, i) => {
      segments.push({ nodeId: `tool:${tool.name}`, kind: "tool", path: ["tools", i] });
      const fn: Record<string, unknown> = { name: tool.name };
      if (tool.description !== undefined) fn.description = tool.description;
      fn.parameters = services.canonicalize(tool.parameters);
      if (tool.strict !== undefined) fn.strict = tool.strict;
      return { type: "function", function: fn };
    });
  }
  if (prefix.schema) {
    const wireSchema = toWireSchema("openai", prefix.schema.schema);
    segments.push({ nodeId: "schema", kind: "schema", path: ["response_format"] });
    body.response_format = {
      type: "json_schema",
      json_schema: { name: prefix.schema.name, schema: services.canonicalize(wireSchema.schema), strict: wireSchema.strict },
    };
  }
  const log = memo.render(context.summary.length === 0 ? context.messages : context.summary.concat(context.messages), messages.length);
  messages = messages.concat(log.items);
  body.messages = messages;
  const all = segments.concat(log.segments);
  if (context.overlay) appendOverlay(messages, context.messages, context.overlay, all);
  if (generation.maxTokens !== undefined) body[dialect.maxTokensField] = generation.maxTokens;
  if (generation.temperature !== undefined) body.temperature = generation.temperature;
  body.stream = generation.stream;
  const merged = mergeOptions(body, generation.providerOptions);
  if (generation.stream) {
    const given = generation.providerOptions.stream_options;
    merged.stream_options = { ...(given && typeof given === "object" ? given : {}), include_usage: true };
  }
  return { protocol: "openai-chat", body: merged, headers: {}, segments: all };
}

/** The render memo of a chat adapter: its message renderer bound to the dialect. */
export function chatMemo(services: PluginServices, dialect: ChatDialect): RenderMemo {
  return services.renderMemo((message, at) => {
    const items: Record<string, unknown>[] = [];
    const segments: WireSegment[] = [];
    renderMessage(message, at, items, segments, dialect);
    return { items, segments };
  });
}

/** One log message as chat messages, the first at index `at`, appended to `messages`. */
function renderMessage(message: Message, at: number, messages: Record<string, unknown>[], segments: WireSegment[], dialect: ChatDialect): void {
  if (message.role === "assistant") {
    const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    const toolCalls = message.content.flatMap((b) =>
      b.type === "tool_use" ? [{ id: b.id, type: "function", function: { name: b.name, arguments: b.arguments } }] : [],
    );
    if (text === "" && toolCalls.length === 0) return;
    const out: Record<string, unknown> = { role: "assistant", content: text === "" ? null : text };
    const reasoning = message.content.flatMap((b) => (b.type === "thinking" ? [b.text] : [])).join("");
    // Only tool-calling turns: the providers ignore reasoning elsewhere, and older reasoning models refuse it.
    if (dialect.reasoningField && toolCalls.length > 0) out[dialect.reasoningField] = reasoning;
    if (toolCalls.length > 0) out.tool_calls = toolCalls;
    segments.push({ nodeId: message.id, kind: "message", path: ["messages", at + messages.length] });
    messages.push(out);
    return;
  }
  // Tool results must directly follow the assistant's tool calls, so they come before the user's other parts.
  message.content.forEach((block, j) => {
    if (block.type !== "tool_result") return;
    segments.push({ nodeId: `${message.id}#${j}`, kind: "tool_result", path: ["messages", at + messages.length] });
    messages.push({ role: "tool", tool_call_id: block.toolUseId, content: block.content });
  });
  const parts: Record<string, unknown>[] = [];
  const userAt = at + messages.length;
  message.content.forEach((block, j) => {
    let part: Record<string, unknown> | undefined;
    if (block.type === "text") part = { type: "text", text: block.text };
    else if (block.type === "image") part = { type: "image_url", image_url: { url: `data:${block.mediaType};base64,${block.data}` } };
    if (!part) return;
    segments.push({ nodeId: `${message.id}#${j}`, kind: block.type as "text" | "image", path: ["messages", userAt, "content", parts.length] });
    parts.push(part);
  });
  if (parts.length > 0) messages.push({ role: "user", content: parts });
}

/** The overlay: one more text part of the final user message, or a user message of its own. */
function appendOverlay(messages: Record<string, unknown>[], log: Message[], overlay: string, segments: WireSegment[]): void {
  const last = messages[messages.length - 1];
  const lastLog = log[log.length - 1];
  if (last?.role === "user" && lastLog?.role === "user") {
    const parts = last.content as Record<string, unknown>[];
    segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", messages.length - 1, "content", parts.length] });
    // A new message object: the rendered one is shared with later requests, which must not see this overlay.
    messages[messages.length - 1] = { ...last, content: [...parts, { type: "text", text: overlay }] };
  } else {
    segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", messages.length, "content", 0] });
    messages.push({ role: "user", content: [{ type: "text", text: overlay }] });
  }
}

/**
 * Sends a chat request and yields events. The stream is read to its end
 * (`[DONE]`): usage arrives after `finish_reason`, in a chunk with empty
 * `choices` (OpenAI, CASES.md case 21) or inside `choices[0].usage` (Kimi).
 * The last usage seen wins; none seen leaves `rawUsage` undefined.
 * @throws ProviderError (PROVIDER_HTTP; PROVIDER_STREAM when the stream ends before any finish_reason).
 */
export async function* sendChat(
  getClient: () => Promise<OpenAIClient>,
  wire: WireRequest,
  options: SendOptions,
  services: PluginServices,
  config: ProviderConfig,
): AsyncGenerator<StreamEvent> {
  try {
    const client = await getClient();
    // The SDK's raw request sends the body serialized once, as it is (a stream for a huge input);
    // `chat.completions.create` is this same POST with the SDK's own JSON.stringify.
    const { body, headers } = services.serializeBody(wire.body);
    const request = { body, signal: options.signal, headers: { ...wire.headers, ...headers } };
    if (wire.body.stream === false) {
      const { data, response } = await client.post<RawChunk>("/chat/completions", { ...request, stream: false }).withResponse();
      yield* completionEvents(data, response.headers.get("x-request-id") ?? undefined);
      return;
    }
    const { data: stream, response } = await client.post<AsyncIterable<RawChunk>>("/chat/completions", { ...request, stream: true }).withResponse();
    yield* chunkEvents(stream, response.headers.get("x-request-id") ?? undefined, services, config);
  } catch (error) {
    throw toProviderError(services, error, { provider: config.providerId, apiKey: config.apiKey, baseUrl: config.baseUrl });
  }
}

interface RawToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface RawChoice {
  delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: RawToolCall[] };
  message?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: RawToolCall[] };
  finish_reason?: string | null;
  usage?: unknown;
}

interface RawChunk {
  id?: string;
  choices?: RawChoice[];
  usage?: unknown;
  /** The tier the response was served at; it decides the price multiplier. */
  service_tier?: string | null;
}

function* completionEvents(completion: RawChunk, headerId: string | undefined): Generator<StreamEvent> {
  const choice = completion.choices?.[0];
  const message = choice?.message ?? {};
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (reasoning) yield { type: "thinking", delta: reasoning };
  if (message.content) yield { type: "text", delta: message.content };
  for (const call of message.tool_calls ?? []) {
    yield { type: "tool_call", id: call.id ?? "", name: call.function?.name ?? "", arguments: call.function?.arguments ?? "" };
  }
  yield finish(choice?.finish_reason ?? undefined, completion.usage ?? choice?.usage ?? undefined, completion.id ?? headerId, completion.service_tier ?? undefined);
}

async function* chunkEvents(
  chunks: AsyncIterable<RawChunk>,
  headerId: string | undefined,
  services: PluginServices,
  config: ProviderConfig,
): AsyncGenerator<StreamEvent> {
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let finishReason: string | undefined;
  let usage: unknown;
  let id: string | undefined;
  let serviceTier: string | undefined;
  for await (const chunk of chunks) {
    id ??= chunk.id;
    if (chunk.service_tier) serviceTier = chunk.service_tier;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (choice.usage) usage = choice.usage;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) yield { type: "thinking", delta: reasoning };
    if (delta.content) yield { type: "text", delta: delta.content };
    for (const call of delta.tool_calls ?? []) {
      const index = call.index ?? 0;
      const open = calls.get(index) ?? { id: "", name: "", arguments: "" };
      if (call.id) open.id = call.id;
      if (call.function?.name) open.name += call.function.name;
      if (call.function?.arguments) open.arguments += call.function.arguments;
      calls.set(index, open);
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  if (finishReason === undefined) {
    throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: stream ended before a finish_reason`, { retryable: true });
  }
  for (const index of [...calls.keys()].sort((a, b) => a - b)) {
    const call = calls.get(index)!;
    yield { type: "tool_call", id: call.id, name: call.name, arguments: call.arguments };
  }
  yield finish(finishReason, usage, id ?? headerId, serviceTier);
}

const FINISH_REASONS: Record<string, FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  function_call: "tool_calls",
  content_filter: "content_filter",
};

function finish(rawReason: string | undefined, rawUsage: unknown, requestId: string | undefined, serviceTier: string | undefined): StreamEvent {
  const event: StreamEvent = { type: "finish", reason: (rawReason && FINISH_REASONS[rawReason]) || "other", rawReason, rawUsage, requestId };
  return serviceTier === undefined ? event : { ...event, serviceTier };
}
