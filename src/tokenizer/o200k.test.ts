import { expect, test } from "bun:test";
import { loadO200k, unloadO200k } from "./o200k.ts";

test("a long run of one letter is counted in slices with the exact figure (measured before slicing: 40,000 'a' = 5,000 tokens)", async () => {
  const count = await loadO200k();
  expect(count("a".repeat(40_000))).toBe(5_000);
  expect(count(`start ${"a".repeat(40_000)} end`)).toBe(5_000 + 3);
});

test("100 MB of one letter is counted (it never finished as one BPE piece)", async () => {
  const count = await loadO200k();
  expect(count("a".repeat(100_000_000))).toBe(12_500_000);
});

test("text without long letter runs is counted whole", async () => {
  const count = await loadO200k();
  const line = "Here is the plan: 1) read the failing test, déjà vu.\n";
  // A newline before a letter is a piece boundary, so the lines add up.
  expect(count(line.repeat(1_000))).toBe(count(line) * 1_000);
});

test("countOrEstimate: exact up to EXACT_CHARS; a longer text of one kind is estimated within 2% of its exact count", async () => {
  const { countOrEstimate, EXACT_CHARS } = await import("./o200k.ts");
  const count = await loadO200k();
  const small = "Here is the plan: 1) read the failing test, déjà vu.\n".repeat(1_000);
  expect(countOrEstimate(small, count)).toBe(count(small));
  const words = ["cache", "prefix", "request", "tokens", "über", "ledger", "的", "breakpoint", "42", "—"];
  let seed = 7;
  let text = "";
  while (text.length < EXACT_CHARS * 3) {
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    text += `${words[seed % words.length]}${seed % 11 === 0 ? ".\n" : " "}`;
  }
  const exact = count(text);
  expect(Math.abs(countOrEstimate(text, count) - exact) / exact).toBeLessThan(0.02);
});

test("unloadO200k: the next load makes a new counter, which counts as the one let go of", async () => {
  const text = "Here is the plan: déjà vu, 缓存 and 😀.\n".repeat(100);
  const before = await loadO200k();
  expect(await loadO200k()).toBe(before);
  unloadO200k();
  const after = await loadO200k();
  expect(after).not.toBe(before);
  expect(after(text)).toBe(before(text));
});
