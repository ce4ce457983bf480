/**
 * Stage "budget": before a call is sent — every attempt, main and auxiliary
 * (a compaction's summary call) — its worst-case forecast is reserved under
 * the run's spending limits (src/budget/budget.ts); a call that could cross
 * one is refused and nothing is sent. Stage "record" settles the reservation
 * to the call's actual cost once it is priced.
 */
import type { Reservation } from "../../budget/budget.ts";
import type { CacheSettings } from "../../context/types.ts";
import type { ChainLink } from "../../session/types.ts";
import type { Runtime } from "../runtime.ts";

/** A call about to be sent. */
export interface BudgetedCall {
  /** `provider/model` as the price catalog names it. */
  catalogRef: string;
  /** Starts (or joins) counting the wire request's hash chain with token estimates (runtime.chainOf); called only under a limit. */
  chain: () => Promise<ChainLink[]>;
  /** The call's max_tokens, when set. */
  maxTokens: number | undefined;
  cache: Pick<CacheSettings, "mode" | "ttl">;
}

/** The budget's hold on one call across its attempts. */
export interface BudgetGate {
  /** The current attempt's reservation; undefined when the run has no limit. */
  readonly reservation: Reservation | undefined;
  /**
   * Settles the failed attempt before a retry — at $0 when it was provably
   * not billed (src/run/attempt-billing.ts), at its forecast otherwise (an
   * answered stream cut before content may be billed) — and reserves the next attempt.
   * @throws CachetError BUDGET_EXCEEDED when the next attempt could cross a limit (nothing more is sent)
   */
  retry(unbilled: boolean): Promise<void>;
}

/**
 * Reserves the call's forecast. Without limits it costs nothing (no prompt
 * estimate is awaited).
 * @throws CachetError BUDGET_EXCEEDED or BUDGET_UNPRICED; nothing is sent then
 */
export async function reserveCall(runtime: Runtime, sessionId: string, call: BudgetedCall): Promise<BudgetGate> {
  const budget = runtime.budget;
  const admit = async () => budget?.admit(sessionId, { catalogRef: call.catalogRef, chain: await call.chain(), maxTokens: call.maxTokens, cache: call.cache });
  let reservation = await admit();
  return {
    get reservation() {
      return reservation;
    },
    async retry(unbilled) {
      reservation?.settle(unbilled ? 0 : null);
      reservation = undefined;
      reservation = await admit();
    },
  };
}
