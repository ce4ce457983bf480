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
 * Refuses a name that cannot be a session name: empty, only spaces, starting
 * or ending with a space, `-` (the listing's mark for no name), not in Unicode
 * normalization form C (`e` and a combining accent, which prints as `é`), longer than
 * {@link MAX_SESSION_NAME} characters, holding U+FFFD (invalid UTF-8 in the
 * argument), a control character, an invisible character that reorders
 * or breaks a line, or one that shows nothing (U+200B zero width space, U+00AD
 * soft hyphen, U+FEFF: Unicode's default-ignorable code points) outside an
 * emoji sequence, where joiners and variation selectors belong.
 * @param flag how the error names the flag, e.g. `--session`
 * @throws CachetError BAD_FLAG (exit 2) naming the first offending character and its position (1-based)
 */
export function checkSessionName(name: string, flag: string): void {
  const chars = [...name];
  const hint = "a session name is one line of visible text; an existing session is also reachable by its id (`cachet sessions`)";
  if (chars.length === 0) throw new CachetError("BAD_FLAG", `${flag}: a session name cannot be empty`, { hint });
  // Spaces alone show as nothing, and around a name they make two that print alike ("rev", "rev ").
  if (name.trim() === "") throw new CachetError("BAD_FLAG", `${flag} "${name}": a session name cannot be only spaces`, { hint });
  if (name.trim() !== name) throw new CachetError("BAD_FLAG", `${flag} "${printable(name)}": a session name cannot start or end with a space`, { hint: `write it without them: ${flag} "${printable(name.trim())}"` });
  if (name === "-") throw new CachetError("BAD_FLAG", `${flag} -: "-" is what \`cachet sessions\` shows for a session without a name`, { hint });
  // An accent typed as its own character (e + U+0301) prints as the precomposed one (é): two names, one look.
  if (name.normalize("NFC") !== name) {
    throw new CachetError("BAD_FLAG", `${flag} "${printable(name)}": the name holds a letter written as two characters (a base and a combining mark)`, { hint: `write it composed, as it prints: ${flag} "${printable(name.normalize("NFC"))}"` });
  }
  if (chars.length > MAX_SESSION_NAME) {
    throw new CachetError("BAD_FLAG", `${flag} ${printable(chars.slice(0, 24).join(""))}…: a session name has at most ${MAX_SESSION_NAME} characters, this one ${chars.length}`, { hint });
  }
  const hidden = hiddenCharacters(name);
  const at = chars.findIndex((c, i) => c === "\ufffd" || printable(c) !== c || hidden.has(i));
  if (at === -1) return;
  const shown = shownChars(chars, hidden);
  const what = chars[at] === "\ufffd" ? "is not valid UTF-8 (U+FFFD" : `holds a control or invisible character (${shown[at]}`;
  throw new CachetError("BAD_FLAG", `${flag} "${shown.join("")}": the name ${what} at character ${at + 1})`, { hint });
}

/**
 * A stored name as tables and messages print it: {@link printable}, and a
 * character that shows nothing as its escape (`a\u{200b}b`), so a name stored
 * before such names were refused cannot pass for another (`ab`).
 */
export function shownName(name: string): string {
  return shownChars([...name], hiddenCharacters(name)).join("");
}

function shownChars(chars: string[], hidden: Set<number>): string[] {
  return chars.map((c, i) => (hidden.has(i) ? `\\u{${c.codePointAt(0)!.toString(16)}}` : printable(c)));
}

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
/** Clusters that may hold ignorable code points: emoji (ZWJ sequences, variation selectors, tag flags) and keycaps. */
const EMOJI_CLUSTER = /^(?:[\p{Extended_Pictographic}\p{Regional_Indicator}]|[0-9#*]\ufe0f?\u20e3$)/u;

/** Positions (in code points) of the default-ignorable characters of `name` that are not part of an emoji. */
function hiddenCharacters(name: string): Set<number> {
  const hidden = new Set<number>();
  let at = 0;
  for (const { segment } of new Intl.Segmenter("en", { granularity: "grapheme" }).segment(name)) {
    const chars = [...segment];
    if (!EMOJI_CLUSTER.test(segment)) chars.forEach((c, i) => IGNORABLE.test(c) && hidden.add(at + i));
    at += chars.length;
  }
  return hidden;
}
