/**
 * The `openai-responses` protocol (Responses API): rendering and streaming.
 *
 * System parts are `system` input messages rather than `instructions`: each
 * part stays its own element, and explicit cache breakpoints may sit on input
 * content but not on `instructions`. Tool calls are `function_call` items
 * whose `arguments` are the model's raw string; tool results are
 * `function_call_output` items.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 * @see https://platform.openai.com/docs/guides/prompt-caching
 * @see https://platform.openai.com/docs/api-reference/responses-streaming (response.refusal.delta: a refusal content part)
 */
import { refuseServerTools } from "../shared/server-tools.ts";
import type {
  FinishReason,
  Message,
  PluginServices,
  PreviousCall,
  ProviderConfig,
  RenderMemo,
  RenderedMessage,
  RequestContext,
  SendOptions,
  StreamEvent,
  WireRequest,
  WireSegment,
} from "../../src/plugin/index.ts";
import { toWireSchema } from "../../src/plugin/index.ts";
import { mergeOptions } from "../merge-options.ts";
import { toProviderError } from "../provider-error.ts";
import type { OpenAIClient } from "./client.ts";

/**
 * Renders the Responses body. Segments: system parts, tools, schema, then
 * input items (user content parts one by one; one per other item).
 * Function tools are sent with an explicit `strict` (the API defaults it to true).
 * The log goes through `memo` (one per adapter: only new messages are
 * rendered); without one every message is rendered afresh.
 * @throws CachetError SCHEMA_CONTRACT when the output schema breaks the strict-mode rules.
 */
export function renderResponses(context: RequestContext, services: PluginServices, memo: RenderMemo = services.renderMemo(renderResponsesItems)): WireRequest {
  const segments: WireSegment[] = [];
  let input: Record<string, unknown>[] = [];
  const { prefix, generation } = context;
  for (const part of prefix.system) {
    segments.push({ nodeId: part.id, kind: "system", path: ["input", input.length] });
    input.push({ type: "message", role: "system", content: [{ type: "input_text", text: part.text }] });
  }
  const body: Record<string, unknown> = { model: context.model, input };
  refuseServerTools(context, services);
  if (prefix.tools.length > 0) {
    body.tools = prefix.tools.map((tool, i) => {
      segments.push({ nodeId: `tool:${tool.name}`, kind: "tool", path: ["tools", i] });
      const out: Record<string, unknown> = { type: "function", name: tool.name };
      if (tool.description !== undefined) out.description = tool.description;
      out.parameters = services.canonicalize(tool.parameters);
      out.strict = tool.strict ?? false;
      return out;
    });
  }
  if (prefix.schema) {
    const wireSchema = toWireSchema("openai", prefix.schema.schema);
    segments.push({ nodeId: "schema", kind: "schema", path: ["text"] });
    body.text = {
      format: { type: "json_schema", name: prefix.schema.name, schema: services.canonicalize(wireSchema.schema), strict: wireSchema.strict },
    };
  }
  const log = memo.render(context.summary.length === 0 ? context.messages : context.summary.concat(context.messages), input.length);
  input = input.concat(log.items);
  body.input = input;
  const all = segments.concat(log.segments);
  if (context.overlay) {
    const last = input[input.length - 1];
    const lastLog = context.messages[context.messages.length - 1];
    if (last?.type === "message" && last.role === "user" && lastLog?.role === "user") {
      const content = last.content as Record<string, unknown>[];
      all.push({ nodeId: "overlay", kind: "overlay", path: ["input", input.length - 1, "content", content.length] });
      // A new item: the rendered one is shared with later requests, which must not see this overlay.
      input[input.length - 1] = { ...last, content: [...content, { type: "input_text", text: context.overlay }] };
    } else {
      all.push({ nodeId: "overlay", kind: "overlay", path: ["input", input.length, "content", 0] });
      input.push({ type: "message", role: "user", content: [{ type: "input_text", text: context.overlay }] });
    }
  }
  if (generation.maxTokens !== undefined) body.max_output_tokens = generation.maxTokens;
  if (generation.temperature !== undefined) body.temperature = generation.temperature;
  body.stream = generation.stream;
  return { protocol: "openai-responses", body: mergeOptions(body, generation.providerOptions), headers: {}, segments: all };
}

/** One log message as Responses input items, the first at index `at` of `input` (the render memo's message renderer). */
export function renderResponsesItems(message: Message, at: number): RenderedMessage {
  const items: Record<string, unknown>[] = [];
  const segments: WireSegment[] = [];
  renderItem(message, at, items, segments);
  return { items, segments };
}

function renderItem(message: Message, at: number, input: Record<string, unknown>[], segments: WireSegment[]): void {
  if (message.role === "assistant") {
    message.content.forEach((block, j) => {
      if (block.type === "text" && block.text !== "") {
        segments.push({ nodeId: `${message.id}#${j}`, kind: "text", path: ["input", at + input.length] });
        input.push({ type: "message", role: "assistant", content: block.text });
      } else if (block.type === "tool_use") {
        segments.push({ nodeId: `${message.id}#${j}`, kind: "tool_use", path: ["input", at + input.length] });
        input.push({ type: "function_call", call_id: block.id, name: block.name, arguments: block.arguments });
      }
    });
    return;
  }
  message.content.forEach((block, j) => {
    if (block.type !== "tool_result") return;
    segments.push({ nodeId: `${message.id}#${j}`, kind: "tool_result", path: ["input", at + input.length] });
    input.push({ type: "function_call_output", call_id: block.toolUseId, output: block.content });
  });
  const content: Record<string, unknown>[] = [];
  const userAt = at + input.length;
  message.content.forEach((block, j) => {
    let part: Record<string, unknown> | undefined;
    if (block.type === "text") part = { type: "input_text", text: block.text };
    else if (block.type === "image") part = { type: "input_image", image_url: `data:${block.mediaType};base64,${block.data}`, detail: "auto" };
    if (!part) return;
    segments.push({ nodeId: `${message.id}#${j}`, kind: block.type as "text" | "image", path: ["input", userAt, "content", content.length] });
    content.push(part);
  });
  if (content.length > 0) input.push({ type: "message", role: "user", content });
}

/**
 * The incremental form of a Responses request: `previous_response_id` names
 * the previous response, and `input` holds only the items after the stored
 * conversation (the previous request's input and its output). Everything else
 * (model, tools, text format, options) is sent as in the whole request: the
 * API does not carry those over. Undefined with `store: false` (nothing is
 * stored to continue) or when a new segment lies inside a stored item.
 * The whole context is still processed and billed as input (cached reads
 * reported as usual): the saving is the bytes sent, not tokens.
 * @see https://developers.openai.com/api/docs/guides/conversation-state
 * @see https://platform.openai.com/docs/api-reference/responses/create (previous_response_id, store)
 */
export function continueResponses(wire: WireRequest, previous: PreviousCall): WireRequest | undefined {
  const { body, segments } = wire;
  if (body.store === false || !Array.isArray(body.input)) return undefined;
  let stored = -1;
  for (let i = 0; i < previous.sharedSegments && i < segments.length; i++) {
    const [section, index] = segments[i]!.path;
    if (section === "input" && typeof index === "number") stored = Math.max(stored, index);
  }
  for (let i = previous.sharedSegments; i < segments.length; i++) {
    const [section, index] = segments[i]!.path;
    if (section === "input" && typeof index === "number" && index <= stored) return undefined;
  }
  const input = body.input.slice(stored + 1);
  if (stored < 0 || input.length === 0) return undefined;
  return { ...wire, body: { ...body, previous_response_id: previous.requestId, input } };
}

/**
 * True for the API's refusal of a `previous_response_id` it does not hold
 * (HTTP 400, code `previous_response_not_found`: expired, deleted or never stored).
 * @see https://github.com/maximhq/bifrost/issues/2441 (the error as the API returns it)
 */
export function isPreviousResponseLost(error: unknown): boolean {
  for (let e = error as { status?: unknown; code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.code === "previous_response_not_found") return true;
    if (e.status === 400 && typeof e.message === "string" && /previous_response_not_found|Previous response with id .* not found/.test(e.message)) return true;
  }
  return false;
}

/**
 * Sends a Responses request and yields events; usage comes from the final
 * `response.completed` (or `response.incomplete`) event.
 * @throws ProviderError (PROVIDER_HTTP; PROVIDER_STREAM for `response.failed`,
 *   an `error` event, or a stream that ends without a final response).
 */
export async function* sendResponses(
  getClient: () => Promise<OpenAIClient>,
  wire: WireRequest,
  options: SendOptions,
  services: PluginServices,
  config: ProviderConfig,
): AsyncGenerator<StreamEvent> {
  try {
    const client = await getClient();
    // The SDK's raw request sends the body serialized once, as it is (a stream for a huge input);
    // `responses.create` is this same POST with the SDK's own JSON.stringify.
    const { body, headers } = services.serializeBody(wire.body);
    const request = { body, signal: options.signal, headers: { ...wire.headers, ...headers } };
    if (wire.body.stream === false) {
      yield* responseEvents(await client.post<RawResponse>("/responses", { ...request, stream: false }));
      return;
    }
    const stream = await client.post<AsyncIterable<RawEvent>>("/responses", { ...request, stream: true });
    let final: RawResponse | undefined;
    for await (const event of stream) {
      switch (event.type) {
        case "response.output_text.delta":
        // The model's refusal comes as its own content part; it is the answer's text (the finish says it was a refusal).
        case "response.refusal.delta":
          yield { type: "text", delta: event.delta ?? "" };
          break;
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta":
          yield { type: "thinking", delta: event.delta ?? "" };
          break;
        case "response.output_item.done":
          if (event.item?.type === "function_call") {
            yield { type: "tool_call", id: event.item.call_id ?? "", name: event.item.name ?? "", arguments: event.item.arguments ?? "" };
          }
          break;
        case "response.completed":
        case "response.incomplete":
          final = event.response;
          break;
        case "response.failed":
        case "error": {
          const error = event.response?.error ?? event.error ?? { code: event.code, message: event.message };
          const retryable = /server_error|rate_limit|overloaded/.test(String(error?.code ?? ""));
          throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: ${event.type}: ${error?.code ?? ""} ${error?.message ?? ""}`.trim(), { retryable });
        }
      }
    }
    if (!final) throw new services.ProviderError("PROVIDER_STREAM", `${config.providerId}: stream ended before response.completed`, { retryable: true });
    yield finish(final, final.output?.some((item) => item.type === "function_call") ?? false);
  } catch (error) {
    throw toProviderError(services, error, { provider: config.providerId, apiKey: config.apiKey, baseUrl: config.baseUrl });
  }
}

interface RawItem {
  type?: string;
  call_id?: string;
  name?: string;
  arguments?: string;
  content?: { type?: string; text?: string; refusal?: string }[];
  summary?: { text?: string }[];
}

interface RawResponse {
  id?: string;
  status?: string;
  incomplete_details?: { reason?: string } | null;
  error?: { code?: string; message?: string } | null;
  output?: RawItem[];
  usage?: unknown;
  /** The tier the response was served at; it decides the price multiplier. */
  service_tier?: string | null;
}

interface RawEvent {
  type: string;
  delta?: string;
  item?: RawItem;
  response?: RawResponse;
  error?: { code?: string; message?: string };
  code?: string;
  message?: string;
}

function* responseEvents(response: RawResponse): Generator<StreamEvent> {
  let calls = false;
  for (const item of response.output ?? []) {
    if (item.type === "reasoning") {
      for (const s of item.summary ?? []) if (s.text) yield { type: "thinking", delta: s.text };
    } else if (item.type === "message") {
      for (const c of item.content ?? []) {
        if (c.type === "output_text" && c.text) yield { type: "text", delta: c.text };
        if (c.type === "refusal" && c.refusal) yield { type: "text", delta: c.refusal };
      }
    } else if (item.type === "function_call") {
      calls = true;
      yield { type: "tool_call", id: item.call_id ?? "", name: item.name ?? "", arguments: item.arguments ?? "" };
    }
  }
  yield finish(response, calls);
}

function finish(response: RawResponse, calls: boolean): StreamEvent {
  const incomplete = response.incomplete_details?.reason;
  let reason: FinishReason = "other";
  // A completed response whose message is a `refusal` content part is the model's refusal.
  const refused = response.output?.some((item) => item.type === "message" && item.content?.some((c) => c.type === "refusal")) ?? false;
  if (response.status === "completed") reason = calls ? "tool_calls" : refused ? "refusal" : "stop";
  else if (incomplete === "max_output_tokens") reason = "length";
  else if (incomplete === "content_filter") reason = "content_filter";
  const event: StreamEvent = { type: "finish", reason, rawReason: incomplete ?? (reason === "refusal" ? "refusal" : response.status), rawUsage: response.usage ?? undefined, requestId: response.id };
  return response.service_tier ? { ...event, serviceTier: response.service_tier } : event;
}
