import { describe, expect, test } from "bun:test";
import { decodeUtf8, firstInvalidUtf8, mergeInput } from "./stdin.ts";

const bytes = (...parts: (string | number[])[]) => new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...new TextEncoder().encode(p)] : p)));

describe("strict UTF-8", () => {
  test("the first invalid byte's offset: bad lead, bad continuation, overlong, surrogate, truncated", () => {
    expect(firstInvalidUtf8(bytes("café"))).toBe(-1);
    expect(firstInvalidUtf8(bytes("caf", [0xc3, 0x28]))).toBe(3);
    expect(firstInvalidUtf8(bytes("ab", [0xff]))).toBe(2);
    expect(firstInvalidUtf8(bytes([0xc0, 0xaf]))).toBe(0);
    expect(firstInvalidUtf8(bytes("x", [0xed, 0xa0, 0x80]))).toBe(1);
    expect(firstInvalidUtf8(bytes("xy", [0xe2, 0x82]))).toBe(2);
  });

  test("strict decoding fails naming the offset; replace substitutes U+FFFD, never a lone surrogate", () => {
    expect(() => decodeUtf8(bytes("caf", [0xc3, 0x28]), "strict")).toThrow("invalid byte 0xc3 at offset 3");
    const replaced = decodeUtf8(bytes("caf", [0xc3, 0x28]), "replace");
    expect(replaced).toBe("caf\uFFFD(");
    expect(decodeUtf8(bytes("x", [0xed, 0xa0, 0x80]), "replace")).not.toMatch(/[\uD800-\uDFFF]/);
  });
});

describe("stdin and PROMPT (CASES.md case 23)", () => {
  test("stdin first, a blank line, then the prompt; either alone as it is", () => {
    expect(mergeInput("RELEASE NOTES v1\n", "how do I install it")).toBe("RELEASE NOTES v1\n\nhow do I install it");
    expect(mergeInput("no newline", "q")).toBe("no newline\n\nq");
    expect(mergeInput(undefined, "q")).toBe("q");
    expect(mergeInput("only stdin", undefined)).toBe("only stdin");
    expect(mergeInput(undefined, "")).toBeUndefined();
  });
});
