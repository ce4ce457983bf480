/**
 * The emulator's clock: the wall clock plus an offset, so tests can age cache
 * entries without waiting. The header wins over the environment.
 */
import { CachetError } from "../errors.ts";
import { envControl, requestControl } from "./control-value.ts";

/** Request header holding the clock offset in milliseconds. */
export const CLOCK_HEADER = "x-emulator-clock-offset-ms";
/** Environment variable holding the clock offset in milliseconds. */
export const CLOCK_ENV = "CACHET_EMULATOR_CLOCK_OFFSET_MS";

/** Request header fixing the clock at an absolute time, ms since the epoch. */
export const FIXED_CLOCK_HEADER = "x-emulator-clock-ms";
/** Environment variable fixing the clock at an absolute time, ms since the epoch. */
export const FIXED_CLOCK_ENV = "CACHET_EMULATOR_CLOCK_MS";

/**
 * Refuses a clock variable that is set but not a whole number of ms written
 * in decimal (the offset may be negative), which would otherwise leave the
 * wall clock in place without a word, or read `0x10` or `1e3` as a time.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the form it takes
 */
export function checkClockEnv(env: Record<string, string | undefined>): void {
  for (const [name, form, signed] of [[FIXED_CLOCK_ENV, "ms since the epoch, e.g. 1767225600000", false], [CLOCK_ENV, "a shift in ms, e.g. 300000 or -60000", true]] as const) {
    const value = envControl(env, name);
    if (value === undefined || wholeMs(value, signed) !== undefined) continue;
    throw new CachetError("BAD_FLAG", `${name}=${JSON.stringify(env[name])}: expected ${form}`, { hint: `unset ${name} for the wall clock` });
  }
}

/**
 * Emulated now in ms since the epoch: the fixed time from the
 * `x-emulator-clock-ms` header (else `CACHET_EMULATOR_CLOCK_MS`) when set, so
 * two emulators answer the same request with the same bytes (ids and
 * timestamps derive from the clock); otherwise `Date.now()` plus the offset
 * from the `x-emulator-clock-offset-ms` header, else from
 * `CACHET_EMULATOR_CLOCK_OFFSET_MS`. A header value that is not a whole
 * number of ms is ignored; the variables are checked when the emulator starts
 * ({@link checkClockEnv}), both read the same way (src/emulator/control-value.ts).
 */
export function emulatedNow(headers: Headers, env: Record<string, string | undefined>): number {
  const fixedValue = requestControl(headers, FIXED_CLOCK_HEADER, env, FIXED_CLOCK_ENV);
  const fixed = fixedValue === undefined ? undefined : wholeMs(fixedValue, false);
  if (fixed !== undefined) return fixed;
  const offsetValue = requestControl(headers, CLOCK_HEADER, env, CLOCK_ENV);
  return Date.now() + ((offsetValue === undefined ? undefined : wholeMs(offsetValue, true)) ?? 0);
}

/** A whole number of ms written in decimal (with `signed`, optionally negative), or undefined. */
function wholeMs(value: string, signed: boolean): number | undefined {
  if (!(signed ? /^-?\d+$/ : /^\d+$/).test(value)) return undefined;
  const ms = Number(value);
  return Number.isSafeInteger(ms) ? ms : undefined;
}
