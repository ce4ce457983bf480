/**
 * Provider adapters: the contract between cachet's core and a provider
 * (built-in or third-party). Modelled on the Vercel AI SDK's provider spec:
 * small pure pieces (render, usage mapping) around one I/O method (send).
 */
import type { RequestContext } from "../context/types.ts";
import type { StreamEvent } from "./stream.ts";
import type { Usage, UsageReport } from "./usage.ts";
import type { Protocol, WireRequest } from "./wire.ts";

/** Settings a provider adapter is created with. */
export interface ProviderConfig {
  /** The provider id this adapter serves (`acme` in `acme/model-x`). */
  providerId: string;
  /** API key, from the provider's environment variable or the config; undefined when none is set. */
  apiKey: string | undefined;
  /** Base URL as the provider's SDK expects it (`--base-url`, config, emulator, or the spec's default). */
  baseUrl: string;
  /** The fetch to use; tests inject one. Adapters must pass it to their SDK. */
  fetch: typeof fetch;
  /** Provider options from config and `-o key=value`. */
  options: Record<string, unknown>;
}

/** Options of one {@link ProviderAdapter.send} call. */
export interface SendOptions {
  /** Aborted on Ctrl-C, on a stall, or when the core gives up. */
  signal: AbortSignal;
}

/**
 * A created adapter. `render` and `usage` are pure; `send` does the I/O.
 */
export interface ProviderAdapter {
  /**
   * Renders the context into the exact wire request, without cache markers
   * (cache strategies add those). Must be deterministic: the same context
   * gives the same bytes, and an old node renders to the same bytes on every
   * later request.
   * @throws CachetError SCHEMA_CONTRACT / CACHE_CONTRACT when the context
   *   breaks a provider contract that is checked locally.
   */
  render(context: RequestContext): WireRequest;
  /**
   * Sends the wire request (streaming when `body.stream` or the protocol's
   * streaming endpoint says so) and yields events, ending with one `finish`.
   * @throws ProviderError for HTTP errors and cut streams, with the API key redacted.
   */
  send(wire: WireRequest, options: SendOptions): AsyncIterable<StreamEvent>;
  /**
   * Maps the provider's final raw usage object to normalized counts
   * (providers.md §1). Unknown counts stay undefined.
   */
  usage(raw: unknown): UsageReport;
  /**
   * Optional (since API 1.2), for providers that keep a conversation on their
   * side (OpenAI Responses `previous_response_id`): the incremental form of
   * `wire`, which names the previous request's stored response and sends only
   * what follows it; undefined when `wire` cannot be sent that way (e.g.
   * `store: false`). The core offers it only when the request is the session's
   * previous request, unchanged, followed by that request's answer and new
   * input, and it keeps `wire` (the whole request) for hashing, `cachet why`
   * and cost, since the provider processes and bills the whole conversation.
   */
  continueFrom?(wire: WireRequest, previous: PreviousCall): WireRequest | undefined;
  /**
   * Optional, with {@link continueFrom}: true for the provider's refusal of an
   * incremental request whose stored conversation is gone (expired, deleted,
   * never stored). The core then sends the whole request instead.
   */
  isContinuationLost?(error: unknown): boolean;
}

/** What {@link ProviderAdapter.continueFrom} continues. */
export interface PreviousCall {
  /** The provider's id of the session's previous request (its `finish` event's `requestId`). */
  requestId: string;
  /**
   * How many leading segments of the request are that previous request's
   * segments followed by its answer's: the conversation the provider stored.
   * The segments after them are the new input.
   */
  sharedSegments: number;
}

/** A provider registered by a plugin. */
export interface ProviderSpec {
  /** Provider id, as in models.dev (`anthropic`, `openai`, `deepseek`, ...). */
  id: string;
  /** Wire format; decides which cache strategies apply. */
  protocol: Protocol;
  /** Display name. */
  name?: string;
  /**
   * The models.dev provider id whose prices apply, when it differs from `id`
   * (e.g. `openai-responses` is priced as `openai`; a proxy plugin may price
   * as the upstream). Defaults to `id`.
   */
  catalogId?: string;
  /** Environment variables holding the API key, first set one wins. */
  env: string[];
  /** Base URL given to the SDK when neither config nor flags set one. */
  defaultBaseUrl: string;
  /**
   * Path under the emulator root that serves this provider, e.g. `/v1` for
   * OpenAI's SDK or `/deepseek` for an OpenAI-compatible preset. The emulator
   * picks the usage shape from the first path segment when it names a
   * provider it knows.
   */
  emulatorPath: string;
  /**
   * How the provider's prompt cache counts for a model: used for the
   * cacheable maximum (cache efficiency) and by `cachet why`. Absent means
   * automatic prefix caching from 1,024 tokens, exact counts.
   */
  cacheRules?: (model: string) => CacheRules;
  /**
   * The max_tokens the adapter sends when the user sets none, tokens, when
   * its wire requires one (Anthropic: 8,192); absent when it sends none.
   * Compaction and the context-window check reserve it in the window.
   */
  defaultMaxTokens?: number;
  /** Model ids this provider is known to serve; absent means any. The first one is what `cachet plugins test` sends to the emulator. */
  models?: string[];
  /**
   * The provider's documented usage objects and what they must map to
   * (since API 1.1). `cachet plugins test` and the built-ins' contract suite
   * check that `usage(raw)` gives exactly these counts.
   */
  usageExamples?: UsageExample[];
  /** Creates an adapter. */
  create(config: ProviderConfig): ProviderAdapter;
}

/** One documented usage object of a provider and its normalized counts. */
export interface UsageExample {
  /** Where the example comes from: the provider doc's URL (and section). */
  source?: string;
  /** The raw usage object, as the provider documents it. */
  raw: unknown;
  /** The counts `usage(raw)` must return; a count left out must be unknown. */
  usage: Partial<Record<keyof Usage, number>>;
}

/**
 * A provider's prompt-cache accounting rules for one model, as documented
 * (see providers.md). Plain data so `why` and the meter need no plugin code.
 */
export interface CacheRules {
  /**
   * `breakpoints`: entries are written only at explicit markers (Anthropic,
   * Qwen explicit mode); `prefix`: the provider caches prompt prefixes itself
   * (OpenAI, Gemini implicit, DeepSeek, Kimi).
   */
  mode: "breakpoints" | "prefix";
  /** Smallest prefix the provider caches, tokens; shorter prompts read and write nothing. */
  minimumTokens: number;
  /** Reported hits are rounded down to a multiple of this many tokens (OpenAI before GPT-5.6: 128); 1 = exact. */
  granularity: number;
  /** Blocks walked back from a breakpoint looking for an earlier entry (Anthropic: 20). */
  lookback?: number;
  /**
   * Most cache markers (`cache_control`) one request may carry; the provider
   * refuses more with an HTTP 400 (Anthropic and Qwen explicit: 4, see
   * providers.md §2a and §7). The core re-checks it on the final wire request,
   * after the last cache strategy and `request:before` hook.
   */
  maxBreakpoints?: number;
  /** Entry lifetime without use, ms, per TTL; refreshed on read. */
  ttlMs?: { "5m"?: number; "1h"?: number; default?: number };
  /**
   * True when the provider also keeps the model's answer in the cache, so the
   * next request can read the previous prompt plus the previous answer
   * (DeepSeek persists a unit at the end of the model output). Absent: only
   * the prompt is cached.
   * @see https://api-docs.deepseek.com/guides/kv_cache
   */
  answerCached?: boolean;
  /**
   * True when a read needs a stored prefix unit matched whole, and units are
   * stored only at the end of a request's input and of its output and where
   * two requests were seen to share a prefix and diverge (DeepSeek). A prefix
   * that every later request extended past is then never a unit of its own.
   * @see https://api-docs.deepseek.com/guides/kv_cache
   */
  prefixUnits?: boolean;
}
