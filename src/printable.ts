/**
 * Text from users, models and files made safe for a terminal line or a table
 * cell: a session name holding an escape sequence or a newline must neither
 * rewrite the terminal nor break a table's rows.
 */

/**
 * `text` with every control character shown as a visible escape: `\n`, `\r`,
 * `\t`, other C0 and C1 controls and DEL as `\xNN`, and the invisible
 * characters that reorder or break lines (bidi overrides and isolates, line
 * and paragraph separators) as `\u{NNNN}`. Everything else is unchanged, so
 * ordinary text, accents and emoji print as they are.
 */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.codePointAt(0)!;
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
  });
}

/** C0 controls, DEL, C1 controls, bidi embeddings/overrides/isolates and marks, line and paragraph separators. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * `text` as a one-line preview of at most `max` characters (UTF-16 units, an
 * escape counted as its characters): line breaks and other controls shown as
 * {@link printable} shows them (`\n`, so a preview reads as every user text
 * cachet prints, and where a line ended stays visible), CRLF as one `\n`,
 * runs of spaces as one, no leading or trailing whitespace. Longer text, or
 * text known to go on (`cut`: only its start was read), is cut at a
 * character, never inside an escape, and ends with "…".
 */
export function previewLine(text: string, max: number, cut = false): string {
  const plain = text.replace(/\r\n/g, "\n").replace(/ {2,}/g, " ").trim();
  const line = printable(plain);
  if (!cut && line.length <= max) return line;
  let out = "";
  for (const c of plain) {
    const shown = printable(c);
    if (out.length + shown.length > max - 1) break;
    out += shown;
  }
  return `${out}…`;
}
