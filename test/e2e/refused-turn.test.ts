/**
 * A turn refused before anything is sent leaves the session as it was, through
 * the binary: a compaction and a new prefix version made for a request the
 * window check then refuses (exit 3) are not stored, nor a model switch whose settings the new model
 * refuses (exit 2); neither is announced, and the next turn reads the cache
 * the earlier requests wrote.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";

afterAll(cleanHomes);

const WORDS = ["harbor", "lantern", "quartz", "meadow", "signal", "copper", "falcon", "tundra"];
const notes = (i: number) => `Notes ${i}: ` + Array.from({ length: 1500 }, (_, k) => WORDS[(k * 5 + i) % WORDS.length]).join(" ");

/** What a refused turn must leave as it was: the export and `sessions show`. */
async function stored(home: string, session: string): Promise<{ exported: string; shown: string }> {
  return { exported: (await cachet(["export", session], { home })).stdout, shown: (await cachet(["sessions", "show", session], { home })).stdout };
}

test("a compaction and a prefix change made for a request the window then refuses (exit 3) are not stored or announced; the next turn reads the cache", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 6000\n");
  expect((await cachet(["--emulate", "--session", "w", "-m", "openai/gpt-3.5-turbo", notes(1)], { home, timeoutMs: 60_000 })).code).toBe(0);
  expect((await cachet(["--emulate", "--session", "w", notes(2)], { home, timeoutMs: 60_000 })).code).toBe(0);
  const before = await stored(home, "w");

  // About 27k tokens: above the trigger (a compaction is due) and above gpt-3.5-turbo's 16,385-token window even compacted.
  const appendix = "Appendix: " + Array.from({ length: 12_000 }, (_, k) => `${WORDS[(k * 3) % WORDS.length]}${k % 97}`).join(" ");
  // With a new system prompt too: the prefix version it would start is not stored either.
  const refused = await cachet(["--emulate", "--json", "--session", "w", "-s", "You summarise notes.", "more"], { home, stdin: appendix, timeoutMs: 60_000 });
  expect(refused.code).toBe(3);
  const lines = events(refused.stdout);
  expect(lines.map((e) => e.type)).toEqual(["session", "error"]);
  expect(ofType(lines, "error")[0]!.code).toBe("CONTEXT_TOO_LONG");
  expect(refused.stderr).not.toContain("compacted");
  expect(refused.stderr).not.toContain("stable prefix changed");
  expect(await stored(home, "w")).toEqual(before);

  const next = await cachet(["--emulate", "--json", "--session", "w", "which notes mention the falcon?"], { home, timeoutMs: 60_000 });
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" });
  expect(ofType(events(next.stdout), "compaction")).toEqual([]);
  // Both earlier turns (about 3,700 tokens) were cached by the second request and are read back.
  expect(ofType(events(next.stdout), "usage")[0]!.cacheRead as number).toBeGreaterThan(3_000);
});

test("a model switch refused for the settings it keeps (exit 2) is not stored or announced; --json prints the error first; later turns run on the old model", async () => {
  const home = freshHome();
  const first = await cachet(["--emulate", "--session", "sw", "--max-tokens", "8000", notes(1)], { home });
  expect(first.code).toBe(0);
  const before = await stored(home, "sw");

  const refused = await cachet(["--emulate", "--json", "--session", "sw", "-m", "anthropic/claude-3-haiku-20240307", "b"], { home });
  expect(refused.code).toBe(2);
  expect(events(refused.stdout).map((e) => [e.type, e.code])).toEqual([["error", "BAD_FLAG"]]);
  expect(events(refused.stdout)[0]!.message).toBe("--max-tokens 8000 is above anthropic/claude-3-haiku-20240307's output limit of 4,096 tokens");
  expect(refused.stderr).not.toContain("for this session from now on");
  expect(await stored(home, "sw")).toEqual(before);

  const next = await cachet(["--emulate", "--json", "--session", "sw", "c"], { home });
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" });
  const lines = events(next.stdout);
  expect(ofType(lines, "session")[0]!.model).toBe("anthropic/claude-sonnet-4-6");
  expect(ofType(lines, "usage")[0]!.cacheRead as number).toBeGreaterThan(1_000);
});
