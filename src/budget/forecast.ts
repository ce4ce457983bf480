/**
 * The worst-case cost of one call before it is sent: the prompt estimate at
 * the dearest prompt price that can apply to it (uncached input, or a cache
 * write at the TTL in force when caching is on), plus `max_tokens` of output,
 * priced by the meter with the catalog and config overrides (tiers included).
 */
import type { CacheSettings } from "../context/types.ts";
import type { Usage } from "../plugin/usage.ts";
import type { Priced } from "../run/runtime.ts";

/** One call to forecast. */
export interface CallEstimate {
  /** `provider/model` as the catalog names it. */
  catalogRef: string;
  /** Token estimate of the whole wire request (o200k_base; an approximation for non-OpenAI models). */
  promptTokens: number;
  /** The call's output ceiling (`--max-tokens`, else the model's output limit from the catalog); undefined when neither is known. */
  maxOutputTokens: number | undefined;
  cache: Pick<CacheSettings, "mode" | "ttl">;
}

/** A forecast: USD, or null with the reason it cannot be made. */
export interface Forecast {
  usd: number | null;
  reason?: string;
  /** With no forecast for a model the catalog does not list: its `provider/model` id a typo away (Priced.nearModel). */
  nearModel?: string;
}

/**
 * Forecasts the worst-case cost of a call.
 * @param price the meter (runtime.price): prices a usage for a catalog ref
 */
export async function forecastCall(call: CallEstimate, price: (catalogRef: string, usage: Usage) => Promise<Priced>): Promise<Forecast> {
  const none = { input: 0, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: call.maxOutputTokens ?? 0, reasoning: undefined };
  if (call.maxOutputTokens === undefined) {
    // Asked of the meter all the same: a model it does not list may be a typo of one it does.
    const { nearModel } = await price(call.catalogRef, none);
    return { usd: null, reason: `the output limit of ${call.catalogRef} is unknown (pass --max-tokens N)`, ...(nearModel ? { nearModel } : {}) };
  }
  const shapes: Usage[] = [{ ...none, input: call.promptTokens }];
  if (call.cache.mode !== "off") shapes.push(call.cache.ttl === "1h" ? { ...none, cacheWrite1h: call.promptTokens } : { ...none, cacheWrite5m: call.promptTokens });
  let worst = 0;
  for (const [i, usage] of shapes.entries()) {
    const priced = await price(call.catalogRef, usage);
    if (priced.costUsd !== null) worst = Math.max(worst, priced.costUsd);
    // No cache-write price means the provider bills no separate write (OpenAI, Gemini): the input shape stands.
    else if (i === 0) return { usd: null, reason: priced.reason ?? `no price for ${call.catalogRef}`, ...(priced.nearModel ? { nearModel: priced.nearModel } : {}) };
  }
  return { usd: worst };
}
