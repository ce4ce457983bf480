import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { isCachetError } from "../errors.ts";
import type { Usage } from "../plugin/usage.ts";
import { openStore, type Store } from "../session/store.ts";
import type { ChainLink, LedgerRow } from "../session/types.ts";
import { Budget, type BudgetLimits, budgetLimits, usd } from "./budget.ts";
import { budgetReport } from "./budget-report.ts";
import { calendarKeys, calendarPeriods } from "./periods.ts";
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

function budget(limits: Omit<BudgetLimits, "timeZone">, extra: { allowUnpriced?: boolean; ephemeral?: boolean; counters?: Store; emulated?: boolean; timeZone?: string } = {}): Budget {
  return new Budget({
    limits: { timeZone: extra.timeZone ?? "UTC", ...limits },
    counters: extra.counters ?? store,
    allowUnpriced: extra.allowUnpriced ?? false,
    emulated: extra.emulated ?? false,
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

/** A ledger row of `sessionId` started at `startedAt` costing `costUsd`, counted from the ledger as `spend` (absent: through the budget's reservations, or not at all). */
function ledgerRow(id: string, sessionId: string, startedAt: number, costUsd: number | null, spend?: LedgerRow["spend"]): LedgerRow {
  return {
    id, sessionId, prefixVersion: 1, role: "main", provider: "acme", model: "model", protocol: "anthropic-messages",
    startedAt, firstTokenAt: null, finishedAt: null, latencyMs: null, ttftMs: null, outputTps: null,
    usage: { input: 100, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 10, reasoning: undefined }, rawUsage: {},
    costUsd, providerCostUsd: null, providerRequestId: null, affinityKey: null, cacheMode: "auto", cacheTtl: "5m",
    chain: [], expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId: null,
    ...(spend ? { spend } : {}),
  };
}

describe("spend made while no limit was set counts against a limit set later", () => {
  test("day, month and session count the ledger's priced requests of the period; unpriced ones add nothing", async () => {
    const s = store.createSession({ model: "acme/model" }).id;
    const other = store.createSession({ model: "acme/model" }).id;
    store.recordRequest(ledgerRow("r_1", s, now - 3600_000, 0.004, "real"));
    store.recordRequest(ledgerRow("r_2", other, now - 60_000, 0.003, "real"));
    store.recordRequest(ledgerRow("r_3", other, now - 30_000, null, "real"));
    // Yesterday (UTC) and last month: the month and the session count them, the day does not.
    store.recordRequest(ledgerRow("r_4", s, Date.UTC(2026, 10, 29, 23, 59, 59, 999), 0.002, "real"));
    store.recordRequest(ledgerRow("r_5", s, Date.UTC(2026, 9, 31, 23, 59, 59, 999), 0.001, "real"));
    const totals = spendTotals(store, { sessionId: s, periods: calendarPeriods(now, "UTC"), emulated: false });
    expect(totals.day).toBeCloseTo(0.007, 12);
    expect(totals.month).toBeCloseTo(0.009, 12);
    expect(totals.session).toBeCloseTo(0.007, 12);
    const daily = await refusal(() => budget({ dailyUsd: 0.025 }).admit(s, call(8_000)));
    expect(daily.message).toContain("the daily limit (budget.daily_usd) of $0.0250 would be crossed: spent $0.007000 today (UTC), this call's worst-case forecast $0.0200");
    const session = await refusal(() => budget({ sessionUsd: 0.025 }).admit(s, call(8_000)));
    expect(session.message).toContain("spent $0.007000 in this session");
    expect((await budget({ sessionUsd: 0.025 }).admit(other, call(8_000))).forecastUsd).toBeCloseTo(0.02, 12);
  });

  test("a call a run under a limit reserved counts once, through its reservation, whatever its ledger row", async () => {
    const s = store.createSession({ model: "acme/model" }).id;
    const reserved = await budget({ dailyUsd: 1 }).admit(s, call(8_000));
    reserved.settle(0.012);
    store.recordRequest(ledgerRow("r_1", s, now, 0.012));
    // An unknown cost keeps the forecast; its ledger row adds nothing.
    (await budget({ dailyUsd: 1 }).admit(s, call(8_000))).settle(null);
    store.recordRequest(ledgerRow("r_2", s, now, null));
    // A provider's extra pass of a reserved call was not forecast: it counts from the ledger.
    store.recordRequest(ledgerRow("r_3", s, now, 0.0005, "real"));
    const totals = spendTotals(store, { sessionId: s, periods: calendarPeriods(now, "UTC"), emulated: false });
    expect(totals.day).toBeCloseTo(0.012 + 0.02 + 0.0005, 12);
    expect(totals.session).toBeCloseTo(0.012 + 0.02 + 0.0005, 12);
  });

  test("emulated and real spend stay apart; another client's request recorded by the proxy counts toward neither", () => {
    const s = store.createSession({ model: "acme/model" }).id;
    store.recordRequest(ledgerRow("r_1", s, now, 0.004, "real"));
    store.recordRequest(ledgerRow("r_2", s, now, 0.002, "emulated"));
    store.recordRequest(ledgerRow("r_3", s, now, 0.5));
    const periods = calendarPeriods(now, "UTC");
    expect(spendTotals(store, { sessionId: s, periods, emulated: false })).toEqual({ day: 0.004, month: 0.004, session: 0.004 });
    expect(spendTotals(store, { sessionId: s, periods, emulated: true })).toEqual({ day: 0.002, month: 0.002, session: 0.002 });
    const report = budgetReport(store, { budget: { daily_usd: 1, time_zone: "UTC" } }, { sessionId: s, emulated: false, now });
    expect(report.lines).toEqual([
      { limit: "session", period: s, limitUsd: null, spentUsd: 0.004, leftUsd: null },
      { limit: "daily", period: "2026-11-30", limitUsd: 1, spentUsd: 0.004, leftUsd: 0.996 },
      { limit: "monthly", period: "2026-11", limitUsd: null, spentUsd: 0.004, leftUsd: null },
    ]);
  });

  test("the day is the configured zone's: a request at 23:30 UTC is tomorrow's in Tokyo", async () => {
    const s = store.createSession({ model: "acme/model" }).id;
    store.recordRequest(ledgerRow("r_1", s, Date.UTC(2026, 10, 29, 23, 30), 0.02, "real"));
    // 2026-11-30 12:00 UTC is 21:00 in Tokyo, the same local day as 2026-11-30 08:30 (23:30 UTC the day before).
    const r = await refusal(() => budget({ dailyUsd: 0.03 }, { timeZone: "Asia/Tokyo" }).admit(s, call(8_000)));
    expect(r.message).toContain("spent $0.0200 today (Asia/Tokyo)");
    expect((await budget({ dailyUsd: 0.03 }).admit(s, call(8_000))).forecastUsd).toBeCloseTo(0.02, 12);
  });
});

describe("after the call", () => {
  test("a limit crossed because the call cost more than forecast is reported; an unknown cost keeps the forecast", async () => {
    const b = budget({ dailyUsd: 0.03 });
    const r = await b.admit("s_1", call(8_000));
    r.settle(0.035);
    expect(notices).toEqual(["budget: the daily limit (budget.daily_usd) of $0.0300 is crossed: spent $0.0350 today (UTC); this call cost $0.0350, more than its forecast $0.0200 (the prompt estimate was low)"]);
    const periods = calendarPeriods(now, "UTC");
    const other = await budget({ runUsd: 1 }).admit("s_9", call(8_000));
    other.settle(null);
    expect(spendTotals(store, { sessionId: "s_9", periods, emulated: false }).session).toBeCloseTo(0.02, 12);
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

  test("a period spans its local dates: 23 hours on the day clocks go forward, a month less that hour", () => {
    const paris = calendarPeriods(Date.UTC(2026, 2, 29, 12), "Europe/Paris");
    expect(paris.day).toEqual({ key: "2026-03-29", startMs: Date.UTC(2026, 2, 28, 23), endMs: Date.UTC(2026, 2, 29, 22) });
    expect(paris.month).toEqual({ key: "2026-03", startMs: Date.UTC(2026, 1, 28, 23), endMs: Date.UTC(2026, 2, 31, 22) });
    const december = calendarPeriods(Date.UTC(2026, 11, 31, 23, 30), "Asia/Tokyo");
    expect(december.day).toEqual({ key: "2027-01-01", startMs: Date.UTC(2026, 11, 31, 15), endMs: Date.UTC(2027, 0, 1, 15) });
    expect(december.month).toEqual({ key: "2027-01", startMs: Date.UTC(2026, 11, 31, 15), endMs: Date.UTC(2027, 0, 31, 15) });
    // Chile moves its clocks forward at midnight: 2026-09-06 begins at 01:00 local (04:00 UTC).
    const santiago = calendarPeriods(Date.UTC(2026, 8, 6, 12), "America/Santiago");
    expect(santiago.day).toEqual({ key: "2026-09-06", startMs: Date.UTC(2026, 8, 6, 4), endMs: Date.UTC(2026, 8, 7, 3) });
  });

  test("amounts print with enough digits for one call", () => {
    expect(usd(0.0003)).toBe("$0.000300");
    expect(usd(1.5)).toBe("$1.5000");
    expect(usd(-0.009779)).toBe("-$0.009779");
    expect(usd(-2)).toBe("-$2.0000");
    // Below a millionth of a dollar: two significant digits, never a limit shown as $0.000000.
    expect(usd(0.0000001)).toBe("$0.00000010");
    expect(usd(0.00000123)).toBe("$0.0000012");
    expect(usd(-0.000000049)).toBe("-$0.000000049");
    expect(usd(1e-30)).toBe(`$0.${"0".repeat(29)}10`);
    expect(usd(0)).toBe("$0.0000");
  });
});
