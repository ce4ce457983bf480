/**
 * Gemini `usageMetadata` mapping. `promptTokenCount` includes
 * `cachedContentTokenCount`; thinking (`thoughtsTokenCount`) is reported
 * beside `candidatesTokenCount`, not inside it, and is billed as output.
 * Gemini omits zero-valued counts, so once the prompt count is present an
 * absent count means 0.
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerateContentResponseUsageMetadata)
 * @see https://ai.google.dev/gemini-api/docs/caching
 */
import type { Usage, UsageReport } from "../../src/plugin/index.ts";

/**
 * Maps a Gemini `usageMetadata` object (or a response carrying one):
 * input = promptTokenCount − cachedContentTokenCount + toolUsePromptTokenCount,
 * cacheRead = cachedContentTokenCount, output = candidatesTokenCount +
 * thoughtsTokenCount, reasoning = thoughtsTokenCount; no per-request cache
 * writes (0). `toolUsePromptTokenCount` is outside `promptTokenCount`; it is
 * counted as input and flagged in `estimates` because its billing is not
 * documented. Pure.
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
  const usage: Usage = {
    input,
    cacheRead: cached,
    cacheWrite5m: known ? 0 : undefined,
    cacheWrite1h: known ? 0 : undefined,
    output: candidates === undefined ? undefined : candidates + (thoughts ?? 0),
    reasoning: thoughts,
  };
  return estimates.length > 0 ? { usage, raw, estimates } : { usage, raw };
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
