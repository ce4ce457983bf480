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
