/**
 * The store's rows as SQLite returns them, and their conversion to and from
 * the records of src/session/types.ts. Column lists live here once, so the
 * insert, the update and the read of a ledger row cannot drift apart.
 */
import type { Block, Message, StablePrefix } from "../context/types.ts";
import { storableRaw } from "../plugin/raw-token-counts.ts";
import type { Usage } from "../plugin/usage.ts";
import type { Protocol } from "../plugin/wire.ts";
import type { LogEntry } from "./log.ts";
import type { ChainLink, LedgerRow, PrefixVersion, RequestForm, RequestStatus, SessionGeneration, SessionRecord } from "./types.ts";
import { FIGURE_COLUMNS, figureValues } from "./ledger-figures.ts";

/** Ledger columns written by insert and update, in the order of {@link ledgerValues}. */
export const LEDGER_COLUMNS = [
  "prefix_version", "role", "provider", "model", "protocol", "started_at", "first_token_at", "finished_at", "latency_ms", "ttft_ms", "output_tps",
  "input", "cache_read", "cache_write_5m", "cache_write_1h", "output", "reasoning", "raw_usage", "cost_usd", "provider_cost_usd",
  "provider_request_id", "affinity_key", "cache_mode", "cache_ttl", "expected_cache_read", "status", "error", "message_id", "cacheable_max", "finish_reason",
  "attempt", "usage_lower_bound", "request_form", "service_tier",
  ...FIGURE_COLUMNS,
] as const;

export type SqlValue = string | number | null;

export function ledgerValues(row: LedgerRow): SqlValue[] {
  const u = row.usage;
  return [
    row.prefixVersion, row.role, row.provider, row.model, row.protocol, row.startedAt, row.firstTokenAt, row.finishedAt, row.latencyMs, row.ttftMs, row.outputTps,
    u.input ?? null, u.cacheRead ?? null, u.cacheWrite5m ?? null, u.cacheWrite1h ?? null, u.output ?? null, u.reasoning ?? null,
    // A count past the number range (a provider's 1e400) would be stored as JSON's null: stored as a string saying so.
    row.rawUsage === undefined ? null : JSON.stringify(storableRaw(row.rawUsage)), row.costUsd, row.providerCostUsd,
    row.providerRequestId, row.affinityKey, row.cacheMode, row.cacheTtl, row.expectedCacheRead, row.status, row.error, row.messageId, row.cacheableMax ?? null, row.finishReason ?? null,
    row.attempt ?? 1, row.usageLowerBound ? 1 : 0, row.requestForm ?? null, row.serviceTier ?? null,
    ...figureValues(row),
  ];
}

export interface SessionRow {
  id: string;
  name: string | null;
  model: string;
  parent_id: string | null;
  fork_point: string | null;
  affinity_key: string;
  created_at: number;
  updated_at: number;
  rev: number;
  /** The sticky generation settings, JSON (src/run/sticky-generation.ts); null: none stored. */
  generation: string | null;
}

export interface PrefixRow {
  session_id: string;
  version: number;
  fingerprint: string;
  prefix: string;
  reason: string | null;
  created_at: number;
}

export interface MessageRow {
  session_id: string;
  seq: number;
  id: string;
  role: string;
  /** The content JSON, or its first part when `parts` > 0 (message-parts.ts). */
  content: string;
  /** Parts of the content JSON in `message_parts` after this first one. */
  parts: number;
  incomplete: number;
  created_at: number;
}

export interface LeaseRow {
  session_id: string;
  owner_pid: number;
  host: string;
  token: string;
  expires_at: number;
}

export interface RequestRow {
  id: string;
  session_id: string;
  prefix_version: number;
  role: string;
  provider: string;
  model: string;
  protocol: string;
  started_at: number;
  first_token_at: number | null;
  finished_at: number | null;
  latency_ms: number | null;
  ttft_ms: number | null;
  output_tps: number | null;
  input: number | null;
  cache_read: number | null;
  cache_write_5m: number | null;
  cache_write_1h: number | null;
  output: number | null;
  reasoning: number | null;
  raw_usage: string | null;
  cost_usd: number | null;
  provider_cost_usd: number | null;
  provider_request_id: string | null;
  affinity_key: string | null;
  cache_mode: string;
  cache_ttl: string;
  chain_base: string | null;
  chain_shared: number;
  chain_depth: number;
  chain_tail: string | null;
  expected_cache_read: number | null;
  cacheable_max: number | null;
  status: string;
  error: string | null;
  message_id: string | null;
  finish_reason: string | null;
  attempt: number;
  usage_lower_bound: number;
  request_form: string | null;
  service_tier?: string | null;
  no_cache_pico?: number | null;
  cost_estimate?: string | null;
  figured?: number;
}

export function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    name: row.name,
    model: row.model,
    parentId: row.parent_id,
    forkPoint: row.fork_point,
    affinityKey: row.affinity_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The session row's sticky generation settings, undefined when none is stored. */
export function toGeneration(row: Pick<SessionRow, "generation">): SessionGeneration | undefined {
  return row.generation ? (JSON.parse(row.generation) as SessionGeneration) : undefined;
}

export function toPrefixVersion(row: PrefixRow): PrefixVersion {
  return { version: row.version, prefix: deepFreeze(JSON.parse(row.prefix) as StablePrefix), createdAt: row.created_at, reason: row.reason };
}

export function toEntry(row: MessageRow): LogEntry {
  const message: Message = { id: row.id, role: row.role as Message["role"], content: JSON.parse(row.content) as Block[] };
  if (row.incomplete) message.incomplete = true;
  return { sessionId: row.session_id, seq: row.seq, createdAt: row.created_at, message: deepFreeze(message) };
}

export function toLedgerRow(row: RequestRow, chain: ChainLink[]): LedgerRow {
  const usage: Usage = {
    input: row.input ?? undefined,
    cacheRead: row.cache_read ?? undefined,
    cacheWrite5m: row.cache_write_5m ?? undefined,
    cacheWrite1h: row.cache_write_1h ?? undefined,
    output: row.output ?? undefined,
    reasoning: row.reasoning ?? undefined,
  };
  return {
    id: row.id,
    sessionId: row.session_id,
    prefixVersion: row.prefix_version,
    role: row.role,
    provider: row.provider,
    model: row.model,
    protocol: row.protocol as Protocol,
    startedAt: row.started_at,
    firstTokenAt: row.first_token_at,
    finishedAt: row.finished_at,
    latencyMs: row.latency_ms,
    ttftMs: row.ttft_ms,
    outputTps: row.output_tps,
    usage,
    rawUsage: row.raw_usage === null ? null : JSON.parse(row.raw_usage),
    costUsd: row.cost_usd,
    ...(row.figured ? { noCacheCostUsd: row.no_cache_pico === null || row.no_cache_pico === undefined ? null : row.no_cache_pico / 1e12 } : {}),
    ...(row.cost_estimate ? { costEstimate: row.cost_estimate } : {}),
    providerCostUsd: row.provider_cost_usd,
    providerRequestId: row.provider_request_id,
    affinityKey: row.affinity_key,
    cacheMode: row.cache_mode as LedgerRow["cacheMode"],
    cacheTtl: row.cache_ttl as LedgerRow["cacheTtl"],
    chain,
    expectedCacheRead: row.expected_cache_read,
    cacheableMax: row.cacheable_max,
    status: row.status as RequestStatus,
    error: row.error,
    messageId: row.message_id,
    ...(row.finish_reason !== null ? { finishReason: row.finish_reason } : {}),
    ...(row.attempt !== 1 ? { attempt: row.attempt } : {}),
    ...(row.usage_lower_bound === 1 ? { usageLowerBound: true } : {}),
    ...(row.request_form !== null && row.request_form !== undefined ? { requestForm: row.request_form as RequestForm } : {}),
    ...(typeof row.service_tier === "string" ? { serviceTier: row.service_tier } : {}),
  };
}

/** Freezes a value and everything in it (loaded records are shared between callers). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
