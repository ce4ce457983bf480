/**
 * Normalized usage: what one request consumed, as mutually exclusive counts
 * of tokens. Every provider adapter maps its raw usage object to this shape
 * (providers.md §1); the meter prices only this shape.
 *
 * A field is `undefined` (or left out) when the provider did not say; never
 * 0 or NaN for "unknown". Every field is optional so that a count added in a
 * later API version never breaks a plugin built before it: the host reads a
 * missing field as unknown. A present field must be a whole number ≥ 0,
 * else the host discards the whole usage of that request as unknown, with a
 * warning naming the plugin.
 * Billed input = input + cacheRead + cacheWrite5m + cacheWrite1h.
 */
export interface Usage {
  /** Uncached input tokens, billed at the input price. */
  input?: number | undefined;
  /** Tokens read from the prompt cache. */
  cacheRead?: number | undefined;
  /** Tokens written to the cache with a 5-minute TTL (or the provider's only TTL). */
  cacheWrite5m?: number | undefined;
  /** Tokens written to the cache with a 1-hour TTL. */
  cacheWrite1h?: number | undefined;
  /** Billed output tokens, reasoning included. */
  output?: number | undefined;
  /** Reasoning tokens: a part of `output`, for information only. */
  reasoning?: number | undefined;
}

/**
 * What an adapter's usage mapping returns: the normalized counts, the raw
 * object as the provider sent it, and what else the provider said.
 */
export interface UsageReport {
  usage: Usage;
  /** The provider's final usage object, unchanged. */
  raw: unknown;
  /** Cost the provider reported itself, in USD (OpenRouter `usage.cost`), kept beside the computed one. */
  providerCostUsd?: number;
  /**
   * A router's own fee, USD, on a request whose tokens are billed to the
   * user's own provider key: OpenRouter BYOK, where `usage.cost` is only
   * OpenRouter's fee and `cost_details.upstream_inference_cost` is what the
   * upstream bills the key. The computed cost prices the tokens and adds this
   * fee as a `router_fee` line, so it is what the user pays in all.
   * @see https://openrouter.ai/docs/use-cases/usage-accounting (cost: charged to your account; upstream_inference_cost: charged by the upstream provider)
   */
  routerFeeUsd?: number;
  /**
   * Why some count is an estimate, e.g. "cache write TTL split missing:
   * priced as 5m". Empty or absent when everything was reported.
   */
  estimates?: string[];
  /**
   * The service tier the provider says it served (`flex`, `priority`,
   * `batch`, `standard`, `default`, ...), as it wrote it. It decides the
   * price multiplier, not the tier that was asked for. Absent when the
   * provider did not say. Adapters that read it from the response rather
   * than the usage object put it on the `finish` event instead.
   * @see https://platform.openai.com/docs/api-reference/chat/object (service_tier)
   * @see https://docs.claude.com/en/api/messages (usage.service_tier)
   */
  serviceTier?: string;
  /** Calls of server-side tools billed per call (not tokens), as the usage reports them. */
  serverToolCalls?: ServerToolCalls;
  /** Parts of the normalized counts by modality, where the provider reports them (priced at their own rate when the catalog has one). */
  modalities?: ModalityTokens;
  /**
   * The cache mode the provider says it used, for providers whose cache-read
   * price depends on it (Alibaba: explicit reads 10% of input, implicit 20%).
   * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
   */
  cacheMode?: "explicit" | "implicit";
  /**
   * Passes the provider ran inside this request on its own initiative and
   * reported apart from `usage`, which holds only the pass that produced the
   * answer (Anthropic server-side compaction: the `compaction` entries of
   * `usage.iterations`, outside the top-level counts). The core records each
   * as a ledger row of its own with `role`, priced like the request.
   * @see https://platform.claude.com/docs/en/build-with-claude/compaction (Understanding usage)
   */
  passes?: UsagePass[];
}

/** One extra pass of a request (see {@link UsageReport.passes}). */
export interface UsagePass {
  /** Ledger role of the pass, e.g. `server_compaction`. */
  role: string;
  usage: Usage;
  /** The provider's usage entry of the pass, unchanged. */
  raw: unknown;
}

/** Server-side tools billed per call (USD per 1,000 calls in the catalog's `server_tools`). */
export type ServerTool = "web_search" | "web_fetch" | "code_execution" | "grounding";

/** Number of calls per server-side tool, as the usage reports them (absent tool: not reported). */
export type ServerToolCalls = Partial<Record<ServerTool, number>>;

/**
 * Token counts by modality, each a PART of the normalized count it sits
 * under: `input.image` ⊆ `input` (uncached), `output.audio` ⊆ `output`.
 * Text is the remainder.
 */
export interface ModalityTokens {
  input?: { image?: number; audio?: number };
  output?: { image?: number; audio?: number };
}

/** A usage with every count unknown. */
export const UNKNOWN_USAGE: Readonly<Usage> = Object.freeze({
  input: undefined,
  cacheRead: undefined,
  cacheWrite5m: undefined,
  cacheWrite1h: undefined,
  output: undefined,
  reasoning: undefined,
});

/** The six normalized counts of a {@link Usage}, in ledger order. */
export const USAGE_COUNTS = ["input", "cacheRead", "cacheWrite5m", "cacheWrite1h", "output", "reasoning"] as const satisfies readonly (keyof Usage)[];

/** Total prompt tokens (input + cache reads + cache writes), or undefined if `input` is unknown. */
export function promptTokens(usage: Usage): number | undefined {
  if (usage.input === undefined) return undefined;
  return usage.input + (usage.cacheRead ?? 0) + (usage.cacheWrite5m ?? 0) + (usage.cacheWrite1h ?? 0);
}

/** A usage as JSON output shows it: the same counts, unknown ones as `null` (JSON has no undefined). */
export type UsageJson = { [K in keyof Usage]: number | null };

/** The JSON form of a usage (`--json` events, `cachet price --json`). */
export function usageJson(usage: Usage): UsageJson {
  return {
    input: usage.input ?? null,
    cacheRead: usage.cacheRead ?? null,
    cacheWrite5m: usage.cacheWrite5m ?? null,
    cacheWrite1h: usage.cacheWrite1h ?? null,
    output: usage.output ?? null,
    reasoning: usage.reasoning ?? null,
  };
}
