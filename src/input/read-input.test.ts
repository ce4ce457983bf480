import { describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONFIG_INPUT_MAX_BYTES, decodeInput, firstInvalidUtf8, readTextFile, readTextFileSync, Utf8Collector } from "./read-input.ts";

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

  test("chunked: the offset is exact when a bad sequence spans chunks of one byte, and the read stops there", () => {
    const collector = new Utf8Collector(stdin, 1 << 20);
    collector.push(bytes("abc"));
    collector.push(bytes([0xe2]));
    collector.push(bytes([0x82]));
    expect(() => collector.push(bytes("("))).toThrow("invalid byte 0xe2 at offset 3");
    const split = new Utf8Collector(stdin, 1 << 20);
    for (const chunk of [bytes("h", [0xe2]), bytes([0x82]), bytes([0xac], "!")]) split.push(chunk);
    expect(split.end()).toBe("h€!");
    const truncated = new Utf8Collector(stdin, 1 << 20);
    truncated.push(bytes("xy", [0xe2, 0x82]));
    expect(() => truncated.end()).toThrow("invalid byte 0xe2 at offset 2");
    const stray = new Utf8Collector(stdin, 1 << 20);
    stray.push(bytes("é"));
    expect(() => stray.push(bytes([0xa9], "x"))).toThrow("invalid byte 0xa9 at offset 2");
  });

  test("chunked, replace: invalid bytes anywhere become U+FFFD as in a whole decode, and the rest is kept", () => {
    const input = bytes("a", [0xff], "é", [0xe2, 0x82], "b😀", [0xf0, 0x9f]);
    const collector = new Utf8Collector({ ...stdin, encoding: "replace" }, 1 << 20);
    for (let i = 0; i < input.length; i += 2) collector.push(input.subarray(i, i + 2));
    expect(collector.bytes).toBe(input.length);
    expect(collector.end()).toBe("a\uFFFDé\uFFFDb😀\uFFFD");
  });

  test("a chunk past the most bytes given is refused, naming the input", () => {
    const collector = new Utf8Collector({ label: "stdin", code: "STDIN_TOO_LARGE" }, 4);
    collector.push(bytes("abcd"));
    expect(() => collector.push(bytes("e"))).toThrow("stdin: larger than 4 bytes, the most cachet can hold");
  });
});

describe("byte-order mark (CASES.md case 43)", () => {
  test("dropped at the start of a whole input and of a stream, even when the mark arrives split", () => {
    expect(decodeInput(bytes(BOM, '{"a":1}'), stdin)).toBe('{"a":1}');
    const collector = new Utf8Collector(stdin, 1 << 20);
    collector.push(bytes([0xef]));
    collector.push(bytes([0xbb, 0xbf], "hi"));
    expect(collector.end()).toBe("hi");
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
