/**
 * The run command's command line, through the binary: words after `--` are
 * prompt text for every reader (log level, --json, --help, -o, --fork,
 * --tool-result, `-`); short flags take `-X=VALUE` as VALUE; `-co` groups;
 * `--fork NAME` naming a stored session (or shaped like an id) is refused; repeated flags are
 * last-wins; messages and help name `cachet run --help`.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";
import { exportSession } from "./session-kit.ts";

afterAll(cleanHomes);

/** The text of the last user message of a session (default: the latest). */
async function lastPrompt(home: string, session?: string): Promise<string> {
  const { messages } = await exportSession(home, session);
  const user = messages.filter((m) => m.role === "user");
  return (user[user.length - 1]!.content as { text: string }[])[0]!.text;
}

/** How many sessions the store holds. */
async function sessionCount(home: string): Promise<number> {
  const r = await cachet(["sessions", "--json"], { home });
  expect(r.code).toBe(0);
  return r.stdout.split("\n").filter(Boolean).length;
}

test("words after `--` are prompt text for every reader: -o, --fork=, --tool-result, --help, -h, --quiet, --debug, --json", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-o", "top_k=2", "x"], { home })).code).toBe(0);
  // No sticky change: -o after `--` is text, not top_k=1.
  const o = await cachet(["--emulate", "-c", "--", "what", "does", "-o", "top_k=1", "do"], { home });
  expect([o.code, o.stderr]).toEqual([0, ""]);
  expect(await lastPrompt(home)).toBe("what does -o top_k=1 do");

  const json = await cachet(["--emulate", "--json", "--", "explain", "the", "-o", "flag"], { home });
  expect(json.code).toBe(0);
  expect(ofType(events(json.stdout), "done")).toHaveLength(1);
  expect(await lastPrompt(home)).toBe("explain the -o flag");

  for (const words of [["what", "is", "--fork=abc"], ["what", "is", "--tool-result", "foo"], ["what", "does", "--help", "do"], ["what", "does", "-h", "do"]]) {
    const r = await cachet(["--emulate", "--", ...words], { home });
    expect([r.code, r.stderr, r.stdout.includes("USAGE")]).toEqual([0, "", false]);
    expect(await lastPrompt(home)).toBe(words.join(" "));
  }

  const quiet = freshHome();
  expect((await cachet(["--emulate", "--max-tokens", "500", "x"], { home: quiet })).code).toBe(0);
  const warned = await cachet(["--emulate", "-c", "--max-tokens", "600", "--", "what", "does", "--quiet", "do"], { home: quiet });
  expect(warned.code).toBe(0);
  expect(warned.stderr).toBe("[warn] --max-tokens 500 → 600 for this session from now on\n");

  // --debug after `--` adds no stack to an error.
  const failed = await cachet(["--emulate", "--max-tokens", "abc", "--", "a", "--debug", "b"], { home });
  expect(failed.code).toBe(2);
  expect(failed.stderr).toBe("cachet: --max-tokens abc: expected an integer ≥ 1 in decimal digits\n  hint: run `cachet run --help` for the flags and their values\n");
});

test("`-` after `--` is prompt text, not stdin", async () => {
  const home = freshHome();
  const r = await cachet(["--emulate", "--", "a", "-", "b"], { home, stdin: "DATA" });
  expect(r.code).toBe(0);
  // stdin piped without a `-` for it comes first; the `-` stays in the words.
  expect(await lastPrompt(home)).toBe("DATA\n\na - b");
  const before = await cachet(["--emulate", "a", "-", "--", "b", "-"], { home, stdin: "DATA" });
  expect(before.code).toBe(0);
  expect(await lastPrompt(home)).toBe("a\n\nDATA\n\nb -");
});

test("a short flag takes -X=VALUE as VALUE; a boolean letter with =VALUE is refused (exit 2), never a group", async () => {
  const home = freshHome();
  const file = join(home, "r1.txt");
  writeFileSync(file, "SYSTEM FROM FILE");
  const systemOf = async () => (await exportSession(home)).lines.filter((l) => l.type === "prefix").at(-1)!.prefix.prefix.system.map((s: { text: string }) => s.text);
  expect((await cachet(["--emulate", `-s=@${file}`, "x"], { home })).code).toBe(0);
  expect(await systemOf()).toEqual(["SYSTEM FROM FILE"]);
  expect((await cachet(["--emulate", "-cs=foo", "y"], { home })).code).toBe(0);
  expect(await systemOf()).toEqual(["foo"]);
  expect(await sessionCount(home)).toBe(1);

  const refused = await cachet(["--emulate", "-c=false", "x"], { home });
  expect(refused.code).toBe(2);
  expect(refused.stderr.split("\n")[0]).toBe("cachet: flag -c takes no value (-c=false)");
  expect(await lastPrompt(home)).toBe("y");

  for (const model of [["-m=openai/gpt-5"], ["-mopenai/gpt-5"], ["-m", "openai/gpt-5"]]) {
    const r = await cachet(["--emulate", ...model, "hi"], { home });
    expect(r.code).toBe(0);
    expect((await exportSession(home)).requests.at(-1)!.model).toBe("gpt-5");
  }
  const ms = await cachet(["--emulate", "-ms", "z"], { home });
  expect(ms.code).toBe(2);
  expect(ms.stderr.split("\n")[0]).toBe('cachet: model "s" is not of the form provider/model');
});

test("-o in a group (-co), glued (-otop_k=4) or with = (-o=top_k=5) sets the option", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-o", "top_k=2", "x"], { home })).code).toBe(0);
  const runs = [
    [["-co", "top_k=3"], "-o top_k 2 → 3"],
    [["-c", "-otop_k=4"], "-o top_k 3 → 4"],
    [["-c", "-o=top_k=5"], "-o top_k 4 → 5"],
    [["-c", "--option", "top_k=6", "-o", "top_k=7"], "-o top_k 5 → 7"],
  ] as const;
  for (const [flags, change] of runs) {
    const r = await cachet(["--emulate", ...flags, "next"], { home });
    expect([r.code, r.stderr]).toEqual([0, `[warn] ${change} for this session from now on\n`]);
  }
  expect(await sessionCount(home)).toBe(1);
});

test("--fork NAME naming a stored session is refused with a hint for --fork=NAME; repeated --fork= is last-wins", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "review", "start"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "--session", "other", "other"], { home })).code).toBe(0);
  const refused = await cachet(["--emulate", "--fork", "review", "fork it"], { home });
  expect(refused.code).toBe(2);
  expect(refused.stderr).toBe(
    'cachet: --fork review: "review" names a stored session, but --fork takes it only as --fork=review\n' +
      '  hint: write --fork=review to fork it; to fork the latest session and send "review" as prompt text, put the prompt after `--`\n',
  );
  expect(await sessionCount(home)).toBe(2);

  const last = await cachet(["--emulate", "--json", "--fork=other", "--fork=review", "fork it"], { home });
  expect(last.code).toBe(0);
  const forked = ofType(events(last.stdout), "done")[0]!.session as string;
  const { session } = await exportSession(home, forked);
  expect(session.parentId).toBe((await exportSession(home, "review")).session.id);
  expect(await lastPrompt(home, forked)).toBe("fork it");

  // A word that names no session is prompt text, as README says; after `--` too.
  const plain = await cachet(["--emulate", "--json", "--fork", "--", "review", "again"], { home });
  expect(plain.code).toBe(0);
  expect(await lastPrompt(home, ofType(events(plain.stdout), "done")[0]!.session as string)).toBe("review again");
});

test("--fork's guard reads the first prompt word after it past other flags, and refuses an id-shaped word that names no session", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "review", "start"], { home })).code).toBe(0);
  const flagBetween = await cachet(["--emulate", "--fork", "-q", "review"], { home });
  expect(flagBetween.code).toBe(2);
  expect(flagBetween.stderr.split("\n")[0]).toBe('cachet: --fork review: "review" names a stored session, but --fork takes it only as --fork=review');
  const idShaped = await cachet(["--emulate", "--fork", "s_zzzzzzzzzzzz", "go"], { home });
  expect(idShaped.code).toBe(2);
  expect(idShaped.stderr).toBe(
    'cachet: --fork s_zzzzzzzzzzzz: no session "s_zzzzzzzzzzzz"\n' +
      '  hint: check the id with `cachet sessions`; to fork the latest session and send "s_zzzzzzzzzzzz" as prompt text, put the prompt after `--`\n',
  );
  expect(await sessionCount(home)).toBe(1);
  const plain = await cachet(["--emulate", "--json", "--fork", "-q", "hello", "review"], { home });
  expect(plain.code).toBe(0);
  expect(await lastPrompt(home, ofType(events(plain.stdout), "done")[0]!.session as string)).toBe("hello review");
});

test("quiet and json are the flags' last values: -cq, --quiet=true, -q --no-quiet, --json=true, --json --no-json", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--max-tokens", "500", "x"], { home })).code).toBe(0);
  for (const [flags, maxTokens, stderr] of [
    [["-cq"], "600", ""],
    [["--quiet=true", "-c"], "700", ""],
    [["-q", "--no-quiet", "-c"], "800", "[warn] --max-tokens 700 → 800 for this session from now on\n"],
  ] as const) {
    const r = await cachet(["--emulate", ...flags, "--max-tokens", maxTokens, "y"], { home });
    expect([r.code, r.stderr]).toEqual([0, stderr]);
  }
  const json = await cachet(["--emulate", "--json=true", "--max-tokens", "abc"], { home });
  expect(json.code).toBe(2);
  expect(events(json.stdout)).toEqual([{ type: "error", code: "BAD_FLAG", message: "--max-tokens abc: expected an integer ≥ 1 in decimal digits", hint: "run `cachet run --help` for the flags and their values", incomplete: false }]);
  const off = await cachet(["--emulate", "--json", "--no-json", "--max-tokens", "abc"], { home });
  expect([off.code, off.stdout]).toEqual([2, ""]);
});

test("usage errors of a run name `cachet run --help`; an unknown -1 hints at `--`", async () => {
  const unknown = await cachet(["--emulate", "--frobnicate", "hi"]);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr.split("\n")[1]).toBe('  hint: run `cachet run --help` for the flags it accepts; to send "--frobnicate" as prompt text, put the prompt words after `--`');
  const number = await cachet(["--emulate", "what", "is", "-1", "plus", "2"]);
  expect(number.code).toBe(2);
  expect(number.stderr).toBe('cachet: unknown flag -1 for `cachet run`\n  hint: run `cachet run --help` for the flags it accepts; to send "-1" as prompt text, put the prompt words after `--`\n');
  const missing = await cachet(["--emulate", "--model", "--json", "hi"]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toBe("cachet: flag --model needs a value\n  hint: run `cachet run --help` for what it takes\n");
  const badEnum = await cachet(["--emulate", "--cache", "sometimes", "hi"]);
  expect(badEnum.code).toBe(2);
  expect(badEnum.stderr.split("\n")[1]).toBe("  hint: run `cachet run --help` for the flags and their values");
});

test("`cachet help nosuch` is refused (exit 2); help lines carry no trailing spaces", async () => {
  const nosuch = await cachet(["help", "nosuch"]);
  expect([nosuch.code, nosuch.stdout]).toEqual([2, ""]);
  expect(nosuch.stderr.split("\n")[0]).toBe('cachet: unknown command "nosuch"');
  for (const args of [["run", "--help"], ["--emulate", "--help"], ["help", "run"], ["sessions", "--help"]]) {
    const r = await cachet(args);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("USAGE");
    expect(r.stdout.split("\n").filter((line) => / $/.test(line))).toEqual([]);
  }
});

test("every command reads the same view: a word after `--` is an argument, -q=1 is refused, probe keeps each -m", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "x"], { home })).code).toBe(0);
  const weird = await cachet(["export", "--", "--weird"], { home });
  expect(weird.code).toBe(2);
  expect(weird.stderr.split("\n")[0]).toBe('cachet: no session "--weird"');
  const quiet = await cachet(["sessions", "-q=1"], { home });
  expect(quiet.code).toBe(2);
  expect(quiet.stderr.split("\n")[0]).toBe("cachet: flag -q takes no value (-q=1)");
  const unknown = await cachet(["sessions", "--frob"], { home });
  expect(unknown.stderr).toBe("cachet: unknown flag --frob for `cachet sessions`\n  hint: run `cachet sessions --help` for the flags it accepts\n");

  const scenario = join(home, "s.json");
  writeFileSync(scenario, JSON.stringify({ steps: [{ user: "hi" }] }));
  const probe = await cachet(["probe", scenario, "--emulate", "--json", "-m=anthropic/claude-sonnet-4-6", "-mopenai/gpt-5", "--model", "anthropic/claude-sonnet-4-6"], { home });
  expect(probe.code).toBe(0);
  expect((JSON.parse(probe.stdout).variants as { model: string }[]).map((v) => v.model)).toEqual(["anthropic/claude-sonnet-4-6", "openai/gpt-5"]);
});

test("a flag value that starts with - reads as a flag; the hint gives the = form, which takes it", async () => {
  const home = freshHome();
  const cases: [string[], string][] = [
    [["-s", "-be terse"], "cachet: flag -s needs a value (\"-be terse\" starts with - so it reads as a flag)\n  hint: for a value that starts with -, write it with =: --system='-be terse'\n"],
    [["--overlay", "-urgent"], 'cachet: flag --overlay needs a value ("-urgent" starts with - so it reads as a flag)\n  hint: for a value that starts with -, write it with =: --overlay=-urgent\n'],
    [["-o", "-x=1"], 'cachet: flag -o needs a value ("-x=1" starts with - so it reads as a flag)\n  hint: for a value that starts with -, write it with =: --option=-x=1\n'],
  ];
  for (const [flag, stderr] of cases) {
    const r = await cachet(["--emulate", ...flag, "hi"], { home });
    expect({ flag, code: r.code, stderr: r.stderr }).toEqual({ flag, code: 2, stderr });
  }
  expect(await sessionCount(home)).toBe(0);
  const taken = await cachet(["--emulate", "--system=-be terse", "hi"], { home });
  expect(taken.code).toBe(0);
  const { lines } = await exportSession(home);
  expect(JSON.stringify(lines)).toContain('"-be terse"');
});
