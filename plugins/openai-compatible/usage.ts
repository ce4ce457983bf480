/**
 * Usage mappings for OpenAI-compatible providers. They share the Chat
 * Completions shape but differ in where cached tokens are reported and
 * whether reasoning is inside `completion_tokens` (providers.md §1).
 */
import type { UsageReport } from "../../src/plugin/index.ts";
import { chatModalities, chatUsage, inclusiveUsage, objectOf, tokenCount } from "../openai/usage.ts";

/**
 * DeepSeek: `prompt_tokens = prompt_cache_hit_tokens + prompt_cache_miss_tokens`;
 * the miss is billed at the input price (it is also the write, with no write fee).
 * @see https://api-docs.deepseek.com/guides/kv_cache
 */
export function deepseekUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const prompt = tokenCount(u?.prompt_tokens);
  const hit = tokenCount(u?.prompt_cache_hit_tokens) ?? tokenCount(objectOf(u?.prompt_tokens_details)?.cached_tokens);
  const miss = tokenCount(u?.prompt_cache_miss_tokens);
  return inclusiveUsage(raw, {
    prompt: prompt ?? (hit !== undefined && miss !== undefined ? hit + miss : undefined),
    cached: hit ?? (prompt !== undefined && miss !== undefined ? prompt - miss : undefined),
    written: undefined,
    output: tokenCount(u?.completion_tokens),
    reasoning: tokenCount(objectOf(u?.completion_tokens_details)?.reasoning_tokens),
    total: tokenCount(u?.total_tokens),
  });
}

/**
 * Moonshot / Kimi: cached tokens at top level (`usage.cached_tokens`) or in
 * `prompt_tokens_details.cached_tokens`, both inside `prompt_tokens`. Accepts
 * the usage object itself, or the final stream chunk that carries it as
 * `usage` or inside `choices[0].usage` (seen live from kimi-k2.5).
 * @see https://github.com/vercel/ai/blob/main/packages/moonshotai/src/convert-moonshotai-chat-usage.ts (corroboration; no official doc found)
 */
export function moonshotUsage(raw: unknown): UsageReport {
  const outer = objectOf(raw);
  const firstChoice = Array.isArray(outer?.choices) ? objectOf(objectOf(outer.choices[0])?.usage) : undefined;
  const u = outer !== undefined && "prompt_tokens" in outer ? outer : (objectOf(outer?.usage) ?? firstChoice ?? outer);
  return inclusiveUsage(u ?? raw, {
    prompt: tokenCount(u?.prompt_tokens),
    cached: tokenCount(u?.cached_tokens) ?? tokenCount(objectOf(u?.prompt_tokens_details)?.cached_tokens),
    written: undefined,
    output: tokenCount(u?.completion_tokens),
    reasoning: tokenCount(objectOf(u?.completion_tokens_details)?.reasoning_tokens),
    total: tokenCount(u?.total_tokens),
  });
}

/**
 * Alibaba Qwen (DashScope, OpenAI-compatible mode): both cache reads
 * (`prompt_tokens_details.cached_tokens`) and explicit-mode writes
 * (`prompt_tokens_details.cache_creation_input_tokens`, 5-minute TTL) are inside `prompt_tokens`.
 * The cache mode decides the read price (explicit 10% of input, implicit
 * 20%): `cache_type` or a write count says explicit, a read without them implicit.
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 */
export function qwenUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const details = objectOf(u?.prompt_tokens_details);
  const cached = tokenCount(details?.cached_tokens);
  const explicit = details?.cache_type !== undefined || details?.cache_creation_input_tokens !== undefined;
  return inclusiveUsage(
    raw,
    {
      prompt: tokenCount(u?.prompt_tokens),
      cached,
      written: tokenCount(details?.cache_creation_input_tokens),
      output: tokenCount(u?.completion_tokens),
      reasoning: tokenCount(objectOf(u?.completion_tokens_details)?.reasoning_tokens),
      total: tokenCount(u?.total_tokens),
    },
    explicit || cached ? { cacheMode: explicit ? "explicit" : "implicit" } : {},
  );
}

/**
 * OpenRouter: the OpenAI shape with `prompt_tokens_details.cache_write_tokens`,
 * an optional Anthropic-style `cache_creation.ephemeral_1h_input_tokens` split,
 * and its own `cost` (credits, 1 credit = 1 USD). With bring-your-own-key
 * (`is_byok: true`) `cost` is only OpenRouter's fee and the upstream bills
 * `cost_details.upstream_inference_cost` to the user's key, so the spend is
 * their sum (CASES.md case 35); it is kept as `providerCostUsd`, and the fee
 * as `routerFeeUsd` (priced on top of the tokens).
 * @see https://openrouter.ai/docs/use-cases/usage-accounting
 */
export function openrouterUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const details = objectOf(u?.prompt_tokens_details);
  const completionDetails = objectOf(u?.completion_tokens_details);
  const providerCostUsd = openrouterSpend(u);
  const fee = u?.is_byok === true && typeof u.cost === "number" && Number.isFinite(u.cost) && u.cost > 0 ? u.cost : undefined;
  return inclusiveUsage(
    raw,
    {
      prompt: tokenCount(u?.prompt_tokens),
      cached: tokenCount(details?.cached_tokens),
      written: tokenCount(details?.cache_write_tokens),
      written1h: tokenCount(objectOf(u?.cache_creation)?.ephemeral_1h_input_tokens),
      output: tokenCount(u?.completion_tokens),
      reasoning: tokenCount(completionDetails?.reasoning_tokens),
      total: tokenCount(u?.total_tokens),
      modalities: chatModalities(details, completionDetails),
    },
    { ...(providerCostUsd === undefined ? {} : { providerCostUsd }), ...(fee === undefined ? {} : { routerFeeUsd: fee }) },
  );
}

/** OpenRouter's `cost`, plus `cost_details.upstream_inference_cost` when the key is the user's own (BYOK). */
function openrouterSpend(u: Record<string, unknown> | undefined): number | undefined {
  const amount = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined);
  const cost = amount(u?.cost);
  if (cost === undefined || u?.is_byok !== true) return cost;
  const upstream = amount(objectOf(u?.cost_details)?.upstream_inference_cost);
  // Summed in pico-USD: 0.1 + 0.2 must not print 0.30000000000000004.
  return upstream === undefined ? cost : (Math.round(cost * 1e12) + Math.round(upstream * 1e12)) / 1e12;
}

/**
 * xAI Grok: reasoning is documented OUTSIDE `completion_tokens`
 * (`total = prompt + completion + reasoning`), so billed output = completion +
 * reasoning; when `total_tokens` says otherwise the numbers win (CASES.md
 * case 37). Some responses report `cached_tokens > prompt_tokens`; then the
 * prompt is taken as excluding the cached part. Accepts Chat
 * (`prompt_tokens_details`) and Responses (`input_tokens_details`, reasoning
 * inside `output_tokens`) shapes.
 * @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/usage-and-pricing
 */
export function xaiUsage(raw: unknown): UsageReport {
  const u = objectOf(raw);
  const responses = u !== undefined && "input_tokens" in u;
  const prompt = tokenCount(responses ? u?.input_tokens : u?.prompt_tokens);
  const promptDetails = objectOf(responses ? u?.input_tokens_details : u?.prompt_tokens_details);
  const completionDetails = objectOf(responses ? u?.output_tokens_details : u?.completion_tokens_details);
  const cached = tokenCount(promptDetails?.cached_tokens);
  const exclusive = prompt !== undefined && cached !== undefined && cached > prompt;
  return inclusiveUsage(
    raw,
    {
      prompt: exclusive ? prompt + cached : prompt,
      cached,
      written: undefined,
      output: tokenCount(responses ? u?.output_tokens : u?.completion_tokens),
      reasoning: tokenCount(completionDetails?.reasoning_tokens),
      total: exclusive ? undefined : tokenCount(u?.total_tokens),
      reasoningOutsideByDefault: !responses,
      modalities: chatModalities(promptDetails, completionDetails),
    },
    exclusive ? { estimates: [`cached_tokens ${cached} exceeds prompt_tokens ${prompt}: prompt taken as excluding cached tokens`] } : {},
  );
}

/** Any other OpenAI-compatible server: the Chat Completions mapping (which reads a Responses usage as one). */
export const openaiCompatibleUsage = chatUsage;
