import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { isCachetError } from "../errors.ts";
import type { Usage } from "../plugin/usage.ts";
import { openStore, type Store } from "../session/store.ts";
import type { ChainLink } from "../session/types.ts";
import { Budget, type BudgetLimits, budgetLimits, usd } from "./budget.ts";
import { calendarKeys } from "./periods.ts";
import { spendTotals } from "./spend-counter.ts";

/** $1 per million input tokens, $10 per million output, $1.25 per million 5m writes. */
const price = async (ref: string, usage: Usage) => {
  if (ref === "acme/unpriced") return { costUsd: null, reason: "no input price for acme/unpriced" };
  const cost = ((usage.input ?? 0) * 1 + (usage.cacheWrite5m ?? 0) * 1.25 + (usage.output ?? 0) * 10) / 1e6;
  return { costUsd: cost };
};

let store: Store;
let notices: string[];
let now: number;
beforeEach(() => {
  store = openStore(":memory:");
  notices = [];
  now = Date.UTC(2026, 10, 30, 12, 0, 0);
});
afterEach(() => store.close());

function budget(limits: Omit<BudgetLimits, "timeZone">, extra: { allowUnpriced?: boolean; ephemeral?: boolean; counters?: Store } = {}): Budget {
  return new Budget({
    limits: { timeZone: "UTC", ...limits },
    counters: extra.counters ?? store,
    allowUnpriced: extra.allowUnpriced ?? false,
    emulated: false,
    ephemeral: extra.ephemeral ?? false,
    price,
    outputLimit: async () => 64_000,
    notice: (m) => notices.push(m),
    now: () => now,
  });
}

/** A request of `tokens` prompt tokens with max_tokens 1,000: forecast = tokens·1.25e-6 (cache write, the dearer) + $0.01. */
function call(tokens: number, ref = "acme/model") {
  const chain = [{ tokens } as ChainLink];
  return { catalogRef: ref, chain, maxTokens: 1_000, cache: { mode: "auto" as const, ttl: "5m" as const } };
}

function refusal(fn: () => Promise<unknown>): Promise<{ code: string; message: string; hint: string }> {
  return fn().then(
    () => {
      throw new Error("expected a refusal");
    },
    (error) => {
      if (!isCachetError(error)) throw error;
      return { code: error.code, message: error.message, hint: error.hint ?? "" };
    },
  );
}

describe("the forecast", () => {
  test("is the prompt at the dearest prompt price that can apply plus max_tokens of output", async () => {
    const r = await budget({ runUsd: 1 }).admit("s_1", call(8_000));
    // 8,000 × $1.25/M (a 5m cache write costs more than uncached input) + 1,000 × $10/M
    expect(r.forecastUsd).toBeCloseTo(0.02, 12);
    const off = await budget({ runUsd: 1 }).admit("s_1", { ...call(8_000), cache: { mode: "off", ttl: "5m" } });
    expect(off.forecastUsd).toBeCloseTo(0.018, 12);
  });

  test("without --max-tokens the model's output limit from the catalog is the ceiling", async () => {
    const r = await budget({ runUsd: 10 }).admit("s_1", { ...call(0), maxTokens: undefined });
    expect(r.forecastUsd).toBeCloseTo(0.64, 12);
  });
});

describe("a call that could cross a limit is refused before sending, naming the limit, the spend and the forecast", () => {
  test("run (--max-cost), across calls", async () => {
    const b = budget({ runUsd: 0.05 });
    (await b.admit("s_1", call(8_000))).settle(0.016);
    (await b.admit("s_1", call(8_000))).settle(0.016);
    const r = await refusal(() => b.admit("s_1", call(8_000)));
    expect(r.code).toBe("BUDGET_EXCEEDED");
    expect(r.message).toBe("budget: the run limit (--max-cost) of $0.0500 would be crossed: spent $0.0320 in this run, this call's worst-case forecast $0.0200; nothing was sent");
    expect(r.hint).toContain("--max-cost");
  });

  test("session: other runs of the same session count, other sessions do not", async () => {
    (await budget({ sessionUsd: 0.03 }).admit("s_1", call(8_000))).settle(0.012);
    const r = await refusal(() => budget({ sessionUsd: 0.03 }).admit("s_1", call(8_000)));
    expect(r.message).toContain("the session limit (budget.session_usd) of $0.0300 would be crossed: spent $0.0120 in this session");
    expect((await budget({ sessionUsd: 0.03 }).admit("s_2", call(8_000))).forecastUsd).toBeCloseTo(0.02, 12);
  });

  test("daily: in the configured time zone; the next local day starts afresh", async () => {
    (await budget({ dailyUsd: 0.03 }).admit("s_1", call(8_000))).settle(0.02);
    const r = await refusal(() => budget({ dailyUsd: 0.03 }).admit("s_2", call(8_000)));
    expect(r.message).toContain("the daily limit (budget.daily_usd) of $0.0300 would be crossed: spent $0.0200 today (UTC), this call's worst-case forecast $0.0200");
    expect(r.hint).toContain("tomorrow in UTC");
    now += 12 * 3600_000;
    expect((await budget({ dailyUsd: 0.03 }).admit("s_2", call(8_000))).forecastUsd).toBeGreaterThan(0);
  });

  test("monthly", async () => {
    (await budget({ monthlyUsd: 0.03 }).admit("s_1", call(8_000))).settle(0.025);
    const r = await refusal(() => budget({ monthlyUsd: 0.03 }).admit("s_1", call(8_000)));
    expect(r.message).toContain("the monthly limit (budget.monthly_usd) of $0.0300 would be crossed: spent $0.0250 this month (UTC)");
  });

  test("a pending reservation counts at its forecast until it is settled", async () => {
    const pending = await budget({ dailyUsd: 0.03 }).admit("s_1", call(8_000));
    await refusal(() => budget({ dailyUsd: 0.03 }).admit("s_2", call(8_000)));
    pending.settle(0.001);
    expect((await budget({ dailyUsd: 0.03 }).admit("s_2", call(8_000))).forecastUsd).toBeCloseTo(0.02, 12);
  });
});

describe("after the call", () => {
  test("a limit crossed because the call cost more than forecast is reported; an unknown cost keeps the forecast", async () => {
    const b = budget({ dailyUsd: 0.03 });
    const r = await b.admit("s_1", call(8_000));
    r.settle(0.035);
    expect(notices).toEqual(["budget: the daily limit (budget.daily_usd) of $0.0300 is crossed: spent $0.0350 today (UTC); this call cost $0.0350, more than its forecast $0.0200 (the prompt estimate was low)"]);
    const keys = calendarKeys(now, "UTC");
    const other = await budget({ runUsd: 1 }).admit("s_9", call(8_000));
    other.settle(null);
    expect(spendTotals(store, { sessionId: "s_9", keys, emulated: false }).session).toBeCloseTo(0.02, 12);
  });
});

describe("unknown prices", () => {
  test("are refused under a limit unless --allow-unpriced, which sends the call uncounted", async () => {
    const r = await refusal(() => budget({ runUsd: 1 }).admit("s_1", call(100, "acme/unpriced")));
    expect(r.code).toBe("BUDGET_UNPRICED");
    expect(r.message).toContain("cannot forecast the cost of acme/unpriced (no input price for acme/unpriced)");
    expect(r.hint).toContain("--allow-unpriced");
    const allowed = await budget({ runUsd: 1 }, { allowUnpriced: true }).admit("s_1", call(100, "acme/unpriced"));
    expect(allowed.forecastUsd).toBe(0);
    expect(notices[0]).toContain("sent uncounted");
  });
});

describe("configuration", () => {
  test("no limit means no budget; --max-cost alone is one", () => {
    expect(budgetLimits({}, undefined)).toBeUndefined();
    expect(budgetLimits({ budget: { time_zone: "UTC" } }, undefined)).toBeUndefined();
    expect(budgetLimits({ budget: { daily_usd: 2, time_zone: "Asia/Tokyo" } }, 0.5)).toEqual({ runUsd: 0.5, dailyUsd: 2, timeZone: "Asia/Tokyo" });
  });

  test("the day and month are local to the time zone", () => {
    const instant = Date.UTC(2026, 11, 31, 23, 30);
    expect(calendarKeys(instant, "UTC")).toEqual({ day: "2026-12-31", month: "2026-12" });
    expect(calendarKeys(instant, "Asia/Tokyo")).toEqual({ day: "2027-01-01", month: "2027-01" });
    expect(calendarKeys(instant, "America/Los_Angeles")).toEqual({ day: "2026-12-31", month: "2026-12" });
  });

  test("amounts print with enough digits for one call", () => {
    expect(usd(0.0003)).toBe("$0.000300");
    expect(usd(1.5)).toBe("$1.5000");
  });
});
