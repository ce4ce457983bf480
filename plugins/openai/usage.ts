/**
 * OpenAI usage mapping (Chat Completions and Responses) to normalized usage.
 * OpenAI folds cache reads and writes into the prompt total, and reasoning
 * into the output total: uncached input = prompt − cached − cache_write, and
 * reasoning is reported, never added to output again.
 * @see https://platform.openai.com/docs/guides/prompt-caching (ordinary input = input − cached − cache_write)
 * @see https://github.com/openai/openai-node/blob/master/src/resources/completions.ts (CompletionUsage)
 */
import type { ModalityTokens, Usage, UsageExample, UsageReport } from "../../src/plugin/index.ts";

/**
 * Maps a Chat Completions `usage` object (`prompt_tokens`,
 * `prompt_tokens_details.{cached_tokens, cache_write_tokens}`, `completion_tokens`,
 * `completion_tokens_details.reasoning_tokens`). Cache writes go to
 * `cacheWrite5m` (OpenAI has a single write TTL); `cacheWrite1h` is 0.
 * An object with `input_tokens` and no `prompt_tokens` is a Responses usage
 * and is read as one. Pure; a field the provider did not send stays undefined.
 * @see https://github.com/openai/openai-node/blob/master/src/resources/completions.ts
 */
export function chatUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  // A Responses usage (e.g. a Codex log record) priced under a chat provider: read it as what it is.
  if (u !== undefined && !("prompt_tokens" in u) && "input_tokens" in u) return responsesUsage(raw);
  const details = objectOf(u?.prompt_tokens_details);
  const completionDetails = objectOf(u?.completion_tokens_details);
  return inclusiveUsage(raw, {
    prompt: tokenCount(u?.prompt_tokens),
    cached: tokenCount(details?.cached_tokens),
    written: tokenCount(details?.cache_write_tokens),
    output: tokenCount(u?.completion_tokens),
    reasoning: tokenCount(completionDetails?.reasoning_tokens),
    total: tokenCount(u?.total_tokens),
    modalities: chatModalities(details, completionDetails),
  });
}

/**
 * Audio (and xAI's image) parts of a Chat Completions usage:
 * `prompt_tokens_details.{audio_tokens, image_tokens}`, `completion_tokens_details.audio_tokens`.
 * @see https://github.com/openai/openai-node/blob/master/src/resources/completions.ts (CompletionUsage)
 */
export function chatModalities(prompt: Record<string, unknown> | undefined, completion: Record<string, unknown> | undefined): ModalityTokens {
  return {
    input: { audio: tokenCount(prompt?.audio_tokens), image: tokenCount(prompt?.image_tokens) },
    output: { audio: tokenCount(completion?.audio_tokens) },
  };
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
    total: tokenCount(u?.total_tokens),
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
  /** Output as reported (`completion_tokens`): reasoning inside or outside it, see {@link reasoningOutside}. */
  output: number | undefined;
  reasoning: number | undefined;
  /** `total_tokens` as reported: when present it decides whether reasoning is inside the output. */
  total?: number | undefined;
  /** Where reasoning is when `total_tokens` cannot tell (the provider's documented rule); default inside. */
  reasoningOutsideByDefault?: boolean;
  /** Modality parts of the reported counts (clamped to the uncached input and the output). */
  modalities?: ModalityTokens;
}

/**
 * Whether reasoning tokens are OUTSIDE the reported output count, decided by
 * the numbers: `total = prompt + output + reasoning` says outside, `total =
 * prompt + output` says inside (CASES.md case 37). Without a total, or when
 * it matches neither, the provider's documented rule (`fallback`) holds and
 * `note` says why in the second case.
 * @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/usage-and-pricing (xAI: total = prompt + completion + reasoning)
 * @see https://platform.openai.com/docs/guides/reasoning (OpenAI: reasoning inside completion_tokens)
 */
export function reasoningOutside(counts: { prompt: number | undefined; output: number | undefined; reasoning: number | undefined; total: number | undefined }, fallback: boolean): { outside: boolean; note?: string } {
  const { prompt, output, reasoning, total } = counts;
  if (!reasoning || prompt === undefined || output === undefined || total === undefined) return { outside: fallback };
  if (total === prompt + output + reasoning) return { outside: true };
  if (total === prompt + output) return { outside: false };
  return {
    outside: fallback,
    note: `total_tokens ${total} is neither prompt + output (${prompt + output}) nor prompt + output + reasoning (${prompt + output + reasoning}): reasoning taken as ${fallback ? "outside" : "inside"} the output`,
  };
}

/**
 * Builds a report from a cache-inclusive prompt total. A prompt smaller than
 * its cached part makes input unknown (with an estimates note) instead of
 * negative. Reasoning outside the reported output is added to it.
 */
export function inclusiveUsage(raw: unknown, counts: InclusiveCounts, extra: Omit<UsageReport, "usage" | "raw"> = {}): UsageReport {
  const estimates = [...(extra.estimates ?? [])];
  const { prompt, cached, written } = counts;
  let input = prompt === undefined ? undefined : prompt - (cached ?? 0) - (written ?? 0);
  if (input !== undefined && input < 0) {
    estimates.push(`prompt total ${prompt} is smaller than its cached ${cached ?? 0} + written ${written ?? 0} tokens: uncached input unknown`);
    input = undefined;
  }
  const placement = reasoningOutside({ prompt, output: counts.output, reasoning: counts.reasoning, total: counts.total }, counts.reasoningOutsideByDefault ?? false);
  if (placement.note) estimates.push(placement.note);
  const output = counts.output === undefined ? undefined : counts.output + (placement.outside ? (counts.reasoning ?? 0) : 0);
  const written1h = written === undefined ? undefined : Math.min(counts.written1h ?? 0, written);
  const usage: Usage = {
    input,
    cacheRead: cached ?? (prompt === undefined ? undefined : 0),
    cacheWrite5m: written === undefined ? (prompt === undefined ? undefined : 0) : written - (written1h ?? 0),
    cacheWrite1h: written1h ?? (prompt === undefined ? undefined : 0),
    output,
    reasoning: counts.reasoning,
  };
  const report: UsageReport = { ...extra, usage, raw };
  const modalities = clampModalities(counts.modalities, usage);
  if (modalities) report.modalities = modalities;
  if (estimates.length > 0) report.estimates = estimates;
  else delete report.estimates;
  return report;
}

/** Modality parts no larger than the counts they are part of; undefined when none is positive. */
export function clampModalities(m: ModalityTokens | undefined, usage: Usage): ModalityTokens | undefined {
  if (!m) return undefined;
  const part = (value: number | undefined, of: number | undefined): number | undefined => (value && of !== undefined ? Math.min(value, of) : undefined);
  const out: ModalityTokens = {};
  const input = { image: part(m.input?.image, usage.input), audio: part(m.input?.audio, usage.input) };
  const output = { image: part(m.output?.image, usage.output), audio: part(m.output?.audio, usage.output) };
  const pick = (o: { image?: number | undefined; audio?: number | undefined }): { image?: number; audio?: number } | undefined => {
    const r: { image?: number; audio?: number } = {};
    if (o.image) r.image = o.image;
    if (o.audio) r.audio = o.audio;
    return r.image || r.audio ? r : undefined;
  };
  const i = pick(input);
  const o = pick(output);
  if (i) out.input = i;
  if (o) out.output = o;
  return i || o ? out : undefined;
}

/** A token count: a finite, non-negative integer, else undefined (never NaN). */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** The value as a plain object, else undefined. */
export function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * Chat Completions usage objects in the documented shape (providers.md §3c)
 * and what they map to; the contract kit checks `chatUsage` against them.
 */
export const chatUsageExamples: UsageExample[] = [
  {
    source: "https://github.com/openai/openai-node/blob/master/src/resources/completions.ts (CompletionUsage)",
    raw: { prompt_tokens: 5000, completion_tokens: 700, prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 1200 }, completion_tokens_details: { reasoning_tokens: 500 } },
    usage: { input: 800, cacheRead: 3000, cacheWrite5m: 1200, cacheWrite1h: 0, output: 700, reasoning: 500 },
  },
];

/** Responses API usage objects (providers.md §3c) and what they map to. */
export const responsesUsageExamples: UsageExample[] = [
  {
    source: "https://github.com/openai/openai-node/blob/master/src/resources/responses/responses.ts (ResponseUsage)",
    raw: { input_tokens: 2000, input_tokens_details: { cached_tokens: 1536 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 128 }, total_tokens: 2300 },
    usage: { input: 464, cacheRead: 1536, cacheWrite5m: 0, cacheWrite1h: 0, output: 300, reasoning: 128 },
  },
];
