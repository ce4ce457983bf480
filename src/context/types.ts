/**
 * The neutral context model: what a request is made of, before any provider
 * renders it. Every element is a node with a stable id and a content hash.
 *
 * Layout of every request (see DESIGN.md, "Request layout"):
 *   Z0 stable prefix  system parts, tools (sorted by name), output schema: frozen per session
 *   Z1 summary zone   summary messages (empty until the first compaction)
 *   Z2 log            append-only messages; an old node renders to the same bytes every time
 *   overlay           volatile text for this request only, after the last log message
 */
import type { Hash64 } from "../wire/hash.ts";

/** Kinds of node, in the words of DESIGN.md. */
export type NodeKind = "system" | "tool" | "schema" | "message" | "text" | "image" | "tool_use" | "tool_result" | "thinking" | "provider" | "overlay";

/** A plain text block. */
export interface TextBlock {
  type: "text";
  text: string;
  /**
   * Provider signature that came on this text (Gemini 3 `thoughtSignature`
   * on an answer's text part, since plugin API 1.4); opaque, replayed by the
   * adapter that produced it on the same text part in later requests, and
   * never sent by any other adapter.
   * @see https://ai.google.dev/gemini-api/docs/thought-signatures
   */
  signature?: string;
}

/** An image, base64-encoded. */
export interface ImageBlock {
  type: "image";
  /** IANA media type, e.g. `image/png`. */
  mediaType: string;
  /** Base64 data, no `data:` prefix. */
  data: string;
}

/**
 * A tool call made by the model. `arguments` is the exact JSON text the model
 * produced: it is replayed byte for byte, never parsed and re-serialized
 * (re-serializing with another key order breaks the cache, CASES.md case 14).
 */
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  arguments: string;
  /**
   * Provider signature that came on the call itself (Gemini `thoughtSignature`
   * on a `functionCall` part); opaque, replayed on that same call.
   * @see https://ai.google.dev/gemini-api/docs/thought-signatures
   */
  signature?: string;
}

/** The result of a tool call, sent back by the user side. */
export interface ToolResultBlock {
  type: "tool_result";
  /** Id of the {@link ToolUseBlock} this answers. */
  toolUseId: string;
  content: string;
  isError?: boolean;
}

/** Model reasoning kept so it can be replayed (Anthropic requires the signature). */
export interface ThinkingBlock {
  type: "thinking";
  text: string;
  /** Provider signature or encrypted reasoning; opaque. */
  signature?: string;
}

/**
 * A block the provider produced and must get back as it came, which no
 * other protocol can express: a server tool's call and result (Anthropic
 * `server_tool_use`, `web_search_tool_result`). Rendered verbatim for the
 * protocol that produced it, left out by every other.
 */
export interface ProviderBlock {
  type: "provider";
  /** The wire protocol that produced it (`anthropic-messages`). */
  protocol: string;
  /** The block as the provider sent it (JSON object). */
  data: Record<string, unknown>;
}

/** A content block. */
export type Block = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | ProviderBlock;

/** Who said a message. System text lives in the stable prefix, not in messages. */
export type MessageRole = "user" | "assistant";

/** A message of the log (or of the summary zone). */
export interface Message {
  /** Stable node id, unique in its session. */
  id: string;
  role: MessageRole;
  content: Block[];
  /**
   * True when the answer was cut (stream error, Ctrl-C): the text is what
   * arrived. Incomplete messages are kept and shown, and rendered like any other.
   */
  incomplete?: boolean;
}

/** One part of the system prompt. */
export interface SystemPart {
  id: string;
  text: string;
}

/** A tool definition, in JSON Schema terms. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
  /** Ask for strict argument decoding where the provider supports it. */
  strict?: boolean;
  /**
   * Set for a tool the provider runs itself (a server tool): the definition
   * as the provider documents it, sent as written, e.g. Anthropic's
   * `{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}`.
   * `parameters` is then an empty object schema. A provider whose wire has
   * no such tool refuses the request (INPUT_INVALID) instead of sending it
   * as a function.
   * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
   */
  server?: Record<string, unknown>;
}

/** The structured-output schema: one per session, part of the stable prefix. */
export interface OutputSchema {
  /** Name sent to providers that need one (OpenAI `json_schema.name`). */
  name: string;
  /** The user's JSON Schema. */
  schema: Record<string, unknown>;
}

/**
 * Z0: rendered once per session and frozen. Changing it is an explicit event
 * that starts a new prefix version.
 */
export interface StablePrefix {
  system: SystemPart[];
  /** Sorted by name. */
  tools: ToolDefinition[];
  schema?: OutputSchema;
  /** Hash of the canonical JSON of system + tools + schema. */
  fingerprint: Hash64;
}

/**
 * Z1 state: the summary baseline and the deltas appended to it, persisted so
 * a resumed session renders byte-identically. Empty until the first compaction.
 */
export interface SummaryState {
  /** Summary messages, in order; only ever appended to between compactions. */
  messages: Message[];
  /** Id of the newest log message the summary covers; older log messages are not rendered. */
  coversThrough: string | null;
}

/** Cache settings of one request, chosen by the user or config. */
export interface CacheSettings {
  /** `off` disables every cache strategy (for comparisons). */
  mode: "auto" | "off";
  /** Breakpoint TTL where the provider supports a choice. */
  ttl: "5m" | "1h";
  /**
   * Affinity key (the session id, or the parent's for an exact fork). Sent as
   * `prompt_cache_key` / `metadata.user_id` by the strategies.
   */
  affinityKey?: string;
}

/** Generation settings of one request. */
export interface GenerationSettings {
  /** Maximum output tokens. */
  maxTokens?: number;
  temperature?: number;
  /** Stream the answer (default true). */
  stream: boolean;
  /** Provider options from `-o key=value` (the session's, see src/run/sticky-generation.ts), merged into the request body as they are. */
  providerOptions: Record<string, unknown>;
}

/**
 * Everything an adapter needs to render one wire request. Plain data: an
 * adapter's `render` is a pure function of it.
 */
export interface RequestContext {
  /** The provider's own model id (without the `provider/` prefix). */
  model: string;
  /** The provider id, as in `provider/model`. */
  provider: string;
  prefix: StablePrefix;
  /** Z1: summary messages; empty until the first compaction. */
  summary: Message[];
  /** Z2: the append-only log, oldest first, ending with the new user message. */
  messages: Message[];
  /** Volatile text for this request only, rendered after the last message. */
  overlay?: string;
  generation: GenerationSettings;
  cache: CacheSettings;
}
