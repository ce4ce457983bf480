import { expect, test } from "bun:test";
import type { RequestContext } from "../context/types.ts";
import type { ChainLink } from "../session/types.ts";
import { modelLimits } from "../meter/model-limits.ts";
import { statePaths } from "../paths.ts";
import { checkContextWindow } from "./context-window.ts";

/** The catalog in force, read as a runtime reads it. */
const entryOf = (catalogRef: string) => modelLimits(catalogRef, statePaths());

/** openai/gpt-3.5-turbo's window in the embedded catalog, tokens. */
const WINDOW = 16_385;

function context(text: string): RequestContext {
  return {
    model: "gpt-3.5-turbo",
    provider: "openai",
    prefix: { system: [], tools: [], fingerprint: "0" as never },
    summary: [],
    messages: [{ id: "m1", role: "user", content: [{ type: "text", text }] } as never],
    generation: { stream: false, providerOptions: {} },
    cache: {} as never,
  };
}

/** The session of a request that is not a fork's first. */
const SESSION = () => ({ id: "s_test", forkOf: null });

const chainOf = (tokens: number) => (): Promise<ChainLink[]> => Promise.resolve([{ nodeId: "m1", kind: "message", content: "0", prefix: "0", tokens } as never]);

test("a prompt with fewer UTF-16 characters than the window but more tokens is refused: the bound is UTF-8 bytes", async () => {
  // 10,000 CJK characters: under the window in characters, 30,000 UTF-8 bytes, and (here) 20,000 tokens.
  const text = "漢".repeat(10_000);
  expect(text.length).toBeLessThan(WINDOW);
  await expect(checkContextWindow(entryOf, "openai/gpt-3.5-turbo", context(text), chainOf(20_000), undefined, SESSION)).rejects.toMatchObject({ code: "CONTEXT_TOO_LONG" });
  await expect(checkContextWindow(entryOf, "openai/gpt-3.5-turbo", context(text), chainOf(10_000), undefined, SESSION)).resolves.toBeUndefined();
});

test("a prompt whose UTF-8 bytes fit the window is let through without asking for the token estimate", async () => {
  let asked = 0;
  const counting = () => {
    asked++;
    return new Promise<ChainLink[]>(() => {});
  };
  await expect(checkContextWindow(entryOf, "openai/gpt-3.5-turbo", context("hello"), counting, 1_000, SESSION)).resolves.toBeUndefined();
  expect(asked).toBe(0);
});

test("the requested output counts against the window", async () => {
  await expect(checkContextWindow(entryOf, "openai/gpt-3.5-turbo", context("x".repeat(10_000)), chainOf(10_000), 7_000, SESSION)).rejects.toMatchObject({ code: "CONTEXT_TOO_LONG" });
});
