/**
 * Spending limits (`--max-cost`, `budget.session_usd`, `budget.daily_usd`,
 * `budget.monthly_usd`) applied to every provider call of a run, main and
 * auxiliary, every attempt included.
 *
 * Before a call: its worst-case forecast (forecast.ts) is reserved against
 * every limit, and a call that could cross one is refused with nothing sent.
 * After it: the reservation is settled to the actual cost, and a limit crossed
 * because the forecast was low (a prompt estimate error) is reported.
 */
import type { Config } from "../config.ts";
import { CachetError } from "../errors.ts";
import type { Store } from "../session/store.ts";
import type { ChainLink } from "../session/types.ts";
import { type CallEstimate, forecastCall } from "./forecast.ts";
import type { Usage } from "../plugin/usage.ts";
import type { Priced } from "../run/runtime.ts";
import { calendarPeriods, effectiveTimeZone } from "./periods.ts";
import { reserveSpend, settleSpend, spendTotals, type SpendScope, type SpendTotals } from "./spend-counter.ts";

/** The limits in force, USD; each optional. */
export interface BudgetLimits {
  /** `--max-cost`: all calls of this run. */
  runUsd?: number;
  sessionUsd?: number;
  dailyUsd?: number;
  monthlyUsd?: number;
  /** IANA zone of the day and month. */
  timeZone: string;
}

/** The limits from the config and `--max-cost`; undefined when none is set. */
export function budgetLimits(config: Config, maxCostUsd: number | undefined): BudgetLimits | undefined {
  const b = config.budget ?? {};
  const amounts = {
    ...(maxCostUsd !== undefined ? { runUsd: maxCostUsd } : {}),
    ...(b.session_usd !== undefined ? { sessionUsd: b.session_usd } : {}),
    ...(b.daily_usd !== undefined ? { dailyUsd: b.daily_usd } : {}),
    ...(b.monthly_usd !== undefined ? { monthlyUsd: b.monthly_usd } : {}),
  };
  // Only with a limit: the system time zone comes from Intl, whose first use costs more than the rest of a run's start-up.
  return Object.keys(amounts).length > 0 ? { ...amounts, timeZone: effectiveTimeZone(b.time_zone) } : undefined;
}

/** True when the limits need counters shared across processes (day and month). */
export function needsSharedCounters(limits: BudgetLimits): boolean {
  return limits.dailyUsd !== undefined || limits.monthlyUsd !== undefined;
}

/** A call about to be sent. */
export interface CallRequest {
  /** `provider/model` as the catalog names it. */
  catalogRef: string;
  /** The wire request's hash chain with token estimates (runtime.chainOf): their sum is the prompt estimate. */
  chain: readonly ChainLink[];
  /** The max_tokens the request sends (`--max-tokens`, the session's, or the provider's default); undefined when it sends none (the model's output limit then bounds the answer). */
  maxTokens: number | undefined;
  cache: CallEstimate["cache"];
}

/** A call admitted under the limits. */
export interface Reservation {
  /** The worst-case forecast reserved, USD (0 for an unpriced call sent with --allow-unpriced). */
  readonly forecastUsd: number;
  /**
   * Records what the call cost. `null` (unknown: no usage came back) keeps the
   * forecast as spent. Reports, through the budget's notice, any limit the
   * call crossed because it cost more than forecast.
   */
  settle(actualUsd: number | null): void;
}

/** Options of {@link Budget}. */
export interface BudgetOptions {
  limits: BudgetLimits;
  /** The store whose counters and ledger hold the spend (spend-counter.ts): the state's, or an in-memory one for a run that keeps nothing and has no day or month limit. */
  counters: Store;
  /** `--allow-unpriced`: send calls whose price is unknown, uncounted. */
  allowUnpriced: boolean;
  /** Calls go to the emulator (separate counters). */
  emulated: boolean;
  /** `--no-store`: there is no stored session; the session limit covers this run. */
  ephemeral: boolean;
  /** The model's output limit from the catalog, tokens (the forecast's output ceiling when no --max-tokens is given). */
  outputLimit: (catalogRef: string) => Promise<number | undefined>;
  /** The meter: prices a usage for a catalog ref (runtime.price). */
  price: (catalogRef: string, usage: Usage) => Promise<Priced>;
  notice: (message: string) => void;
  /** Clock, Unix epoch ms (tests). */
  now?: () => number;
}

/** The limits of one run, shared by all its calls. */
export class Budget {
  private runSpent = 0;
  private readonly now: () => number;

  constructor(private readonly options: BudgetOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Forecasts a call and reserves it against every limit.
   * @throws CachetError BUDGET_EXCEEDED naming the limit, what was spent and the forecast;
   *   BUDGET_UNPRICED when the forecast cannot be made and --allow-unpriced is not given. Nothing is sent either way.
   */
  async admit(sessionId: string, request: CallRequest): Promise<Reservation> {
    const call: CallEstimate = {
      catalogRef: request.catalogRef,
      promptTokens: request.chain.reduce((sum, link) => sum + link.tokens, 0),
      maxOutputTokens: request.maxTokens ?? (await this.options.outputLimit(request.catalogRef)),
      cache: request.cache,
    };
    const forecast = await forecastCall(call, this.options.price);
    if (forecast.usd === null) {
      if (!this.options.allowUnpriced) {
        throw new CachetError("BUDGET_UNPRICED", `budget: cannot forecast the cost of ${call.catalogRef} (${forecast.reason}); a call under a spending limit needs a price; nothing was sent`, {
          // A misspelled model is unpriced too: the id it is a typo of comes first, before pricing one that does not exist.
          hint: `${forecast.nearModel ? `did you mean -m ${forecast.nearModel}? else ` : ""}set [prices."${call.catalogRef}"] in config.toml, or pass --allow-unpriced to send it uncounted`,
        });
      }
      this.options.notice(`budget: the cost of ${call.catalogRef} cannot be forecast (${forecast.reason}); sent uncounted (--allow-unpriced)`);
    }
    const forecastUsd = forecast.usd ?? 0;
    const scope = this.scope(sessionId);
    const id = reserveSpend(this.options.counters, scope, forecastUsd, (totals) => this.check(totals, forecastUsd, call.maxOutputTokens), this.now());
    this.runSpent += forecastUsd;
    let settled = false;
    return {
      forecastUsd,
      settle: (actualUsd) => {
        if (settled) return;
        settled = true;
        const amount = actualUsd ?? forecastUsd;
        settleSpend(this.options.counters, id, amount);
        this.runSpent += amount - forecastUsd;
        if (amount > forecastUsd) this.reportCrossing(scope, amount, forecastUsd);
      },
    };
  }

  private scope(sessionId: string): SpendScope {
    return { sessionId: this.options.ephemeral ? null : sessionId, periods: calendarPeriods(this.now(), this.options.limits.timeZone), emulated: this.options.emulated };
  }

  /**
   * Throws for the first limit that `forecastUsd` more would cross.
   * @param maxOutputTokens the output tokens the forecast counts (a smaller --max-tokens is advice only above 1)
   */
  private check(totals: SpendTotals, forecastUsd: number, maxOutputTokens: number | undefined): void {
    for (const limit of this.spentAgainstLimits(totals)) {
      if (limit.spent + forecastUsd > limit.usd) {
        // The call alone is over a limit not yet spent: waiting or a new session changes nothing; a smaller max_tokens
        // (the forecast counts all of it as output) or a higher limit does. A limit already spent is the limit's own
        // advice: no call fits it, however small.
        const spent = limit.spent >= limit.usd;
        const alone = !spent && forecastUsd > limit.usd;
        const smaller = maxOutputTokens === undefined || maxOutputTokens > 1 ? "pass a smaller --max-tokens (the forecast counts all of it as output), or " : "";
        throw new CachetError("BUDGET_EXCEEDED", `budget: ${limit.name} of ${usd(limit.usd)} would be crossed: spent ${usd(limit.spent)} ${limit.period}, this call's worst-case forecast ${usd(forecastUsd)}; nothing was sent`, {
          hint: spent ? `the limit is spent already: ${limit.spentHint ?? limit.hint}` : alone ? `this call's forecast alone is over the limit: ${smaller}${limit.raise}` : limit.hint,
        });
      }
    }
  }

  private reportCrossing(scope: SpendScope, amount: number, forecastUsd: number): void {
    const totals = spendTotals(this.options.counters, scope);
    for (const limit of this.spentAgainstLimits(totals)) {
      if (limit.spent > limit.usd) {
        this.options.notice(`budget: ${limit.name} of ${usd(limit.usd)} is crossed: spent ${usd(limit.spent)} ${limit.period}; this call cost ${usd(amount)}, more than its forecast ${usd(forecastUsd)} (the prompt estimate was low)`);
      }
    }
  }

  private spentAgainstLimits(totals: SpendTotals): { name: string; usd: number; spent: number; period: string; hint: string; raise: string; spentHint?: string }[] {
    const l = this.options.limits;
    const zone = l.timeZone;
    // Emulated spend is kept apart from real spend, and shown by `stats --budget --emulate`.
    const shows = `\`cachet stats --budget${this.options.emulated ? " --emulate" : ""}\` shows the spend`;
    const out: { name: string; usd: number; spent: number; period: string; hint: string; raise: string; spentHint?: string }[] = [];
    if (l.runUsd !== undefined) {
      out.push({ name: "the run limit (--max-cost)", usd: l.runUsd, spent: this.runSpent, period: "in this run", hint: "raise --max-cost, or lower --max-tokens (the forecast counts max_tokens of output)", raise: "raise --max-cost", spentHint: "raise --max-cost" });
    }
    if (l.sessionUsd !== undefined) {
      out.push({ name: "the session limit (budget.session_usd)", usd: l.sessionUsd, spent: totals.session ?? this.runSpent, period: "in this session", hint: "start a new session, or raise budget.session_usd in config.toml", raise: "raise budget.session_usd in config.toml" });
    }
    if (l.dailyUsd !== undefined) out.push({ name: "the daily limit (budget.daily_usd)", usd: l.dailyUsd, spent: totals.day, period: `today (${zone})`, hint: `wait for tomorrow in ${zone}, or raise budget.daily_usd in config.toml; ${shows}`, raise: "raise budget.daily_usd in config.toml" });
    if (l.monthlyUsd !== undefined) out.push({ name: "the monthly limit (budget.monthly_usd)", usd: l.monthlyUsd, spent: totals.month, period: `this month (${zone})`, hint: `raise budget.monthly_usd in config.toml; ${shows}`, raise: "raise budget.monthly_usd in config.toml" });
    return out;
  }
}

/**
 * USD with enough digits for one call's cost: 4 decimals from a cent up; below
 * a cent 6, or as many as show two significant digits of a smaller amount
 * (`--max-cost 0.0000001` is $0.00000010, never $0.000000).
 */
export function usd(amount: number): string {
  const size = Math.abs(amount);
  const decimals = amount === 0 || size >= 0.01 ? 4 : Math.min(100, Math.max(6, 1 - Math.floor(Math.log10(size))));
  // The sign before the dollar, as README and `stats` write money: -$0.0056.
  return `${amount < 0 ? "-" : ""}$${size.toFixed(decimals)}`;
}
