/**
 * OpenRouter bring-your-own-key accounting, as the emulator reproduces it.
 * With BYOK the upstream provider bills the user's own key for the tokens
 * (`cost_details.upstream_inference_cost`, `is_byok: true`) and OpenRouter's
 * `cost` is only its BYOK fee: 5% of what the same request would cost on
 * OpenRouter, waived for the first 1M BYOK requests of a month.
 *
 * Whether a request is BYOK is the account's setting (a provider key stored
 * on OpenRouter), not part of the request, so a test chooses it with
 * `x-emulator-byok` / `CACHET_EMULATOR_BYOK`: `free` (within the monthly
 * waiver: `cost` 0, as in CASES.md case 35) or `fee` (5% fee); unset (or
 * blank): the request is paid with OpenRouter credits (surrounding blanks are
 * ignored, src/emulator/control-value.ts). Another value of the
 * variable is refused when the emulator starts ({@link checkByokEnv}).
 * @see https://openrouter.ai/docs/use-cases/usage-accounting (is_byok, cost_details.upstream_inference_cost)
 * @see https://openrouter.ai/docs/use-cases/byok
 * @see https://openrouter.ai/docs/faq (BYOK fee 5%, first 1M BYOK requests a month free)
 */
import { CachetError } from "../../errors.ts";
import { envControl, requestControl } from "../control-value.ts";

/** Request header choosing the BYOK mode of an OpenRouter request. */
export const BYOK_HEADER = "x-emulator-byok";
/** Environment variable choosing the BYOK mode of every OpenRouter request. */
export const BYOK_ENV = "CACHET_EMULATOR_BYOK";

/**
 * Refuses a `CACHET_EMULATOR_BYOK` other than `free` or `fee`: a typo would bill credits without a word.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the words it takes
 */
export function checkByokEnv(env: Record<string, string | undefined>): void {
  const value = envControl(env, BYOK_ENV);
  if (value === undefined || value === "free" || value === "fee") return;
  throw new CachetError("BAD_FLAG", `${BYOK_ENV}=${JSON.stringify(env[BYOK_ENV])}: expected free or fee`, { hint: `unset ${BYOK_ENV} for requests paid with OpenRouter credits` });
}

/** How an OpenRouter request is paid. */
export type OpenRouterBilling = "credits" | "byok-free" | "byok-fee";

/** OpenRouter's BYOK fee, a fraction of the request's OpenRouter price. */
export const BYOK_FEE_FRACTION = 0.05;

/** The billing mode a request asks for, header first. */
export function openrouterBilling(headers: Headers, env: Record<string, string | undefined>): OpenRouterBilling {
  const mode = requestControl(headers, BYOK_HEADER, env, BYOK_ENV);
  return mode === "free" ? "byok-free" : mode === "fee" ? "byok-fee" : "credits";
}
