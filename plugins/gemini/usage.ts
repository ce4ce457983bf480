/**
 * Gemini `usageMetadata` mapping. `promptTokenCount` includes
 * `cachedContentTokenCount`; thinking (`thoughtsTokenCount`) is reported
 * beside `candidatesTokenCount`, not inside it, and is billed as output.
 * Gemini omits zero-valued counts, so once the prompt count is present an
 * absent count means 0.
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerateContentResponseUsageMetadata)
 * @see https://ai.google.dev/gemini-api/docs/caching
 */
import type { ModalityTokens, Usage, UsageExample, UsageReport } from "../../src/plugin/index.ts";

/**
 * Maps a Gemini `usageMetadata` object (or a response carrying one):
 * input = promptTokenCount − cachedContentTokenCount + toolUsePromptTokenCount,
 * cacheRead = cachedContentTokenCount, output = candidatesTokenCount +
 * thoughtsTokenCount, reasoning = thoughtsTokenCount; no per-request cache
 * writes (0). `toolUsePromptTokenCount` is outside `promptTokenCount`; it is
 * counted as input and flagged in `estimates` because its billing is not
 * documented. Thoughts are reported beside the candidates, not inside them,
 * and `totalTokenCount` is their sum with the prompt and tool-use counts: a
 * total that is not that sum while thoughts were reported is flagged in
 * `estimates` with the figures (thoughts still counted as output beside the
 * candidates, as documented). Pure.
 * @see https://ai.google.dev/api/generate-content#UsageMetadata (candidatesTokenCount: tokens across the response candidates; thoughtsTokenCount: tokens of thoughts, a count of its own)
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (totalTokenCount: the sum of prompt, candidates, tool-use prompt and thoughts token counts)
 */
export function geminiUsage(raw: unknown): UsageReport {
  const outer = objectOf(raw);
  const u = objectOf(outer?.usageMetadata) ?? outer;
  const prompt = tokenCount(u?.promptTokenCount);
  const known = prompt !== undefined;
  const orZero = (value: unknown): number | undefined => tokenCount(value) ?? (known ? 0 : undefined);
  const cached = orZero(u?.cachedContentTokenCount);
  const toolUse = orZero(u?.toolUsePromptTokenCount);
  const candidates = orZero(u?.candidatesTokenCount);
  const thoughts = orZero(u?.thoughtsTokenCount);
  const estimates: string[] = [];
  let input = prompt === undefined ? undefined : prompt - (cached ?? 0) + (toolUse ?? 0);
  if (input !== undefined && prompt !== undefined && (cached ?? 0) > prompt) {
    estimates.push(`promptTokenCount ${prompt} is smaller than cachedContentTokenCount ${cached}: uncached input unknown`);
    input = undefined;
  }
  if ((toolUse ?? 0) > 0) estimates.push(`toolUsePromptTokenCount ${toolUse} counted as input (billing not documented)`);
  const total = tokenCount(u?.totalTokenCount);
  if (total !== undefined && prompt !== undefined && (thoughts ?? 0) > 0) {
    const sum = prompt + (candidates ?? 0) + (toolUse ?? 0) + thoughts!;
    if (total !== sum) {
      estimates.push(`totalTokenCount ${total} is not promptTokenCount + candidatesTokenCount + toolUsePromptTokenCount + thoughtsTokenCount (${sum}): thoughtsTokenCount ${thoughts} counted as output beside candidatesTokenCount ${candidates ?? 0}, as documented`);
    }
  }
  const usage: Usage = {
    input,
    cacheRead: cached,
    cacheWrite5m: known ? 0 : undefined,
    cacheWrite1h: known ? 0 : undefined,
    output: candidates === undefined ? undefined : candidates + (thoughts ?? 0),
    reasoning: thoughts,
  };
  const report: UsageReport = { usage, raw };
  if (estimates.length > 0) report.estimates = estimates;
  const modalities = geminiModalities(u, usage);
  if (modalities) report.modalities = modalities;
  if (typeof u?.serviceTier === "string") report.serviceTier = u.serviceTier;
  return report;
}

/**
 * Image and audio parts from the per-modality lists (`[{modality, tokenCount}]`):
 * uncached input = `promptTokensDetails` − `cacheTokensDetails`, output =
 * `candidatesTokensDetails` (thinking is text). Undefined when none is positive.
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (ModalityTokenCount)
 */
function geminiModalities(u: Record<string, unknown> | undefined, usage: Usage): ModalityTokens | undefined {
  const count = (list: unknown, modality: string): number => {
    if (!Array.isArray(list)) return 0;
    return list.reduce((sum: number, item) => sum + (objectOf(item)?.modality === modality ? (tokenCount(objectOf(item)?.tokenCount) ?? 0) : 0), 0);
  };
  const uncached = (modality: string): number => Math.max(0, count(u?.promptTokensDetails, modality) - count(u?.cacheTokensDetails, modality));
  const out: ModalityTokens = {};
  const inImage = Math.min(uncached("IMAGE"), usage.input ?? 0);
  const inAudio = Math.min(uncached("AUDIO"), usage.input ?? 0);
  const outImage = Math.min(count(u?.candidatesTokensDetails, "IMAGE"), usage.output ?? 0);
  const outAudio = Math.min(count(u?.candidatesTokensDetails, "AUDIO"), usage.output ?? 0);
  if (inImage || inAudio) out.input = { ...(inImage ? { image: inImage } : {}), ...(inAudio ? { audio: inAudio } : {}) };
  if (outImage || outAudio) out.output = { ...(outImage ? { image: outImage } : {}), ...(outAudio ? { audio: outAudio } : {}) };
  return out.input || out.output ? out : undefined;
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * `usageMetadata` objects in the documented shape (providers.md §4b) and what
 * they map to; the contract kit checks `geminiUsage` against them.
 */
export const geminiUsageExamples: UsageExample[] = [
  {
    source: "https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerateContentResponseUsageMetadata)",
    raw: { promptTokenCount: 10000, cachedContentTokenCount: 8192, candidatesTokenCount: 50, totalTokenCount: 10050 },
    usage: { input: 1808, cacheRead: 8192, cacheWrite5m: 0, cacheWrite1h: 0, output: 50, reasoning: 0 },
  },
];
