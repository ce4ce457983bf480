import { expect, test } from "bun:test";
import { previewLine, printable } from "./printable.ts";

test("control characters, bidi overrides and line separators become visible escapes; ordinary text is unchanged", () => {
  expect(printable("\u001b[31mred\u001b[0m")).toBe("\\x1b[31mred\\x1b[0m");
  expect(printable("two\nlines\r\tand\u0007bell\u007f")).toBe("two\\nlines\\r\\tand\\x07bell\\x7f");
  expect(printable("\u009b2J")).toBe("\\x9b2J");
  expect(printable("abc\u202edef\u2028")).toBe("abc\\u{202e}def\\u{2028}");
  expect(printable("café — 東京 🚀 review-2")).toBe("café — 東京 🚀 review-2");
});

test("a preview is one line: a line break shows as \\n (CRLF as one), spaces collapse, and a cut never splits an escape", () => {
  expect(previewLine("  line one\r\nline two\n\n   indented\tcolumn  ", 72)).toBe("line one\\nline two\\n\\n indented\\tcolumn");
  expect(previewLine("a\nb".repeat(40), 20)).toBe("a\\nba\\nba\\nba\\nba\\n…");
  expect(previewLine("a\nb".repeat(40), 20)).toHaveLength(20);
  // Exactly at the limit it is whole; text known to go on is marked cut.
  expect(previewLine("x".repeat(72), 72)).toBe("x".repeat(72));
  expect(previewLine("x".repeat(73), 72)).toBe(`${"x".repeat(71)}…`);
  expect(previewLine("short", 72, true)).toBe("short…");
});
