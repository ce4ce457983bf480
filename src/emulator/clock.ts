/**
 * The emulator's clock: the wall clock plus an offset, so tests can age cache
 * entries without waiting. The header wins over the environment.
 */
import { CachetError } from "../errors.ts";

/** Request header holding the clock offset in milliseconds. */
export const CLOCK_HEADER = "x-emulator-clock-offset-ms";
/** Environment variable holding the clock offset in milliseconds. */
export const CLOCK_ENV = "CACHET_EMULATOR_CLOCK_OFFSET_MS";

/** Request header fixing the clock at an absolute time, ms since the epoch. */
export const FIXED_CLOCK_HEADER = "x-emulator-clock-ms";
/** Environment variable fixing the clock at an absolute time, ms since the epoch. */
export const FIXED_CLOCK_ENV = "CACHET_EMULATOR_CLOCK_MS";

/**
 * Refuses a clock variable that is set but not a finite number of ms, which
 * would otherwise leave the wall clock in place without a word.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the form it takes
 */
export function checkClockEnv(env: Record<string, string | undefined>): void {
  for (const [name, form] of [[FIXED_CLOCK_ENV, "ms since the epoch, e.g. 1767225600000"], [CLOCK_ENV, "a shift in ms, e.g. 300000 or -60000"]] as const) {
    const value = env[name];
    if (value === undefined || value.trim() === "" || Number.isFinite(Number(value))) continue;
    throw new CachetError("BAD_FLAG", `${name}=${JSON.stringify(value)}: expected ${form}`, { hint: `unset ${name} for the wall clock` });
  }
}

/**
 * Emulated now in ms since the epoch: the fixed time from the
 * `x-emulator-clock-ms` header (else `CACHET_EMULATOR_CLOCK_MS`) when set, so
 * two emulators answer the same request with the same bytes (ids and
 * timestamps derive from the clock); otherwise `Date.now()` plus the offset
 * from the `x-emulator-clock-offset-ms` header, else from
 * `CACHET_EMULATOR_CLOCK_OFFSET_MS`. A header value that is not a finite number
 * is ignored; the variables are checked when the emulator starts ({@link checkClockEnv}).
 */
export function emulatedNow(headers: Headers, env: Record<string, string | undefined>): number {
  const fixedRaw = headers.get(FIXED_CLOCK_HEADER) ?? env[FIXED_CLOCK_ENV];
  const fixed = fixedRaw === undefined || fixedRaw === null || fixedRaw.trim() === "" ? Number.NaN : Number(fixedRaw);
  if (Number.isFinite(fixed)) return fixed;
  const raw = headers.get(CLOCK_HEADER) ?? env[CLOCK_ENV];
  const offset = raw === undefined || raw === null || raw === "" ? 0 : Number(raw);
  return Date.now() + (Number.isFinite(offset) ? offset : 0);
}
