/**
 * OpenAI usage mapping (Chat Completions and Responses) to normalized usage.
 * OpenAI folds cache reads and writes into the prompt total, and reasoning
 * into the output total: uncached input = prompt − cached − cache_write, and
 * reasoning is reported, never added to output again.
 * @see https://platform.openai.com/docs/guides/prompt-caching (ordinary input = input − cached − cache_write)
 * @see https://github.com/openai/openai-node/blob/master/src/resources/completions.ts (CompletionUsage)
 */
import type { Usage, UsageReport } from "../../src/plugin/index.ts";

/**
 * Maps a Chat Completions `usage` object (`prompt_tokens`,
 * `prompt_tokens_details.{cached_tokens, cache_write_tokens}`, `completion_tokens`,
 * `completion_tokens_details.reasoning_tokens`). Cache writes go to
 * `cacheWrite5m` (OpenAI has a single write TTL); `cacheWrite1h` is 0.
 * Pure; a field the provider did not send stays undefined.
 * @see https://github.com/openai/openai-node/blob/master/src/resources/completions.ts
 */
export function chatUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const details = objectOf(u?.prompt_tokens_details);
  return inclusiveUsage(raw, {
    prompt: tokenCount(u?.prompt_tokens),
    cached: tokenCount(details?.cached_tokens),
    written: tokenCount(details?.cache_write_tokens),
    output: tokenCount(u?.completion_tokens),
    reasoning: tokenCount(objectOf(u?.completion_tokens_details)?.reasoning_tokens),
  });
}

/**
 * Maps a Responses API `usage` object (`input_tokens`,
 * `input_tokens_details.{cached_tokens, cache_write_tokens}`, `output_tokens`,
 * `output_tokens_details.reasoning_tokens`). Also reads the flattened record
 * the Codex CLI logs (`cached_input_tokens`, `reasoning_output_tokens`), which
 * has the same inclusive meaning. Pure.
 * @see https://github.com/openai/openai-node/blob/master/src/resources/responses/responses.ts (ResponseUsage)
 */
export function responsesUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const details = objectOf(u?.input_tokens_details);
  return inclusiveUsage(raw, {
    prompt: tokenCount(u?.input_tokens),
    cached: tokenCount(details?.cached_tokens) ?? tokenCount(u?.cached_input_tokens),
    written: tokenCount(details?.cache_write_tokens),
    output: tokenCount(u?.output_tokens),
    reasoning: tokenCount(objectOf(u?.output_tokens_details)?.reasoning_tokens) ?? tokenCount(u?.reasoning_output_tokens),
  });
}

/** Counts read from a usage whose prompt total includes cache reads and writes. */
export interface InclusiveCounts {
  /** Prompt total, cache reads and writes included. */
  prompt: number | undefined;
  cached: number | undefined;
  written: number | undefined;
  /** Of `written`, the tokens written with a 1-hour TTL (OpenRouter's Anthropic upstreams). */
  written1h?: number | undefined;
  /** Billed output, reasoning included. */
  output: number | undefined;
  reasoning: number | undefined;
}

/**
 * Builds a report from a cache-inclusive prompt total. A prompt smaller than
 * its cached part makes input unknown (with an estimates note) instead of negative.
 */
export function inclusiveUsage(raw: unknown, counts: InclusiveCounts, extra: Omit<UsageReport, "usage" | "raw"> = {}): UsageReport {
  const estimates = [...(extra.estimates ?? [])];
  const { prompt, cached, written } = counts;
  let input = prompt === undefined ? undefined : prompt - (cached ?? 0) - (written ?? 0);
  if (input !== undefined && input < 0) {
    estimates.push(`prompt total ${prompt} is smaller than its cached ${cached ?? 0} + written ${written ?? 0} tokens: uncached input unknown`);
    input = undefined;
  }
  const written1h = written === undefined ? undefined : Math.min(counts.written1h ?? 0, written);
  const usage: Usage = {
    input,
    cacheRead: cached ?? (prompt === undefined ? undefined : 0),
    cacheWrite5m: written === undefined ? (prompt === undefined ? undefined : 0) : written - (written1h ?? 0),
    cacheWrite1h: written1h ?? (prompt === undefined ? undefined : 0),
    output: counts.output,
    reasoning: counts.reasoning,
  };
  const report: UsageReport = { usage, raw };
  if (extra.providerCostUsd !== undefined) report.providerCostUsd = extra.providerCostUsd;
  if (estimates.length > 0) report.estimates = estimates;
  return report;
}

/** A token count: a finite, non-negative integer, else undefined (never NaN). */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** The value as a plain object, else undefined. */
export function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
