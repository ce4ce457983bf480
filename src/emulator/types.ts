/**
 * Shapes shared by the emulator's modules: the neutral prompt every protocol
 * parser produces, the outcome every cache model returns, and the answer
 * every protocol renders.
 */

/** Providers whose usage shape and cache rules the emulator reproduces. */
export type EmulatedProvider =
  | "anthropic"
  | "openai"
  | "google"
  | "deepseek"
  | "moonshotai"
  | "alibaba"
  | "openrouter"
  | "xai";

/** Wire protocols served. */
export type Protocol = "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini";

/** A cache TTL of the breakpoint models (Anthropic, Qwen explicit). */
export type Ttl = "5m" | "1h";

/**
 * One cacheable element of a request in the provider's cache order
 * (tools → system → messages): a tool definition, a system part or a
 * message content block, as a protocol parser reads it.
 */
export interface ContentItem {
  /** `tool`, `system`, `developer`, `user`, `assistant`, `tool-result`… */
  role: string;
  /** Text the tokenizer counts and the hash covers (canonical JSON for structured blocks). */
  text: string;
  /** Fixed token count instead of counting `text` (images: the emulator does not decode them). */
  tokens?: number;
  /** An explicit cache marker on this block (`cache_control`, `prompt_cache_breakpoint`). */
  marker?: Ttl;
  /** True on the last block of a message, tool list or system part. */
  messageEnd?: boolean;
  /**
   * True on the last block of an "eligible" message for OpenAI GPT-5.6+
   * implicit breakpoints (user message, last tool response of a group, last
   * developer message of the initial developer block).
   */
  eligible?: boolean;
  /** False for blocks that cannot carry a breakpoint (thinking, empty text). */
  cacheable?: boolean;
  /** Hash of the settings that invalidate everything from this block on (Anthropic: tool_choice, thinking). */
  settings?: string;
}

/** A prompt element with its cumulative prefix hash and token position. */
export interface PromptBlock {
  /** Cumulative hash of the model id and every block up to and including this one. */
  prefix: string;
  /** Tokens from the start of the prompt through the end of this block. */
  end: number;
  marker: Ttl | undefined;
  messageEnd: boolean;
  eligible: boolean;
  cacheable: boolean;
  role: string;
}

/** The settings a parser reads from a request that the cache models and the answer generator use. */
export interface RequestSettings {
  /** Model id as sent on the wire (body or path). */
  model: string;
  /** `prompt_cache_key` or `x-grok-conv-id`, when sent. */
  affinityKey: string | undefined;
  /** Anthropic/OpenRouter top-level automatic `cache_control` TTL, when sent. */
  autoCache: Ttl | undefined;
  /** OpenAI GPT-5.6+ `prompt_cache_options.mode`. */
  cacheMode: "implicit" | "explicit" | undefined;
  /** OpenAI `prompt_cache_retention` (`in_memory` | `24h`), when sent. */
  retention: string | undefined;
  /** Assistant turns already in the request: picks the scripted answer. */
  assistantTurns: number;
  /** Output token cap from the request (`max_tokens`, `max_output_tokens`…), when sent. */
  maxTokens: number | undefined;
  /** The structured-output JSON Schema asked for, when any: the default answer then follows it. */
  outputSchema: Record<string, unknown> | undefined;
}

/** A request reduced to what the cache models and the answer generator need. */
export interface Prompt extends RequestSettings {
  provider: EmulatedProvider | "unknown";
  protocol: Protocol;
  blocks: PromptBlock[];
  /** Total prompt tokens (o200k_base count of every block). */
  total: number;
}

/** A tool call of an answer. `arguments` is a JSON object as a string. */
export interface AnswerToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The answer the emulator returns for one request. */
export interface Answer {
  text: string;
  thinking: string;
  toolCalls: AnswerToolCall[];
  /** Tokens of `text` plus the tool calls (o200k_base). */
  outputTokens: number;
  /** Tokens of `thinking`. */
  reasoningTokens: number;
  /** True when `maxTokens` cut the answer. */
  truncated: boolean;
  /** True when the script makes the model refuse (stop reason refusal / content filter). */
  refused?: boolean;
  /** Images the model outputs (image-output models; rendered by the Gemini protocol). */
  images?: number;
  /** Web searches the model runs with the provider's server tool, by query (Anthropic `web_search`). */
  webSearches?: string[];
  /** The searches run (web-search.ts): their content blocks, billed count and result tokens. */
  webSearch?: WebSearchRun;
}

/** Web searches an answer ran with Anthropic's server tool. */
export interface WebSearchRun {
  /** `server_tool_use` and `web_search_tool_result` blocks, in answer order. */
  blocks: Record<string, unknown>[];
  /** Searches billed (`usage.server_tool_use.web_search_requests`): those within `max_uses`. */
  requests: number;
  /** Tokens of the results the model read: billed as input. */
  resultTokens: number;
}

/**
 * What a cache model decided for one request, as mutually exclusive token
 * counts: `input + read + write5m + write1h = total`.
 */
export interface CacheOutcome {
  /** Uncached input tokens. */
  input: number;
  /** Tokens read from the cache. */
  read: number;
  /** Tokens written with a 5-minute (or the provider's only) TTL. */
  write5m: number;
  /** Tokens written with a 1-hour TTL. */
  write1h: number;
  /** Explicit-mode marker (Qwen explicit, OpenAI 5.6+ explicit breakpoints): writes are reported. */
  explicit: boolean;
}

/** A request as the emulator received it, for tests and for explaining cache misses. */
export interface ReceivedRequest {
  /** Emulated time the request arrived (ms since epoch, clock offset applied). */
  at: number;
  method: string;
  path: string;
  provider: EmulatedProvider | "unknown" | undefined;
  protocol: Protocol | undefined;
  model: string | undefined;
  /** Request headers minus secrets (authorization, api keys, cookies). */
  headers: Record<string, string>;
  /** Parsed JSON body (undefined when absent or not JSON). */
  body: unknown;
  status: number;
  /** The usage object returned on the wire, in the provider's shape. */
  usage: unknown;
  /** The neutral cache outcome behind `usage`. */
  cache: CacheOutcome | undefined;
  /** Fault applied, if any. */
  fault: string | undefined;
  /** Reasoning signatures the answer carried for the client to send back (Gemini 3 `thoughtSignature`), when the protocol has them. */
  signatures?: string[];
}
