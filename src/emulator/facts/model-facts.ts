/**
 * Per-model request limits and parameter rules the emulator enforces, read
 * from the models.dev catalog embedded in cachet (data published by
 * models.dev, not cachet's plugin code): context window, output limit,
 * whether `temperature` may be set, and whether the model's reasoning must
 * be sent back. Models the catalog does not list get no limits.
 * @see https://models.dev (schema: limit.context, limit.output, temperature, interleaved, modalities.output)
 */
import { embeddedCatalog } from "../../meter/catalog.ts";
import type { EmulatedProvider } from "../types.ts";
import { upstreamOf } from "./cache-facts.ts";

/** What the emulator knows about one model. */
export interface ModelFacts {
  /** Context window, tokens (prompt + requested output must fit). */
  context: number | undefined;
  /** Largest prompt, tokens, where the catalog gives one below the window (OpenAI: gpt-5 272,000 of 400,000). */
  input: number | undefined;
  /** Largest output the model accepts as `max_tokens`, tokens. */
  output: number | undefined;
  /** False when the model accepts only the default temperature (OpenAI reasoning models). */
  temperature: boolean;
  /** True for reasoning models. */
  reasoning: boolean;
  /**
   * The message field carrying reasoning that must be sent back on
   * tool-calling turns in thinking mode (DeepSeek V4, deepseek-reasoner:
   * `reasoning_content`).
   * @see https://api-docs.deepseek.com/guides/thinking_mode
   */
  replayField: string | undefined;
  /** True when the model outputs images (models.dev `modalities.output` lists `image`). */
  outputImage: boolean;
}

const UNKNOWN: ModelFacts = { context: undefined, input: undefined, output: undefined, temperature: true, reasoning: false, replayField: undefined, outputImage: false };

interface RawModel {
  limit?: { context?: number; input?: number; output?: number };
  temperature?: boolean;
  reasoning?: boolean;
  interleaved?: boolean | { field?: string };
  modalities?: { output?: string[] };
}

const memo = new Map<string, ModelFacts>();

/**
 * The facts of `model` on `provider` (OpenRouter ids resolve to the upstream
 * provider's catalog entry). Unlisted models: no limits, every parameter allowed.
 */
export function modelFacts(provider: EmulatedProvider | "unknown", model: string): ModelFacts {
  const key = `${provider}|${model}`;
  const known = memo.get(key);
  if (known) return known;
  const upstream = upstreamOf(provider, model);
  const entry = (embeddedCatalog()[upstream.provider]?.models as Record<string, RawModel> | undefined)?.[upstream.model.replace(/^models\//, "")];
  const facts: ModelFacts = entry
    ? {
        context: entry.limit?.context,
        input: entry.limit?.input,
        output: entry.limit?.output,
        temperature: entry.temperature !== false,
        reasoning: entry.reasoning === true,
        replayField: typeof entry.interleaved === "object" ? entry.interleaved.field : undefined,
        outputImage: entry.modalities?.output?.includes("image") === true,
      }
    : UNKNOWN;
  memo.set(key, facts);
  return facts;
}

/** Published per-million prices of an OpenRouter model (USD). */
export interface PublishedPrices {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
}

/**
 * The published prices of `model` on OpenRouter, from the embedded models.dev
 * data (OpenRouter's own price list as models.dev publishes it); undefined
 * when it does not list the model or its prompt and completion prices.
 */
export function openrouterPrices(model: string): PublishedPrices | undefined {
  const cost = (embeddedCatalog().openrouter?.models as Record<string, { cost?: Partial<PublishedPrices> }> | undefined)?.[model]?.cost;
  if (cost?.input === undefined || cost.output === undefined) return undefined;
  return { input: cost.input, output: cost.output, ...(cost.cache_read !== undefined ? { cache_read: cost.cache_read } : {}), ...(cost.cache_write !== undefined ? { cache_write: cost.cache_write } : {}) };
}
