/**
 * Calendar periods of the daily and monthly limits: the local day and month of
 * an instant in the configured IANA time zone (default: the system's), and the
 * instants each spans.
 */

/** The day (`YYYY-MM-DD`) and month (`YYYY-MM`) an instant falls in. */
export interface CalendarKeys {
  day: string;
  month: string;
}

/** A calendar period: its key, and the instants it spans, [startMs, endMs) Unix epoch ms. */
export interface Period {
  key: string;
  startMs: number;
  endMs: number;
}

/** The day and month an instant falls in, with their spans. */
export interface CalendarPeriods {
  day: Period;
  month: Period;
}

/**
 * The calendar day and month of `epochMs` in `timeZone`.
 * @param timeZone IANA name (`Europe/Paris`, `UTC`); undefined for the system's
 * @throws RangeError for an unknown time zone (config validation refuses those first)
 */
export function calendarKeys(epochMs: number, timeZone?: string): CalendarKeys {
  const { year, month, day } = wallClock(epochMs, timeZone);
  return { day: `${year}-${month}-${day}`, month: `${year}-${month}` };
}

/**
 * The calendar day and month of `epochMs` in `timeZone` and the instants they
 * span: a day runs from the first instant of its local date to the first of
 * the next date (23 or 25 hours across a daylight-saving change).
 * @throws RangeError for an unknown time zone
 */
export function calendarPeriods(epochMs: number, timeZone?: string): CalendarPeriods {
  const clock = wallClock(epochMs, timeZone);
  const dateAt = (t: number) => {
    const c = wallClock(t, timeZone);
    return `${c.year}-${c.month}-${c.day}`;
  };
  // The offset in force now is the one at the period's bounds unless a daylight-saving change lies between.
  const offsetMs = Date.UTC(+clock.year, +clock.month - 1, +clock.day, +clock.hour, +clock.minute, +clock.second) - Math.floor(epochMs / 1000) * 1000;
  const start = (year: number, month: number, day: number) => startOfDate(utcDate(year, month, day), dateAt, offsetMs);
  const [y, m, d] = [+clock.year, +clock.month, +clock.day];
  return {
    day: { key: `${clock.year}-${clock.month}-${clock.day}`, startMs: start(y, m, d), endMs: start(y, m, d + 1) },
    month: { key: `${clock.year}-${clock.month}`, startMs: start(y, m, 1), endMs: start(y, m + 1, 1) },
  };
}

/** The time zone in force: the configured one, else the system's. */
export function effectiveTimeZone(configured?: string): string {
  return configured ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
}

const HOUR_MS = 3_600_000;

/** Formatters by time zone: making one costs ~0.3 ms, using one ~7 µs. */
const formatters = new Map<string | undefined, Intl.DateTimeFormat>();

function wallClock(epochMs: number, timeZone: string | undefined): Record<"year" | "month" | "day" | "hour" | "minute" | "second", string> {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
    formatters.set(timeZone, format);
  }
  const out = { year: "", month: "", day: "", hour: "", minute: "", second: "" };
  for (const part of format.formatToParts(epochMs)) if (part.type in out) out[part.type as keyof typeof out] = part.value;
  return out;
}

/** `YYYY-MM-DD` of a date given by possibly overflowing parts (month 13, day 32 roll over), month 1-based. */
function utcDate(year: number, month: number, day: number): string {
  return new Date(Date.UTC(year, month - 1, day)).toISOString().slice(0, 10);
}

/** The first instant whose local date (`dateAt`) is `date` or later. */
function startOfDate(date: string, dateAt: (t: number) => string, offsetGuessMs: number): number {
  const midnightUtc = Date.parse(`${date}T00:00:00Z`);
  const guess = midnightUtc - offsetGuessMs;
  if (dateAt(guess) >= date && dateAt(guess - 1) < date) return guess;
  // Another offset at that midnight, or a date that starts after midnight (a change at 00:00): bisect.
  // UTC offsets lie within −12 h and +14 h, so 18 h either side of UTC midnight brackets the local one.
  let before = midnightUtc - 18 * HOUR_MS;
  let atOrAfter = midnightUtc + 18 * HOUR_MS;
  while (atOrAfter - before > 1) {
    const mid = Math.floor((before + atOrAfter) / 2);
    if (dateAt(mid) < date) before = mid;
    else atOrAfter = mid;
  }
  return atOrAfter;
}
