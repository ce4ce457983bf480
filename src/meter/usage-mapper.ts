/**
 * Picks the usage mapping for a provider id, for `cachet price` and for
 * anything that holds a raw usage object without a loaded adapter. Imports
 * the built-in plugins' pure usage files directly, not the plugins: no SDK
 * is loaded.
 */
import { anthropicUsage } from "../../plugins/anthropic/usage.ts";
import { geminiUsage } from "../../plugins/gemini/usage.ts";
import { deepseekUsage, moonshotUsage, openaiCompatibleUsage, openrouterUsage, qwenUsage, xaiUsage } from "../../plugins/openai-compatible/usage.ts";
import { chatUsage, responsesUsage } from "../../plugins/openai/usage.ts";
import type { UsageReport } from "../plugin/usage.ts";

/** A chosen mapping: its name, the function, and a note when the choice is a guess. */
export interface UsageMapperChoice {
  /** Export name of the mapping, e.g. "anthropicUsage". */
  name: string;
  map: (raw: unknown) => UsageReport;
  /** Set when the provider is not one cachet knows (the generic OpenAI-compatible mapping is used). */
  note?: string;
}

const PRESETS: Record<string, Omit<UsageMapperChoice, "note">> = {
  anthropic: { name: "anthropicUsage", map: anthropicUsage },
  google: { name: "geminiUsage", map: geminiUsage },
  deepseek: { name: "deepseekUsage", map: deepseekUsage },
  moonshotai: { name: "moonshotUsage", map: moonshotUsage },
  alibaba: { name: "qwenUsage", map: qwenUsage },
  openrouter: { name: "openrouterUsage", map: openrouterUsage },
  xai: { name: "xaiUsage", map: xaiUsage },
};

/**
 * The mapping for `provider`. For openai, a raw object with `input_tokens`
 * (and no `prompt_tokens`) is a Responses usage, else a Chat Completions one.
 * An unknown provider gets the generic OpenAI-compatible mapping with a note.
 */
export function usageMapperFor(provider: string, raw: unknown): UsageMapperChoice {
  if (provider === "openai") {
    const responses = typeof raw === "object" && raw !== null && "input_tokens" in raw && !("prompt_tokens" in raw);
    return responses ? { name: "responsesUsage", map: responsesUsage } : { name: "chatUsage", map: chatUsage };
  }
  const preset = PRESETS[provider];
  if (preset) return preset;
  return {
    name: "openaiCompatibleUsage",
    map: openaiCompatibleUsage,
    note: `provider "${provider}" has no usage preset: read as OpenAI-compatible usage`,
  };
}
