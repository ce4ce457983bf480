import { describe, expect, test } from "bun:test";
import { prng } from "../../test/prng.ts";
import { commands } from "./index.ts";
import { editDistance, nearName, nearestName } from "./near-name.ts";

const names = [...Object.keys(commands), "help", "version"];

/** The guard's rule written plainly (the full table for every name), as the typo guard applied it before the shortcuts. */
function reference(word: string): string | undefined {
  const distance = (a: string, b: string): number => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
    for (let i = 1; i <= a.length; i++) {
      for (let j = 1; j <= b.length; j++) {
        d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
      }
    }
    return d[a.length]![b.length]!;
  };
  return names.find((name) => distance(name, word) <= (name.length > 5 ? 2 : 1));
}

describe("nearName", () => {
  test("known verdicts: typos, swaps, exact names and ordinary words", () => {
    expect(nearName("hepl", names)).toBe("help");
    expect(nearName("halp", names)).toBe("help");
    expect(nearName("sesions", names)).toBe("sessions");
    expect(nearName("verison", names)).toBe("version");
    expect(nearName("stats", names)).toBe("stats");
    expect(nearName("hello", names)).toBeUndefined();
    expect(nearName("summarize", names)).toBeUndefined();
    expect([editDistance("help", "hepl"), editDistance("abc", ""), editDistance("kitten", "sitting")]).toEqual([1, 3, 3]);
  });

  test("the same verdict as the full distance table for every name's one- and two-edit neighbours and random words", () => {
    const random = prng(18);
    const letter = () => String.fromCharCode(97 + Math.floor(random() * 26));
    const edit = (word: string): string => {
      const at = Math.floor(random() * (word.length + 1));
      const kind = Math.floor(random() * 4);
      if (kind === 0) return word.slice(0, at) + letter() + word.slice(at);
      if (kind === 1 && word.length > 1) return word.slice(0, at) + word.slice(at + 1);
      if (kind === 2 && at < word.length) return word.slice(0, at) + letter() + word.slice(at + 1);
      if (at + 1 < word.length) return word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2);
      return word + letter();
    };
    const words = new Set<string>();
    for (const name of names) for (let i = 0; i < 60; i++) words.add(i % 2 === 0 ? edit(name) : edit(edit(name)));
    for (let i = 0; i < 500; i++) words.add(Array.from({ length: 1 + Math.floor(random() * 10) }, letter).join(""));
    let near = 0;
    for (const word of words) {
      const expected = reference(word);
      if (expected !== undefined) near++;
      expect([word, nearName(word, names)]).toEqual([word, expected]);
    }
    // The sample reaches both verdicts often.
    expect(near).toBeGreaterThan(500);
    expect(words.size - near).toBeGreaterThan(500);
  });
});

test("nearestName: the closest of any characters within a typo's reach, the first on a tie, else none", () => {
  const ids = ["claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-6"];
  // One edit from 4-6, two from 4-5: the closer one, not the first in reach.
  expect(nearestName("claude-sonet-4-6", ids)).toBe("claude-sonnet-4-6");
  expect(nearestName("claude-sonnet-4-7", ids)).toBe("claude-sonnet-4-5");
  expect(nearestName("claude-haiku-4-5", ids)).toBeUndefined();
  expect(nearestName("gpt-5", ["gpt-4", "gpt-5.1"])).toBe("gpt-4");
  expect(nearestName("gpt-xy5", ["gpt-4"])).toBeUndefined();
});
