/**
 * `cachet stats --budget`: what has been spent against each configured limit
 * in its current period (the session's, today's, this month's).
 */
import type { Config } from "../config.ts";
import type { Store } from "../session/store.ts";
import { usd } from "./budget.ts";
import { calendarPeriods, effectiveTimeZone } from "./periods.ts";
import { spendTotals } from "./spend-counter.ts";

/** One limit's standing. USD amounts. */
export interface BudgetLine {
  limit: "session" | "daily" | "monthly";
  /** The session id, the day (`YYYY-MM-DD`) or the month (`YYYY-MM`). */
  period: string;
  /** Null when the config sets no such limit (the spend is shown all the same). */
  limitUsd: number | null;
  spentUsd: number;
  /** limit − spent, null without a limit. */
  leftUsd: number | null;
}

/** The standing of every limit kind; `sessionId` null leaves the session line out. */
export function budgetReport(store: Store, config: Config, options: { sessionId: string | null; emulated: boolean; now?: number }): { timeZone: string; lines: BudgetLine[] } {
  const timeZone = effectiveTimeZone(config.budget?.time_zone);
  const periods = calendarPeriods(options.now ?? Date.now(), timeZone);
  const totals = spendTotals(store, { sessionId: options.sessionId, periods, emulated: options.emulated });
  const line = (limit: BudgetLine["limit"], period: string, limitUsd: number | undefined, spentUsd: number): BudgetLine => ({
    limit,
    period,
    limitUsd: limitUsd ?? null,
    spentUsd: roundUsd(spentUsd),
    leftUsd: limitUsd === undefined ? null : roundUsd(limitUsd - spentUsd),
  });
  const lines: BudgetLine[] = [];
  if (options.sessionId !== null) lines.push(line("session", options.sessionId, config.budget?.session_usd, totals.session ?? 0));
  lines.push(line("daily", periods.day.key, config.budget?.daily_usd, totals.day));
  lines.push(line("monthly", periods.month.key, config.budget?.monthly_usd, totals.month));
  return { timeZone, lines };
}

/** The report as a table. */
export function formatBudgetReport(report: { timeZone: string; lines: BudgetLine[] }, emulated: boolean): string {
  const rows = [["limit", "period", "spent", "limit USD", "left"], ...report.lines.map((l) => [l.limit, l.period, usd(l.spentUsd), l.limitUsd === null ? "none" : usd(l.limitUsd), l.leftUsd === null ? "–" : usd(l.leftUsd)])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const text = rows.map((r) => r.map((cell, i) => (i >= 2 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join("  ").trimEnd());
  return `${text.join("\n")}\nday and month in ${report.timeZone}${emulated ? "; emulated calls (counted apart from real ones)" : ""}\n`;
}

/** A sum of stored costs without the float noise of adding them up (0.0007559999999999999 is 0.000756): to the pico-dollar. */
function roundUsd(amount: number): number {
  return Math.round(amount * 1e12) / 1e12;
}
