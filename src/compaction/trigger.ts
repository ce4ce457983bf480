/**
 * When to compact (shared/compaction.md, "Trigger" and "Target"): a calibrated
 * wire estimate of the next request against a soft limit below the window,
 * and how far below it a compaction must land (hysteresis).
 */
import { promptTokens } from "../plugin/usage.ts";
import type { LedgerRow } from "../session/types.ts";

/** Tokens kept free below the window besides the output (shared/compaction.md). */
const WINDOW_MARGIN = 4096;
/** Absolute ceiling of the post-compaction target, tokens. */
const TARGET_MAX = 40_000;
/** Ceiling of the kept tail, tokens. */
const TAIL_MAX = 16_000;

/** The token limits of one session's compaction. */
export interface CompactionLimits {
  /** The model's context window, tokens (MAX_SAFE_INTEGER when unknown). */
  window: number;
  /** Compact when the next request's estimate exceeds this. */
  trigger: number;
  /** After a compaction the estimate should be at most this (half the trigger, at most 40k). */
  target: number;
  /** Budget of the kept tail (0.4 × target, at most 16k). */
  tail: number;
}

/**
 * The limits for a model window (tokens) and maximum output (tokens): the
 * trigger is `triggerTokens` when configured, else min(0.8 × window,
 * window − max output − 4,096).
 */
export function compactionLimits(window: number, maxOutput: number, triggerTokens?: number, tailTokens?: number): CompactionLimits {
  const trigger = triggerTokens ?? Math.max(1, Math.min(Math.floor(0.8 * window), window - maxOutput - WINDOW_MARGIN));
  const target = Math.min(TARGET_MAX, Math.floor(0.5 * trigger));
  return { window, trigger, target, tail: tailTokens ?? Math.min(TAIL_MAX, Math.floor(0.4 * target)) };
}

/** Estimated tokens of a request's wire chain (sum of its links). */
export function chainTokens(row: Pick<LedgerRow, "chain">): number {
  let n = 0;
  for (const link of row.chain) n += link.tokens;
  return n;
}

/**
 * Running ratio of the provider's prompt tokens to the wire estimate over the
 * session's answered requests (an EMA, α = 0.5, newest weighing most); 1 without any.
 */
export function calibration(rows: readonly LedgerRow[]): number {
  let ratio: number | undefined;
  for (const row of rows) {
    const actual = promptTokens(row.usage);
    const estimate = chainTokens(row);
    if (row.status !== "ok" || actual === undefined || actual <= 0 || estimate <= 0) continue;
    const r = actual / estimate;
    ratio = ratio === undefined ? r : 0.5 * ratio + 0.5 * r;
  }
  return ratio ?? 1;
}

/**
 * W_next: the last request's provider-reported prompt tokens plus the
 * calibrated estimate of what the next one appends, never below the raw
 * estimate (as oh-my-pi does).
 * @param nextEstimate wire estimate of the next request, tokens
 * @param last the session's latest answered request, if any
 */
export function nextRequestTokens(nextEstimate: number, last: LedgerRow | undefined, ratio: number): number {
  const actual = last ? promptTokens(last.usage) : undefined;
  if (!last || actual === undefined) return Math.ceil(nextEstimate * ratio - 1e-9);
  const appended = Math.max(0, nextEstimate - chainTokens(last));
  return Math.max(Math.ceil(actual + ratio * appended - 1e-9), nextEstimate);
}
