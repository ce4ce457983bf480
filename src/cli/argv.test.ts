import { describe, expect, test } from "bun:test";
import type { ArgsDef } from "citty";
import type { CachetError } from "../errors.ts";
import { commandArgs, flagValues, lastFlag, parseArgv } from "./argv.ts";

const defs = {
  prompt: { type: "positional", required: false },
  model: { type: "string", alias: "m" },
  system: { type: "string", alias: "s" },
  option: { type: "string", alias: "o" },
  continue: { type: "boolean", alias: "c" },
  quiet: { type: "boolean", alias: "q" },
  json: { type: "boolean" },
  fork: { type: "boolean" },
} as const satisfies ArgsDef;

const parse = (...args: string[]) => parseArgv(args, defs, { command: "run", inlineValue: ["fork"], restWords: true });

describe("parseArgv", () => {
  test("words after `--` are words, marked literal, whatever they look like", () => {
    const view = parse("-c", "a", "-", "--", "-o", "x", "--help", "-");
    expect(view.error).toBeUndefined();
    expect(view.flags.map((f) => [f.name, f.value])).toEqual([["continue", true]]);
    expect(view.words.map((w) => [w.text, w.literal])).toEqual([["a", false], ["-", false], ["-o", true], ["x", true], ["--help", true], ["-", true]]);
  });

  test("short flags: -mV, -m V and -m=V mean V; groups; repeated -o kept in order", () => {
    const view = parse("-m=a/b", "-cs=foo", "-co", "k=1", "-ok=2", "-o=k=3", "--option", "k=4");
    expect(view.error).toBeUndefined();
    expect(lastFlag(view, "model")?.value).toBe("a/b");
    expect(lastFlag(view, "system")?.value).toBe("foo");
    expect(flagValues(view, "option")).toEqual(["k=1", "k=2", "k=3", "k=4"]);
    expect(parse("-mopenai/gpt-5").flags).toEqual([{ name: "model", value: "openai/gpt-5", index: 0 }]);
  });

  test("a boolean letter given =VALUE is an error, not a group", () => {
    const view = parse("-c=false", "x");
    expect(view.error?.message).toBe("flag -c takes no value (-c=false)");
    expect(lastFlag(view, "system")).toBeUndefined();
    expect(parse("-qc=1").error?.message).toBe("flag -c takes no value (-qc=1)");
  });

  test("booleans: last wins; --NAME=true|false; --no-NAME; anything else is an error", () => {
    expect(lastFlag(parse("-q", "--no-quiet"), "quiet")?.value).toBe(false);
    expect(lastFlag(parse("--quiet=true"), "quiet")?.value).toBe(true);
    expect(lastFlag(parse("--json", "--json=false"), "json")?.value).toBe(false);
    expect(parse("--json=yes").error?.message).toBe("flag --json=yes: --json takes no value");
    expect(lastFlag(parse("--fork=a", "--fork=b"), "fork")?.value).toBe("b");
    expect(lastFlag(parse("-h"), "help")?.value).toBe(true);
  });

  test("a missing value and an unknown flag are errors naming the flag", () => {
    expect(parse("--model").error?.message).toBe("flag --model needs a value");
    expect(parse("--model", "--json").error?.message).toBe("flag --model needs a value");
    expect(parse("-s=").error?.message).toBe("flag -s needs a value");
    expect(lastFlag(parse("-m", "-"), "model")?.value).toBe("-");
    expect(parse("what", "is", "-1").error?.message).toBe("unknown flag -1 for `cachet run`");
    expect(parse("--modle", "x").error?.code).toBe("UNKNOWN_FLAG");
  });

  test("commandArgs: each flag's last value or its default, --fork=ID true, positionals from the words, _ every word", () => {
    const view = parse("-cq", "--no-json", "-m", "a/b", "-m", "c/d", "--fork=x", "-o", "k=1", "hi", "--", "-o", "-");
    const withDefault = { ...defs, stream: { type: "boolean", default: true } } as const satisfies ArgsDef;
    expect({ ...commandArgs(view, withDefault, "run") } as Record<string, unknown>).toEqual({
      _: ["hi", "-o", "-"],
      prompt: "hi",
      model: "c/d",
      system: undefined,
      option: "k=1",
      continue: true,
      quiet: true,
      json: false,
      fork: true,
      stream: true,
    });
    expect(commandArgs(parse("--no-quiet", "--quiet"), defs, "run").quiet).toBe(true);
  });

  test("commandArgs refuses a missing required positional or flag and an enum value outside its options", () => {
    const defs2 = {
      file: { type: "positional", required: true },
      provider: { type: "string", required: true },
      cache: { type: "enum", options: ["auto", "off"] },
    } as const satisfies ArgsDef;
    const args = (...words: string[]) => commandArgs(parseArgv(words, defs2, { command: "probe" }), defs2, "probe");
    const error = (...words: string[]) => {
      try {
        args(...words);
      } catch (e) {
        return e as CachetError;
      }
      throw new Error("no error");
    };
    expect(args("f", "--provider=p", "--cache", "off") as Record<string, unknown>).toMatchObject({ file: "f", provider: "p", cache: "off" });
    expect([error("--provider=p").message, error("--provider=p").code, error("--provider=p").hint]).toEqual([
      "cachet probe needs FILE",
      "BAD_FLAG",
      "run `cachet probe --help` for the flags and their values",
    ]);
    expect(error("f").message).toBe("cachet probe needs --provider");
    expect(error("f", "--provider=p", "--cache=on").message).toBe("--cache on: expected one of auto, off");
  });
});

describe("declared positionals", () => {
  const one = { session: { type: "positional", required: false }, json: { type: "boolean" } } as const satisfies ArgsDef;
  test("a word past them, before or after `--`, is EXTRA_WORD naming it; within them is fine", () => {
    expect(parseArgv(["a"], one, { command: "cost" }).error).toBeUndefined();
    expect(parseArgv(["a", "--json", "b"], one, { command: "cost" }).error?.message).toBe('cachet cost takes at most one word; "b" is one too many');
    expect(parseArgv(["--", "a", "-b"], one, { command: "cost" }).error?.code).toBe("EXTRA_WORD");
    const none = parseArgv(["--", "review"], { session: { type: "string" } }, { command: "compact" }).error;
    expect([none?.message, none?.hint]).toEqual(['cachet compact takes no word "review"', "to name a session use --session review"]);
  });
});

describe("a value that starts with -", () => {
  test("reads as a flag; the hint gives the = form unless the word is one of the command's flags", () => {
    const dash = parse("-s", "-be terse", "hi").error;
    expect([dash?.message, dash?.hint]).toEqual(['flag -s needs a value ("-be terse" starts with - so it reads as a flag)', "for a value that starts with -, write it with =: --system='-be terse'"]);
    expect(parse("--system=-be terse", "hi").error).toBeUndefined();
    expect(parse("-s", "-q", "hi").error?.hint).toBe("run `cachet run --help` for what it takes");
    expect(parse("--model", "--no-json").error?.message).toBe("flag --model needs a value");
  });
});
