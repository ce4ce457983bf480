import { expect, test } from "bun:test";
import { type ArgsDef, parseArgs as cittyParseArgs } from "citty";
import { assertKnownFlags } from "./_args.ts";
import { parseArgs } from "./parse-args.ts";
import run from "./run.ts";

const defs = run.args as ArgsDef;

/** Command lines of every shape the run command's flags take, some of which assertKnownFlags refuses. */
const LINES: string[][] = [
  [],
  ["hello"],
  ["hello", "world"],
  ["-"],
  ["a", "-", "b"],
  ["--no-stream", "-m", "openai/gpt-5", "--base-url", "http://127.0.0.1:1/v1", "hello"],
  ["-m", "x/y", "-s", "be brief", "--json", "hi"],
  ["--model=x/y", "--system=@f", "hi"],
  ["-mx/y", "hi"],
  ["-qc", "hi"],
  ["-cq"],
  ["-cm", "x/y", "hi"],
  ["-qmx/y", "hi"],
  ["-c=x", "hi"],
  ["--m", "x/y", "hi"],
  ["-m", "a/b", "--model", "c/d", "hi"],
  ["-m", "a/b", "--m", "c/d", "hi"],
  ["--model", "a/b", "-m", "c/d"],
  ["--stream", "hi"],
  ["--stream=false", "hi"],
  ["--stream=no", "hi"],
  ["--json=false", "--quiet=true", "hi"],
  ["--no-compact", "--no-store", "hi"],
  ["--no-quiet", "-q", "hi"],
  ["-q", "--no-q", "hi"],
  ["--no-continue", "-c", "x"],
  ["--no-stream=x", "hi"],
  ["--cache", "off", "--cache-ttl", "1h", "hi"],
  ["--cache=auto", "--stdin=skip", "--stdin-encoding", "replace", "hi"],
  ["--cache", "sometimes", "hi"],
  ["--stdin", "always"],
  ["--cache-ttl=2h", "hi"],
  ["--session", "work", "-c", "--fork", "hi"],
  ["--fork=s_abc", "hi"],
  ["--tool-result", "call_1=@out.txt", "--tool-result", "call_2=@b.txt"],
  ["--tool-result", "-"],
  ["-o", "top_p=0.9", "-o", "reasoning_effort=low", "--option=seed=1", "hi"],
  ["--max-tokens", "100", "--temperature", "0.5", "--retries", "0", "hi"],
  ["--max-tokens", "-1", "hi"],
  ["--temperature", "-0.5", "hi"],
  ["--idle-timeout", "0", "--thinking-timeout=1.5", "--hook-timeout", "3", "hi"],
  ["--max-cost", "0.01", "--allow-unpriced", "hi"],
  ["--emulate", "--verbose", "--debug", "hi"],
  ["--drop-pending", "--overlay", "@plan.md", "--tools", "t.json", "--schema", "{}", "hi"],
  ["--", "-c", "--json", "explain"],
  ["hi", "--", "--", "-m"],
  ["-m", "--", "hi"],
  ["--model", "--json"],
  ["--model"],
  ["--model="],
  ["--json", "--", "--no-stream"],
  ["--=x", "hi"],
  ["--maxTokens", "3"],
  ["--unknown", "hi"],
  ["-x", "hi"],
  ["", "hi"],
  ["--__proto__", "hi"],
];

function plain(result: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { _: [...(result._ as string[])] };
  for (const name of Object.keys(defs)) out[name] = result[name];
  for (const alias of ["m", "s", "c", "o", "q"]) out[alias] = result[alias];
  return out;
}

test("the run command's flags parse as citty parses them, on every command line the flag check lets through", () => {
  let compared = 0;
  for (const line of LINES) {
    try {
      assertKnownFlags(line, defs, "run");
    } catch {
      continue;
    }
    compared++;
    let expected: unknown;
    try {
      expected = plain(cittyParseArgs(line, defs));
    } catch (error) {
      expected = { error: (error as Error).message.replace(/\x1b\[[0-9;]*m/g, "") };
    }
    let actual: unknown;
    try {
      actual = plain(parseArgs(line, defs, "run `cachet --help`"));
    } catch (error) {
      actual = { error: (error as Error).message };
    }
    expect({ line, parsed: actual }).toEqual({ line, parsed: expected });
  }
  // Most of the lines above are valid; the refused ones check nothing here.
  expect(compared).toBeGreaterThanOrEqual(45);
});

test("an enum value the flag does not list is a usage error with citty's words and the given hint", () => {
  expect(() => parseArgs(["--cache", "sometimes", "hi"], defs, "run `cachet --help` for the flags and their values")).toThrow(
    expect.objectContaining({ code: "BAD_FLAG", exitCode: 2, message: "Invalid value for argument: --cache (sometimes). Expected one of: auto, off.", hint: "run `cachet --help` for the flags and their values" }),
  );
});
