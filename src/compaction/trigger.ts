/**
 * When to compact (shared/compaction.md, "Trigger" and "Target"): a calibrated
 * wire estimate of the next request against a soft limit below the window,
 * and how far below it a compaction must land (hysteresis).
 */
import { promptTokens } from "../plugin/usage.ts";
import type { LedgerRow } from "../session/types.ts";
import { tokenTotal } from "../wire/prefix-chain.ts";

/** Tokens kept free below the window besides the output (shared/compaction.md). */
const WINDOW_MARGIN = 4096;
/**
 * Share of the window the trigger never falls below. Without it a model whose
 * reserved output nears its window (an output limit ≥ window − 4,096 is
 * common in the catalog) gets a trigger of 0 and compacts every turn; at 0.6
 * the post-compaction target (half the trigger) still keeps 30% of the
 * window, and a request that then does not fit its output is caught by the
 * context-window check, which compacts once and retries.
 */
const TRIGGER_FLOOR = 0.6;
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
 * The output tokens a request reserves in the window: the max_tokens it sends
 * (`--max-tokens`, else the provider's default when its wire requires one,
 * see ProviderSpec.defaultMaxTokens), at most the model's output limit; 0
 * when it sends none (the 0.8 × window ceiling of the trigger leaves room
 * for the answer then).
 * @param maxTokens `--max-tokens` in effect, tokens
 * @param providerDefault max_tokens the provider plugin sends when none is set, tokens
 * @param outputLimit the catalog's output limit of the model, tokens
 */
export function reservedOutput(maxTokens: number | undefined, providerDefault: number | undefined, outputLimit: number | undefined): number {
  return Math.min(maxTokens ?? providerDefault ?? 0, outputLimit ?? Number.MAX_SAFE_INTEGER);
}

/**
 * The limits for a model window (tokens) and the output the request reserves
 * (tokens, {@link reservedOutput}): the trigger is `triggerTokens` when
 * configured, else min(0.8 × window, window − reserved output − 4,096) but
 * never below 0.6 × window (see TRIGGER_FLOOR).
 */
export function compactionLimits(window: number, reserved: number, triggerTokens?: number, tailTokens?: number): CompactionLimits {
  const formula = Math.min(Math.floor(0.8 * window), window - reserved - WINDOW_MARGIN);
  const trigger = triggerTokens ?? Math.max(1, Math.floor(TRIGGER_FLOOR * window), formula);
  const target = Math.min(TARGET_MAX, Math.floor(0.5 * trigger));
  return { window, trigger, target, tail: tailTokens ?? Math.min(TAIL_MAX, Math.floor(0.4 * target)) };
}

/**
 * Estimated tokens of a request's wire chain (sum of its links); each chain
 * is summed once per process, or not at all when the runtime worked its
 * total out from the previous request's (tokenTotal, src/wire/prefix-chain.ts).
 */
export function chainTokens(row: Pick<LedgerRow, "chain">): number {
  return tokenTotal(row.chain);
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
