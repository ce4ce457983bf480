/**
 * Calendar periods of the daily and monthly limits: the local day and month of
 * an instant in the configured IANA time zone (default: the system's).
 */

/** The day (`YYYY-MM-DD`) and month (`YYYY-MM`) an instant falls in. */
export interface CalendarKeys {
  day: string;
  month: string;
}

/**
 * The calendar day and month of `epochMs` in `timeZone`.
 * @param timeZone IANA name (`Europe/Paris`, `UTC`); undefined for the system's
 * @throws RangeError for an unknown time zone (config validation refuses those first)
 */
export function calendarKeys(epochMs: number, timeZone?: string): CalendarKeys {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(epochMs);
  const get = (type: string) => parts.find((p) => p.type === type)!.value;
  const month = `${get("year")}-${get("month")}`;
  return { day: `${month}-${get("day")}`, month };
}

/** The time zone in force: the configured one, else the system's. */
export function effectiveTimeZone(configured?: string): string {
  return configured ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
}
