/**
 * Renders a RequestContext into an Anthropic Messages request body.
 *
 * Cache order (and body order) is tools → system → messages. Tool-call
 * arguments must be an object on this wire: they are `JSON.parse`d from the
 * exact string the model produced, which keeps the model's key order
 * (JSON.parse preserves insertion order), so the replayed object serializes to
 * the same bytes on every request (CASES.md case 14).
 * @see https://docs.claude.com/en/api/messages
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching
 */
import type { Block, Message, PluginServices, RenderMemo, RenderedMessage, RequestContext, WireRequest, WireSegment } from "../../src/plugin/index.ts";
import { toWireSchema } from "../../src/plugin/index.ts";
import { mergeOptions } from "../merge-options.ts";
import { parseArguments } from "../parse-arguments.ts";

/** max_tokens is required on this wire; used when the user set none. */
export const DEFAULT_MAX_TOKENS = 8192;

/**
 * Builds the body and its segments. Provider options are merged last. The
 * log goes through `memo` (one per provider: only new messages are rendered);
 * without one every message is rendered afresh.
 * @throws CachetError SCHEMA_CONTRACT when the output schema breaks Anthropic's structured-output rules.
 */
export function renderAnthropic(context: RequestContext, services: PluginServices, memo: RenderMemo = services.renderMemo(renderAnthropicMessage)): WireRequest {
  const head: WireSegment[] = [];
  const { prefix, generation } = context;
  const body: Record<string, unknown> = { model: context.model, max_tokens: generation.maxTokens ?? DEFAULT_MAX_TOKENS };
  if (generation.temperature !== undefined) body.temperature = generation.temperature;
  if (prefix.tools.length > 0) {
    body.tools = prefix.tools.map((tool, i) => {
      head.push({ nodeId: `tool:${tool.name}`, kind: "tool", path: ["tools", i] });
      // A server tool (web search) is sent as Anthropic documents it; the API runs it and bills it per use.
      if (tool.server) return services.canonicalize(tool.server) as Record<string, unknown>;
      const out: Record<string, unknown> = { name: tool.name };
      if (tool.description !== undefined) out.description = tool.description;
      out.input_schema = services.canonicalize(tool.parameters);
      if (tool.strict !== undefined) out.strict = tool.strict;
      return out;
    });
  }
  if (prefix.system.length > 0) {
    body.system = prefix.system.map((part, i) => {
      head.push({ nodeId: part.id, kind: "system", path: ["system", i] });
      return { type: "text", text: part.text };
    });
  }
  const options = { ...generation.providerOptions };
  const compaction = serverCompaction(options, services);
  // concat copies in bulk; spreading thousands of elements is several times slower.
  const all = context.summary.length === 0 ? context.messages : context.summary.concat(context.messages);
  // Server-side compaction: the API ignores everything before the last compaction block, so it is not sent.
  const log = memo.render(compactedFrom(all) ?? all, 0);
  const messages = log.items;
  const segments = head.concat(log.segments);
  if (context.overlay) appendOverlay(messages, context.messages, context.overlay, segments);
  body.messages = messages;
  if (prefix.schema) {
    const { schema } = toWireSchema("anthropic", prefix.schema.schema);
    // The format is injected into the system prompt by the API: it caches after system, before messages.
    const schemaAt = segments.findIndex((s) => s.path[0] === "messages");
    segments.splice(schemaAt === -1 ? segments.length : schemaAt, 0, { nodeId: "schema", kind: "schema", path: ["output_config"] });
    body.output_config = { format: { type: "json_schema", schema: services.canonicalize(schema) } };
  }
  body.stream = generation.stream;
  const headers: Record<string, string> = {};
  if (compaction) {
    body.context_management = { edits: [compaction] };
    headers["anthropic-beta"] = COMPACTION_BETA;
  }
  return { protocol: "anthropic-messages", body: mergeOptions(body, options), headers, segments };
}

/** Beta header of server-side compaction. */
export const COMPACTION_BETA = "compact-2026-01-12";

/**
 * The server-side compaction edit asked for by `-o compaction=server` (and
 * `-o compaction_trigger=N`, input tokens, at least 50,000; the API's default
 * is 150,000), taken out of `options` (they are cachet's, not body fields);
 * undefined without `compaction`.
 * @throws CachetError BAD_FLAG for another `compaction` value or a trigger that is not a whole number ≥ 50,000
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 */
function serverCompaction(options: Record<string, unknown>, services: PluginServices): Record<string, unknown> | undefined {
  const mode = options.compaction;
  const trigger = options.compaction_trigger;
  delete options.compaction;
  delete options.compaction_trigger;
  if (mode === undefined) {
    if (trigger !== undefined) throw new services.CachetError("BAD_FLAG", "-o compaction_trigger needs -o compaction=server", { hint: "add -o compaction=server, or drop -o compaction_trigger" });
    return undefined;
  }
  if (mode !== "server") throw new services.CachetError("BAD_FLAG", `-o compaction=${String(mode)}: the Anthropic plugin knows only compaction=server (the API compacts; cachet's own compaction is the default without it)`, { hint: "pass -o compaction=server, or drop it" });
  const value = typeof trigger === "string" && /^\d+$/.test(trigger) ? Number(trigger) : trigger;
  if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < 50_000)) {
    throw new services.CachetError("BAD_FLAG", `-o compaction_trigger=${String(trigger)}: expected a whole number of input tokens, at least 50000`, { hint: "e.g. -o compaction_trigger=100000 (the API's default is 150000)" });
  }
  return { type: "compact_20260112", ...(value !== undefined ? { trigger: { type: "input_tokens", value } } : {}) };
}

/**
 * The log (summary zone, then messages) from its last message holding a
 * server compaction block (with a summary) on, that block first; undefined
 * when there is none.
 */
function compactedFrom(all: readonly Message[]): Message[] | undefined {
  const i = lastCompaction(all);
  if (i < 0) return undefined;
  const message = all[i]!;
  const at = compactionAt(message);
  let first = at === 0 ? message : compactedFirst.get(message);
  if (!first) {
    first = { ...message, content: message.content.slice(at) };
    // The same object every turn, so the render memo keeps what it rendered after it.
    if (!message.incomplete) compactedFirst.set(message, first);
  }
  return [first].concat(all.slice(i + 1));
}

/**
 * Index of the last message of `all` holding a server compaction block, or
 * -1. Each conversation's last scan is kept (keyed by its first message, as
 * the render memo keys its renders), so a turn looks only at the messages
 * after the longest run of leading messages that are the very same objects
 * as last time: a request's log is the previous one's plus new messages.
 */
function lastCompaction(all: readonly Message[]): number {
  const key = all[0];
  if (key === undefined) return -1;
  let scan = scans.get(key);
  if (scan) scans.delete(key);
  else scan = { complete: [], holders: [] };
  scans.set(key, scan);
  if (scans.size > MAX_SCANS) scans.delete(scans.keys().next().value!);
  const { complete, holders } = scan;
  const limit = Math.min(complete.length, all.length);
  let shared = 0;
  while (shared < limit && all[shared] === complete[shared]) shared++;
  complete.length = shared;
  while (holders.length > 0 && holders.at(-1)! >= shared) holders.pop();
  let last = holders.at(-1) ?? -1;
  for (let i = shared; i < all.length; i++) {
    const message = all[i]!;
    const holds = compactionAt(message) >= 0;
    if (holds) last = i;
    // Kept only up to the first incomplete message (an answer still streaming may grow a block); later ones are looked at again.
    if (complete.length === i && !message.incomplete) {
      complete.push(message);
      if (holds) holders.push(i);
    }
  }
  return last;
}

/** A conversation's last compaction scan: its leading complete messages as scanned, and the indexes of those holding a compaction block. */
interface CompactionScan {
  complete: Message[];
  holders: number[];
}

// Stored messages never change, so a message scanned once is not searched block by block again.
const scans = new Map<Message, CompactionScan>();

/** Conversations whose last scan is kept (the render memo keeps as many renders). */
const MAX_SCANS = 16;

/** Index of a message's last server compaction block with a summary, or -1. */
function compactionAt(message: Message): number {
  return message.content.findLastIndex((b) => b.type === "provider" && b.protocol === "anthropic-messages" && b.data.type === "compaction" && typeof b.data.content === "string");
}

// The message a server compaction starts the sent log with, by the stored message it is cut from.
const compactedFirst = new WeakMap<Message, Message>();

/**
 * One log message as an Anthropic message at index `at`, with a segment per
 * content block; no message when nothing of it can be replayed.
 */
export function renderAnthropicMessage(message: Message, at: number): RenderedMessage {
  const content: Record<string, unknown>[] = [];
  const segments: WireSegment[] = [];
  message.content.forEach((block, j) => {
    const wire = renderBlock(block);
    if (!wire) return;
    segments.push({ nodeId: `${message.id}#${j}`, kind: block.type, path: ["messages", at, "content", content.length] });
    content.push(wire);
  });
  return content.length === 0 ? { items: [], segments: [] } : { items: [{ role: message.role, content }], segments };
}

/** One content block on the wire; undefined for a block this wire cannot replay. */
function renderBlock(block: Block): Record<string, unknown> | undefined {
  switch (block.type) {
    case "text":
      // The API rejects empty text blocks; an empty one (a cut answer) carries nothing.
      return block.text === "" ? undefined : { type: "text", text: block.text };
    case "image":
      return { type: "image", source: { type: "base64", media_type: block.mediaType, data: block.data } };
    case "tool_use":
      return { type: "tool_use", id: block.id, name: block.name, input: parseArguments(block.arguments) };
    case "tool_result": {
      const out: Record<string, unknown> = { type: "tool_result", tool_use_id: block.toolUseId, content: block.content };
      if (block.isError) out.is_error = true;
      return out;
    }
    case "thinking":
      // Thinking is replayable only with the signature the API issued for it.
      return block.signature === undefined ? undefined : { type: "thinking", thinking: block.text, signature: block.signature };
    case "provider":
      // Server tool blocks go back as they came (a server_tool_use needs its result beside it); another protocol's are left out.
      return block.protocol === "anthropic-messages" ? block.data : undefined;
  }
}

/**
 * The overlay is a separate last text block of the final user message, so the
 * blocks before it keep their bytes; after an assistant message it becomes a
 * user message of its own.
 */
function appendOverlay(messages: Record<string, unknown>[], log: Message[], overlay: string, segments: WireSegment[]): void {
  const last = messages[messages.length - 1];
  const lastIsUser = last !== undefined && last.role === "user" && log.length > 0 && log[log.length - 1]!.role === "user";
  if (lastIsUser) {
    const content = last.content as Record<string, unknown>[];
    segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", messages.length - 1, "content", content.length] });
    // A new message object: the rendered one is shared with later requests, which must not see this overlay.
    messages[messages.length - 1] = { ...last, content: [...content, { type: "text", text: overlay }] };
  } else {
    segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", messages.length, "content", 0] });
    messages.push({ role: "user", content: [{ type: "text", text: overlay }] });
  }
}
