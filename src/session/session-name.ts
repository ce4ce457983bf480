/**
 * What a session name may be. A name is typed by people and printed in
 * tables and one-line messages, so it is one line of visible text of a
 * bounded length; argv bytes that are not UTF-8 reach cachet as U+FFFD, which
 * would store a name nobody can type again.
 */
import { CachetError } from "../errors.ts";
import { printable } from "../printable.ts";

/** Longest session name, in characters (code points). */
export const MAX_SESSION_NAME = 128;

/**
 * Refuses a name that cannot be a session name: empty, longer than
 * {@link MAX_SESSION_NAME} characters, holding U+FFFD (invalid UTF-8 in the
 * argument), a control character, or an invisible character that reorders
 * or breaks a line.
 * @param flag how the error names the flag, e.g. `--session`
 * @throws CachetError BAD_FLAG (exit 2) naming the first offending character and its position (1-based)
 */
export function checkSessionName(name: string, flag: string): void {
  const chars = [...name];
  const hint = "a session name is one line of visible text; an existing session is also reachable by its id (`cachet sessions`)";
  if (chars.length === 0) throw new CachetError("BAD_FLAG", `${flag}: a session name cannot be empty`, { hint });
  if (chars.length > MAX_SESSION_NAME) {
    throw new CachetError("BAD_FLAG", `${flag} ${printable(chars.slice(0, 24).join(""))}…: a session name has at most ${MAX_SESSION_NAME} characters, this one ${chars.length}`, { hint });
  }
  const at = chars.findIndex((c) => c === "\ufffd" || printable(c) !== c);
  if (at === -1) return;
  const what = chars[at] === "\ufffd" ? "is not valid UTF-8 (U+FFFD" : `holds a control or invisible character (${printable(chars[at]!)}`;
  throw new CachetError("BAD_FLAG", `${flag} "${printable(name)}": the name ${what} at character ${at + 1})`, { hint });
}
