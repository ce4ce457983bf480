import { describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONFIG_INPUT_MAX_BYTES, decodeInput, firstInvalidUtf8, readTextFile, readTextFileSync, Utf8StreamDecoder } from "./read-input.ts";

const bytes = (...parts: (string | number[])[]) => new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...new TextEncoder().encode(p)] : p)));
const BOM = [0xef, 0xbb, 0xbf];
const stdin = { label: "stdin", code: "STDIN_INVALID_UTF8" as const };

describe("strict UTF-8", () => {
  test("the first invalid byte's offset: bad lead, bad continuation, overlong, surrogate, truncated", () => {
    expect(firstInvalidUtf8(bytes("café"))).toBe(-1);
    expect(firstInvalidUtf8(bytes("caf", [0xc3, 0x28]))).toBe(3);
    expect(firstInvalidUtf8(bytes("ab", [0xff]))).toBe(2);
    expect(firstInvalidUtf8(bytes([0xc0, 0xaf]))).toBe(0);
    expect(firstInvalidUtf8(bytes("x", [0xed, 0xa0, 0x80]))).toBe(1);
    expect(firstInvalidUtf8(bytes("xy", [0xe2, 0x82]))).toBe(2);
  });

  test("strict decoding fails naming the input and the offset; replace substitutes U+FFFD, never a lone surrogate", () => {
    expect(() => decodeInput(bytes("caf", [0xc3, 0x28]), stdin)).toThrow("stdin is not valid UTF-8: invalid byte 0xc3 at offset 3");
    expect(decodeInput(bytes("caf", [0xc3, 0x28]), { ...stdin, encoding: "replace" })).toBe("caf\uFFFD(");
    expect(decodeInput(bytes("x", [0xed, 0xa0, 0x80]), { ...stdin, encoding: "replace" })).not.toMatch(/[\uD800-\uDFFF]/);
  });

  test("chunked: the offset is exact when a bad sequence spans chunks of one byte", () => {
    const decoder = new Utf8StreamDecoder(stdin);
    let text = decoder.push(bytes("abc"));
    text += decoder.push(bytes([0xe2]));
    text += decoder.push(bytes([0x82]));
    expect(() => decoder.push(bytes("("))).toThrow("invalid byte 0xe2 at offset 3");
    expect(text).toBe("abc");
    const split = new Utf8StreamDecoder(stdin);
    expect(split.push(bytes("h", [0xe2])) + split.push(bytes([0x82])) + split.push(bytes([0xac], "!")) + split.end()).toBe("h€!");
    const truncated = new Utf8StreamDecoder(stdin);
    truncated.push(bytes("xy", [0xe2, 0x82]));
    expect(() => truncated.end()).toThrow("invalid byte 0xe2 at offset 2");
  });
});

describe("byte-order mark (CASES.md case 43)", () => {
  test("dropped at the start of a whole input and of a stream, even when the mark arrives split", () => {
    expect(decodeInput(bytes(BOM, '{"a":1}'), stdin)).toBe('{"a":1}');
    const decoder = new Utf8StreamDecoder(stdin);
    expect(decoder.push(bytes([0xef])) + decoder.push(bytes([0xbb, 0xbf], "hi")) + decoder.end()).toBe("hi");
  });

  test("kept anywhere but the start, where it is text", () => {
    expect(decodeInput(bytes("a", BOM), stdin)).toBe("a\uFEFF");
  });
});

describe("files", () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-read-input-"));
  test("missing, a directory, not UTF-8: named with the label, in the caller's code", async () => {
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "bad.txt"), bytes("ok", [0xff]));
    writeFileSync(join(dir, "bom.json"), bytes(BOM, "[1]"));
    const source = { label: "--tools t.json", code: "BAD_FLAG" as const };
    await expect(readTextFile(join(dir, "nope"), source)).rejects.toMatchObject({ code: "BAD_FLAG", message: "--tools t.json: no such file" });
    await expect(readTextFile(join(dir, "sub"), source)).rejects.toMatchObject({ message: "--tools t.json: is a directory, not a file" });
    expect(() => readTextFileSync(join(dir, "sub"), source)).toThrow("--tools t.json: is a directory, not a file");
    await expect(readTextFile(join(dir, "bad.txt"), { label: "x" })).rejects.toMatchObject({ code: "INPUT_INVALID", message: "x is not valid UTF-8: invalid byte 0xff at offset 2" });
    expect(await readTextFile(join(dir, "bom.json"), source)).toBe("[1]");
    expect(readTextFileSync(join(dir, "bom.json"), source)).toBe("[1]");
  });

  test("a file over its cap is refused once the cap is passed; one of exactly the cap is read", async () => {
    const max = 3 * 1024 * 1024;
    writeFileSync(join(dir, "at-cap.txt"), "a".repeat(max));
    writeFileSync(join(dir, "over-cap.txt"), "a".repeat(max + 1));
    const source = { label: "--tools t.json", maxBytes: max };
    expect((await readTextFile(join(dir, "at-cap.txt"), source)).length).toBe(max);
    expect(readTextFileSync(join(dir, "at-cap.txt"), source).length).toBe(max);
    await expect(readTextFile(join(dir, "over-cap.txt"), source)).rejects.toMatchObject({ code: "INPUT_INVALID", message: "--tools t.json: larger than 3 MiB, the most cachet reads for this input" });
    expect(() => readTextFileSync(join(dir, "over-cap.txt"), source)).toThrow("--tools t.json: larger than 3 MiB, the most cachet reads for this input");
    expect(CONFIG_INPUT_MAX_BYTES).toBe(64 * 1024 * 1024);
  });

  test("devices: /dev/zero stops at the cap, /dev/urandom at its first invalid byte (neither is read to the end)", async () => {
    await expect(readTextFile("/dev/zero", { label: "--schema /dev/zero", maxBytes: 2 * 1024 * 1024 })).rejects.toMatchObject({ message: "--schema /dev/zero: larger than 2 MiB, the most cachet reads for this input" });
    expect(() => readTextFileSync("/dev/zero", { label: "scenario /dev/zero" })).toThrow("scenario /dev/zero: larger than 64 MiB, the most cachet reads for this input");
    await expect(readTextFile("/dev/urandom", { label: "--tools /dev/urandom" })).rejects.toMatchObject({ message: expect.stringMatching(/^--tools \/dev\/urandom is not valid UTF-8: invalid byte 0x[0-9a-f]{2} at offset \d+$/) });
  });
});
