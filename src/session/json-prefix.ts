/**
 * The start of a JSON text made whole: `sessions show` previews a message
 * from the first stored part of its content JSON (message-parts.ts) instead
 * of reading a message of hundreds of MB to print 72 characters of it.
 */

/**
 * A valid JSON text holding what `prefix` (the start of a valid JSON array or
 * object, cut anywhere) holds: a string value cut short ends where the prefix
 * ends (an escape cut short dropped), an object member or array element not
 * started or cut before its value is left out, and every open container is
 * closed. `JSON.parse` of the result is the value with its tail missing.
 * @param prefix starts with `[` or `{` (leading whitespace allowed)
 * @returns the prefix's value itself when it is whole; "null" when nothing of it can be kept
 */
export function closeJsonPrefix(prefix: string): string {
  /** The closers the open containers need, innermost first (`]` or `}` each). */
  let closers = "";
  /** In an object: the next string is a key (after `{` or `,`), else a value (after `:`). */
  let expectKey = false;
  let inString = false;
  let stringIsKey = false;
  let stringStart = 0;
  /** The longest cut known to make valid JSON with `cutClosers`. */
  let cut = -1;
  let cutClosers = "";
  for (let i = 0; i < prefix.length; i++) {
    const c = prefix[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') {
        inString = false;
        if (!stringIsKey && closers !== "") [cut, cutClosers] = [i + 1, closers];
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      stringIsKey = expectKey && closers.startsWith("}");
      stringStart = i;
    } else if (c === "[" || c === "{") {
      closers = (c === "[" ? "]" : "}") + closers;
      expectKey = c === "{";
      [cut, cutClosers] = [i + 1, closers];
    } else if (c === "]" || c === "}") {
      closers = closers.slice(1);
      expectKey = false;
      if (closers === "") return prefix.slice(0, i + 1);
      [cut, cutClosers] = [i + 1, closers];
    } else if (c === ",") {
      // A number or literal just ended: cut before the comma.
      [cut, cutClosers] = [i, closers];
      expectKey = closers.startsWith("}");
    } else if (c === ":") expectKey = false;
  }
  if (inString && !stringIsKey) {
    let end = prefix.length;
    // An escape cut short: `\`, or `\u` with fewer than four hex digits.
    const escape = /\\(u[0-9a-fA-F]{0,3})?$/.exec(prefix.slice(Math.max(stringStart + 1, end - 6)));
    if (escape && countBackslashesBefore(prefix, end - escape[0].length) % 2 === 0) end -= escape[0].length;
    return `${prefix.slice(0, end)}"${closers}`;
  }
  return cut < 0 ? "null" : prefix.slice(0, cut) + cutClosers;
}

/** How many backslashes come right before `at`: an even count leaves the one at `at` unescaped. */
function countBackslashesBefore(text: string, at: number): number {
  let n = 0;
  while (at - n - 1 >= 0 && text[at - n - 1] === "\\") n++;
  return n;
}
