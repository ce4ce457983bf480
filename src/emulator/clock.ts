/**
 * The emulator's clock: the wall clock plus an offset, so tests can age cache
 * entries without waiting. The header wins over the environment.
 */

/** Request header holding the clock offset in milliseconds. */
export const CLOCK_HEADER = "x-emulator-clock-offset-ms";
/** Environment variable holding the clock offset in milliseconds. */
export const CLOCK_ENV = "CACHET_EMULATOR_CLOCK_OFFSET_MS";

/**
 * Emulated now in ms since the epoch: `Date.now()` plus the offset from the
 * `x-emulator-clock-offset-ms` header, else from `CACHET_EMULATOR_CLOCK_OFFSET_MS`.
 * A value that is not a finite number is ignored (offset 0).
 */
export function emulatedNow(headers: Headers, env: Record<string, string | undefined>): number {
  const raw = headers.get(CLOCK_HEADER) ?? env[CLOCK_ENV];
  const offset = raw === undefined || raw === null || raw === "" ? 0 : Number(raw);
  return Date.now() + (Number.isFinite(offset) ? offset : 0);
}
