/**
 * Records the session store keeps. Shared by the store (src/session), the
 * turn pipeline (src/run), the meter's `cost`/`stats` and `cachet why`.
 */
import type { Message, StablePrefix, SummaryState } from "../context/types.ts";
import type { Usage } from "../plugin/usage.ts";
import type { Protocol } from "../plugin/wire.ts";
import type { Hash64 } from "../wire/hash.ts";

/** A session: one conversation with one stable prefix at a time. */
export interface SessionRecord {
  /** Random id (e.g. `s_` + 12 base32 chars). */
  id: string;
  /** Optional unique name given with `--session NAME`. */
  name: string | null;
  /** `provider/model` of the latest turn. */
  model: string;
  /** Parent session for a fork, else null. */
  parentId: string | null;
  /** Message id in the parent after which this fork branches (the parent's nodes are shared up to it). */
  forkPoint: string | null;
  /** Affinity key sent as `prompt_cache_key` / `metadata.user_id`; an exact fork inherits the parent's. */
  affinityKey: string;
  /** Unix epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/** One version of a session's stable prefix. Version 1 is the first; a change adds a version. */
export interface PrefixVersion {
  version: number;
  prefix: StablePrefix;
  /** Unix epoch ms when this version started. */
  createdAt: number;
  /** Why it changed, e.g. "system changed", "tools changed", "schema changed"; null for version 1. */
  reason: string | null;
}

/** Everything needed to render a session's next request. Resume renders byte-identically to live. */
export interface LoadedSession {
  session: SessionRecord;
  prefix: PrefixVersion;
  summary: SummaryState;
  /** The log, oldest first (a fork sees its parent's messages up to the fork point, then its own). */
  messages: Message[];
  /** The generation settings its turns send; undefined when none is stored (a session older than them, or a fork before its first turn). */
  generation?: SessionGeneration;
}

/**
 * Generation settings that stick to a session (src/run/sticky-generation.ts):
 * what its latest turn sent, for the provider of its model.
 */
export interface SessionGeneration {
  /** `-o key=value` provider options, merged into the request body as they are. */
  providerOptions: Record<string, unknown>;
  /** Output limit, tokens. */
  maxTokens?: number;
  temperature?: number;
}

/** Element of a request's wire hash chain, in the provider's cache order. */
export interface ChainLink {
  nodeId: string;
  kind: string;
  /** Content hash of the element (cache markers stripped). */
  content: Hash64;
  /** Cumulative prefix hash up to and including this element. */
  prefix: Hash64;
  /** Estimated tokens of this element (memoized per content hash). */
  tokens: number;
  /** Breakpoint TTL when a cache marker sits on this element. */
  breakpoint?: "5m" | "1h";
}

/**
 * Outcome of a provider call. `in_flight`: written when the request is sent,
 * usage unknown, replaced by the final row when the answer ends; `lost`: an
 * in-flight row whose process ended first (killed, crashed), marked so by the
 * session's next turn. Both may have been billed: their cost is unknown.
 */
export type RequestStatus = "ok" | "incomplete" | "error" | "in_flight" | "lost";

/** One ledger row: one provider call, priced. */
export interface LedgerRow {
  /** Ledger id (e.g. `r_` + 12 base32 chars). */
  id: string;
  sessionId: string;
  /** Stable prefix version the request was rendered with. */
  prefixVersion: number;
  /** Why the call was made: main, subagent, compactor, summarizer, title, probe, ... */
  role: string;
  provider: string;
  /** Provider's model id (without provider prefix). */
  model: string;
  protocol: Protocol;
  /** Unix epoch ms when the request was sent, its first content byte arrived, and it finished. */
  startedAt: number;
  firstTokenAt: number | null;
  finishedAt: number | null;
  /** finishedAt - startedAt, ms. */
  latencyMs: number | null;
  /** firstTokenAt - startedAt, ms. */
  ttftMs: number | null;
  /** Output tokens per second over the streaming part. */
  outputTps: number | null;
  usage: Usage;
  rawUsage: unknown;
  /** Computed cost in USD, null when unknown (unknown model or price). */
  costUsd: number | null;
  /**
   * What the request would have cost with every prompt token at the input
   * price, USD, priced when recorded (for savings); null when unknown;
   * undefined when not priced yet (rows recorded before figures were stored).
   */
  noCacheCostUsd?: number | null;
  /** Why `costUsd` is a flagged estimate or lower bound; null or absent when exact. */
  costEstimate?: string | null;
  /** Cost the provider reported itself (OpenRouter), USD. */
  providerCostUsd: number | null;
  /** The provider's request/response id, as it sent it (not a key: local servers and proxies reuse it). */
  providerRequestId: string | null;
  /** Affinity key sent, if any. */
  affinityKey: string | null;
  /** Cache mode and TTL used. */
  cacheMode: "auto" | "off";
  cacheTtl: "5m" | "1h";
  /** The wire hash chain, one link per cacheable element. */
  chain: ChainLink[];
  /**
   * Cacheable maximum: tokens (in the provider's counting) of the longest
   * prefix the previous request of the session could have left in the cache
   * for this one; null for a session's first request. Cache efficiency =
   * cacheRead / cacheableMax.
   */
  cacheableMax: number | null;
  /** For a fork's first request: the tokens expected to be read from the parent's cache. */
  expectedCacheRead: number | null;
  status: RequestStatus;
  /** Error message when status is "error" (or why a row is "lost"). */
  error: string | null;
  /** Id of the assistant message this call produced, if any. */
  messageId: string | null;
  /** Why the answer ended, in the provider adapter's words (`stop`, `length`, `tool_use`, ...); null when unknown or failed. */
  finishReason?: string | null;
  /** 1-based attempt number within the turn (retries before output are attempts 2, 3, ...); absent means 1. */
  attempt?: number;
  /**
   * True when `usage` is what the provider reported before the stream was cut
   * (e.g. Anthropic's input side at message_start, CASES.md case 44): the
   * billed usage is at least this, and the cost is a lower bound.
   */
  usageLowerBound?: boolean;
  /**
   * How the request was sent: `full` (the whole request) or `incremental`
   * (only the new input, continuing the provider's stored previous response:
   * OpenAI Responses `previous_response_id`). Either way `chain` and the usage
   * are the whole request's: the provider processes and bills all of it.
   * Absent for requests recorded before cachet recorded the form.
   */
  requestForm?: RequestForm;
  /**
   * The service tier the provider said it served, as it wrote it, when it said
   * one outside the raw usage (OpenAI's response-level `service_tier`): it
   * decides the price, so `cachet cost --tree` prices the nodes with it.
   */
  serviceTier?: string;
  /**
   * The spend this row's cost counts toward straight from the ledger (src/budget/ledger-spend.ts): `real`, or
   * `emulated` (`--emulate`). Absent when it counts otherwise, through the reservations of a run under a spending
   * limit (table `spend`), or not at all (another client's request recorded by `cachet proxy`). Written with the
   * row, never changed, not read back.
   */
  spend?: "real" | "emulated";
}

/** See {@link LedgerRow.requestForm}. */
export type RequestForm = "full" | "incremental";
