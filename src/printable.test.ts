import { expect, test } from "bun:test";
import { printable } from "./printable.ts";

test("control characters, bidi overrides and line separators become visible escapes; ordinary text is unchanged", () => {
  expect(printable("\u001b[31mred\u001b[0m")).toBe("\\x1b[31mred\\x1b[0m");
  expect(printable("two\nlines\r\tand\u0007bell\u007f")).toBe("two\\nlines\\r\\tand\\x07bell\\x7f");
  expect(printable("\u009b2J")).toBe("\\x9b2J");
  expect(printable("abc\u202edef\u2028")).toBe("abc\\u{202e}def\\u{2028}");
  expect(printable("café — 東京 🚀 review-2")).toBe("café — 東京 🚀 review-2");
});
