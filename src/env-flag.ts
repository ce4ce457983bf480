/**
 * Boolean environment variables (CACHET_NO_STORE): one parser, so every such
 * variable takes the same words and a value it does not know is refused
 * rather than read as "off".
 */
import { CachetError } from "./errors.ts";

const TRUE = new Set(["1", "true", "yes", "on"]);
const FALSE = new Set(["", "0", "false", "no", "off"]);

/**
 * The value of the boolean environment variable `name`: true for 1, true,
 * yes, on; false for 0, false, no, off, empty or unset (case-insensitive,
 * surrounding blanks ignored).
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the words it takes
 */
export function envFlag(env: Readonly<Record<string, string | undefined>>, name: string): boolean {
  const value = env[name];
  if (value === undefined) return false;
  const word = value.trim().toLowerCase();
  if (TRUE.has(word)) return true;
  if (FALSE.has(word)) return false;
  throw new CachetError("BAD_FLAG", `${name}=${JSON.stringify(value)}: expected 1, true, yes or on (or 0, false, no, off, empty)`, { hint: `set ${name}=1 to turn it on, or unset it` });
}
