/**
 * The most bytes of prompt text a run reads from stdin or a text file a flag
 * names (`-s @FILE`, `--overlay @FILE`, `--tool-result ID=@FILE`).
 */
import { CachetError } from "../errors.ts";

/** The default: 1 GiB. */
const DEFAULT_BYTES = 2 ** 30;
/** The most a run can hold (src/input/read-input.ts collects at most 4 GiB). */
const MOST_BYTES = 2 ** 32;

/**
 * The limit in bytes: `CACHET_MAX_STDIN_BYTES` when set (a whole number from
 * 0 to 4294967296), else 1 GiB.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the form it takes
 */
export function maxStdinBytes(env: Readonly<Record<string, string | undefined>>): number {
  const value = env.CACHET_MAX_STDIN_BYTES;
  if (value === undefined || value.trim() === "") return DEFAULT_BYTES;
  const bytes = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
  if (bytes <= MOST_BYTES) return bytes;
  throw new CachetError("BAD_FLAG", `CACHET_MAX_STDIN_BYTES=${JSON.stringify(value)}: expected a whole number of bytes from 0 to ${MOST_BYTES} (4 GiB)`, {
    hint: `unset it for the default 1 GiB (${DEFAULT_BYTES})`,
  });
}
