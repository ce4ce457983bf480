/**
 * Usage objects of the OpenAI Chat Completions protocol, as each provider
 * reports them (inclusive or exclusive of cached tokens). Counts come from a
 * cache outcome (mutually exclusive counts) and the answer.
 * Sources per provider below (providers.md §1 collects them).
 */
import { openrouterPrices } from "./facts/model-facts.ts";
import { BYOK_FEE_FRACTION, type OpenRouterBilling } from "./facts/openrouter-byok.ts";
import type { Answer, CacheOutcome, EmulatedProvider } from "./types.ts";

/**
 * Emulated OpenRouter `cost`, in credits (USD): the model's published
 * per-million prices (OpenRouter's /models data as models.dev publishes it:
 * prompt, completion, cache read, cache write; a 1-hour write at 2x the
 * prompt price, Anthropic's rule), so the emulated bill agrees with the
 * provider's price list. A model the data does not list is billed at fixed
 * emulator rates: input 1.00, cache read 0.10, 5m write 1.25, 1h write 2.00, output 4.00.
 * @see https://openrouter.ai/docs/use-cases/usage-accounting
 * @see https://openrouter.ai/docs/api-reference/list-available-models (pricing.prompt, completion, input_cache_read, input_cache_write)
 */
export function emulatedCost(outcome: CacheOutcome, output: number, model: string): { total: number; prompt: number; completion: number } {
  const r = openrouterPrices(model) ?? { input: 1, output: 4, cache_read: 0.1, cache_write: 1.25 };
  const read = r.cache_read ?? r.input;
  const write = r.cache_write ?? r.input;
  const prompt = (outcome.input * r.input + outcome.read * read + outcome.write5m * write + outcome.write1h * r.input * 2) / 1e6;
  const completion = (output * r.output) / 1e6;
  return { total: prompt + completion, prompt, completion };
}

/**
 * The Chat Completions `usage` object in `provider`'s shape.
 * - openai (and unknown providers): `prompt_tokens` includes cached;
 *   `prompt_tokens_details.cached_tokens`; `cache_write_tokens` only for
 *   GPT-5.6+ (explicit regime); `completion_tokens` includes reasoning.
 *   @see https://developers.openai.com/api/docs/guides/prompt-caching
 * - deepseek: `prompt_cache_hit_tokens` + `prompt_cache_miss_tokens` = `prompt_tokens`.
 *   @see https://api-docs.deepseek.com/guides/kv_cache
 * - moonshotai: `cached_tokens` top level and in `prompt_tokens_details`.
 * - alibaba: `prompt_tokens` includes reads and writes; explicit mode adds
 *   `cache_creation_input_tokens` and `cache_type: "ephemeral"`.
 *   @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 * - openrouter: `cost`, `is_byok`, `cost_details`, `cache_write_tokens`; with
 *   bring-your-own-key (`billing`) the upstream price is
 *   `cost_details.upstream_inference_cost` and `cost` is OpenRouter's fee
 *   only (facts/openrouter-byok.ts).
 *   @see https://openrouter.ai/docs/use-cases/usage-accounting
 * - xai: reasoning OUTSIDE `completion_tokens`; `total_tokens` = prompt + completion + reasoning.
 *   @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/usage-and-pricing
 */
export function chatUsage(provider: EmulatedProvider | "unknown", outcome: CacheOutcome, answer: Answer, model = "", billing: OpenRouterBilling = "credits"): Record<string, unknown> {
  const prompt = outcome.input + outcome.read + outcome.write5m + outcome.write1h;
  const writes = outcome.write5m + outcome.write1h;
  const reasoning = answer.reasoningTokens;
  const completion = answer.outputTokens + reasoning;
  const base = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  switch (provider) {
    case "deepseek":
      return {
        ...base,
        prompt_tokens_details: { cached_tokens: outcome.read },
        prompt_cache_hit_tokens: outcome.read,
        prompt_cache_miss_tokens: prompt - outcome.read,
        ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
      };
    case "moonshotai":
      return { ...base, cached_tokens: outcome.read, prompt_tokens_details: { cached_tokens: outcome.read }, ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}) };
    case "alibaba":
      return {
        ...base,
        prompt_tokens_details: outcome.explicit ? { cached_tokens: outcome.read, cache_creation_input_tokens: writes, cache_type: "ephemeral" } : { cached_tokens: outcome.read },
        ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
      };
    case "openrouter": {
      const cost = emulatedCost(outcome, completion, model);
      const byok = billing !== "credits";
      return {
        ...base,
        cost: !byok ? cost.total : billing === "byok-fee" ? cost.total * BYOK_FEE_FRACTION : 0,
        is_byok: byok,
        prompt_tokens_details: { cached_tokens: outcome.read, cache_write_tokens: writes, audio_tokens: 0 },
        cost_details: { upstream_inference_cost: byok ? cost.total : null, upstream_inference_prompt_cost: cost.prompt, upstream_inference_completions_cost: cost.completion },
        completion_tokens_details: { reasoning_tokens: reasoning },
      };
    }
    case "xai":
      return {
        prompt_tokens: prompt,
        completion_tokens: answer.outputTokens,
        total_tokens: prompt + answer.outputTokens + reasoning,
        prompt_tokens_details: { text_tokens: prompt, audio_tokens: 0, image_tokens: 0, cached_tokens: outcome.read },
        completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
        num_sources_used: 0,
      };
    default:
      return {
        ...base,
        prompt_tokens_details: outcome.explicit ? { cached_tokens: outcome.read, cache_write_tokens: writes, audio_tokens: 0 } : { cached_tokens: outcome.read, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      };
  }
}
