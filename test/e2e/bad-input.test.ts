/**
 * Bad input across commands, through the compiled binary: each is one clear
 * line (plus an optional hint) on stderr, the documented exit code, nothing
 * on stdout, and nothing already stored is lost (a good turn is stored first,
 * and `cachet export` is byte-identical after the bad command).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { buildPrefix } from "../../src/context/prefix.ts";
import { BINARY, cachet, cleanHomes, events, freshHome, homeEnv } from "./harness.ts";
import { exportSession } from "./session-kit.ts";

afterAll(cleanHomes);

let home: string;
let stored: string;

beforeAll(async () => {
  home = freshHome();
  const first = await cachet(["--emulate", "remember the good turn"], { home });
  expect(first.code).toBe(0);
  stored = (await cachet(["export"], { home })).stdout;
  expect(stored.split("\n").filter(Boolean).length).toBeGreaterThanOrEqual(5);
  writeFileSync(join(home, "tools-bad.json"), '[\n  {"name": "x", "parameters": {"type": "object",}}\n]\n');
  writeFileSync(join(home, "tools-name.json"), JSON.stringify([{ name: "bad name!", description: "d", parameters: { type: "object" } }]));
  writeFileSync(join(home, "tools-type.json"), JSON.stringify([{ name: "x", parameters: { type: "strng" } }]));
  writeFileSync(join(home, "tools-object.json"), JSON.stringify({ name: "x" }));
  writeFileSync(join(home, "usage-bad.json"), '{"input_tokens": 10,');
  writeFileSync(join(home, "probe-bad.json"), '{"steps":');
  writeFileSync(join(home, "blank-system.txt"), " \n\t\n");
  symlinkSync("/dev/fd/8", join(home, "fd-8"));
});

/** stderr lines that carry text. */
function textLines(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.trim() !== "");
}

const CASES: { name: string; args: (home: string) => string[]; code: number; line: RegExp }[] = [
  { name: "unknown flag --modle", args: () => ["--emulate", "--modle", "x", "hi"], code: 2, line: /^cachet: unknown flag --modle for `cachet run`$/ },
  { name: "bad enum --cache maybe", args: () => ["--emulate", "--cache", "maybe", "hi"], code: 2, line: /^cachet: .*--cache.*maybe.*auto.*off/ },
  { name: "--max-tokens -5", args: () => ["--emulate", "--max-tokens", "-5", "hi"], code: 2, line: /^cachet: --max-tokens -5: / },
  { name: "-o novalue", args: () => ["--emulate", "-o", "novalue", "hi"], code: 2, line: /^cachet: -o novalue: expected key=value$/ },
  // An option that would replace a part cachet prices as nodes (here the system prompt on the wire) is refused before anything is sent.
  { name: "-o systemInstruction=… (cachet owns the system prompt)", args: () => ["--emulate", "-m", "google/gemini-2.5-flash", "-o", 'systemInstruction={"parts":[{"text":"EVIL"}]}', "hi"], code: 2, line: /^cachet: -o systemInstruction: cachet sets "systemInstruction" itself \(it is part of the session and its cached prefix\)$/ },
  { name: "-o functions=… (legacy tools outside the frozen prefix)", args: () => ["--emulate", "-m", "openai/gpt-4o", "-o", 'functions=[{"name":"f","parameters":{"type":"object"}}]', "hi"], code: 2, line: /^cachet: -o functions: cachet sets "functions" itself \(it is part of the session and its cached prefix\)$/ },
  { name: "-o prompt_cache_key=mine (the session's affinity key)", args: () => ["--emulate", "-m", "openai/gpt-4o", "-o", "prompt_cache_key=mine", "hi"], code: 2, line: /^cachet: -o prompt_cache_key: cachet sets "prompt_cache_key" itself \(it is the session's cache affinity key\)$/ },
  { name: "-o metadata={user_id} (Anthropic's affinity key)", args: () => ["--emulate", "-m", "anthropic/claude-sonnet-4-6", "-o", 'metadata={"user_id":"mine"}', "hi"], code: 2, line: /^cachet: -o metadata: cachet sets "metadata.user_id" itself \(it is the session's cache affinity key\)/ },
  { name: "-o n=3 (cachet answers one choice)", args: () => ["--emulate", "-m", "openai/gpt-4o", "-o", "n=3", "hi"], code: 2, line: /^cachet: -o n: cachet sets "n" itself \(cachet reads and stores one choice per turn\)$/ },
  { name: "--tools missing file", args: (h) => ["--emulate", "--tools", join(h, "nope.json"), "hi"], code: 3, line: /^cachet: --tools .*nope\.json: no such file$/ },
  { name: "--tools malformed JSON", args: (h) => ["--emulate", "--tools", join(h, "tools-bad.json"), "hi"], code: 3, line: /^cachet: \/.*\/tools-bad\.json:2:49: invalid JSON \(Property name must be a string literal\)$/ },
  { name: "--tools invalid tool name", args: (h) => ["--emulate", "--tools", join(h, "tools-name.json"), "hi"], code: 3, line: /tools-name\.json: tool definition 0\.name: must match/ },
  { name: "--tools parameters not an object schema", args: (h) => ["--emulate", "--tools", join(h, "tools-type.json"), "hi"], code: 3, line: /tools-type\.json: tool "x": parameters\.type is "strng"; a tool's parameters must be an object schema$/ },
  { name: "--tools an object, not an array", args: (h) => ["--emulate", "--tools", join(h, "tools-object.json"), "hi"], code: 3, line: /tools-object\.json: tool definitions: Invalid type: Expected Array but received Object$/ },
  // A file a flag names that cannot be read is bad input (exit 3) for every flag, whatever the reason.
  { name: "--tools a directory", args: (h) => ["--emulate", "--tools", h, "hi"], code: 3, line: /^cachet: --tools .*: is a directory, not a file$/ },
  { name: "-s @a directory", args: (h) => ["--emulate", "-s", `@${h}`, "hi"], code: 3, line: /^cachet: --system @.*: is a directory, not a file$/ },
  { name: "--overlay @a directory", args: (h) => ["--emulate", "--overlay", `@${h}`, "hi"], code: 3, line: /^cachet: --overlay @.*: is a directory, not a file$/ },
  { name: "--schema a directory", args: (h) => ["--emulate", "--schema", h, "hi"], code: 3, line: /^cachet: schema file .*: is a directory, not a file$/ },
  { name: "price --usage a directory", args: (h) => ["price", "-m", "openai/gpt-4o", "--usage", h], code: 3, line: /^cachet: --usage .*: is a directory, not a file$/ },
  { name: "--schema malformed", args: () => ["--emulate", "--schema", '{"type":', "hi"], code: 3, line: /^cachet: inline schema:1:9: invalid JSON/ },
  // A blank system part would be frozen into the new session's prefix and refused by the provider on every turn.
  { name: "-s \" \" (whitespace only)", args: () => ["--emulate", "-s", " ", "hi"], code: 2, line: /^cachet: flag --system needs a value: it is only whitespace$/ },
  { name: "-s @FILE holding only whitespace", args: (h) => ["--emulate", "-s", `@${join(h, "blank-system.txt")}`, "hi"], code: 2, line: /^cachet: flag --system @.*blank-system\.txt: the file is only whitespace$/ },
  { name: "-s @/dev/null (an empty file)", args: () => ["--emulate", "-s", "@/dev/null", "hi"], code: 2, line: /^cachet: flag --system @\/dev\/null: the file is empty$/ },
  // The same check as config.toml's base_url, before anything is read or sent (it was exit 4 "stream failed: Invalid URL").
  { name: "--base-url notaurl", args: () => ["-m", "openai/gpt-4o", "--base-url", "notaurl", "hi"], code: 2, line: /^cachet: --base-url "notaurl": expected an http:\/\/ or https:\/\/ URL$/ },
  { name: "--base-url without a scheme (localhost:8080 parses as scheme localhost:)", args: () => ["-m", "openai/gpt-4o", "--base-url", "localhost:8080", "hi"], code: 2, line: /^cachet: --base-url "localhost:8080": expected an http:\/\/ or https:\/\/ URL$/ },
  // The emulator answers every request itself: the URL would be ignored without a word.
  { name: "--base-url with --emulate", args: () => ["--emulate", "--base-url", "http://127.0.0.1:4321", "hi", "there"], code: 2, line: /^cachet: --base-url and --emulate do not go together: the emulator answers every request itself, so the URL would be ignored$/ },
  { name: "--system @missing", args: () => ["--emulate", "--system", "@missing-file", "hi"], code: 3, line: /^cachet: --system @missing-file: no such file$/ },
  { name: "-m noslash", args: () => ["--emulate", "-m", "noslash", "hi"], code: 2, line: /^cachet: model "noslash" is not of the form provider\/model$/ },
  { name: "unknown provider -m nope/x", args: () => ["--emulate", "-m", "nope/x", "hi"], code: 2, line: /^cachet: unknown provider "nope"$/ },
  { name: "--session unknown id", args: () => ["--emulate", "--session", "s_aaaaaaaaaaaa", "hi"], code: 2, line: /^cachet: no session "s_aaaaaaaaaaaa"$/ },
  { name: "--session shaped like an id that does not exist (a mistyped id)", args: () => ["--emulate", "--session", "s_fakeid", "hi"], code: 2, line: /^cachet: no session "s_fakeid"$/ },
  { name: "-c --session unknown id", args: () => ["--emulate", "-c", "--session", "s_aaaaaaaaaaaa", "hi"], code: 2, line: /^cachet: no session "s_aaaaaaaaaaaa"$/ },
  { name: "a whitespace-only prompt (providers refuse it)", args: () => ["--emulate", "  ", " "], code: 2, line: /^cachet: nothing to send: the PROMPT and stdin are only whitespace$/ },
  { name: "-c --session NAME that does not exist (-c continues; it never starts a session)", args: () => ["--emulate", "-c", "--session", "never-made", "hi"], code: 2, line: /^cachet: no session "never-made"$/ },
  { name: "--session over 128 characters", args: () => ["--emulate", "--session", "n".repeat(129), "hi"], code: 2, line: /^cachet: --session n{24}…: a session name has at most 128 characters, this one 129$/ },
  { name: "--session of spaces only (shows as nothing)", args: () => ["--emulate", "--session", " ", "hi"], code: 2, line: /^cachet: --session " ": a session name cannot be only spaces$/ },
  { name: "--session with a trailing space (prints as another name)", args: () => ["--emulate", "--session", "rev ", "hi"], code: 2, line: /^cachet: --session "rev ": a session name cannot start or end with a space$/ },
  { name: "--session - (the listing's mark for no name)", args: () => ["--emulate", "--session", "-", "hi"], code: 2, line: /^cachet: --session -: "-" is what `cachet sessions` shows for a session without a name$/ },
  { name: "--session with an escape sequence", args: () => ["--emulate", "--session", "a\x1b[31mb", "hi"], code: 2, line: /^cachet: --session "a\\x1b\[31mb": the name holds a control or invisible character \(\\x1b at character 2\)$/ },
  { name: "--session with a newline", args: () => ["--emulate", "--session", "two\nlines", "hi"], code: 2, line: /^cachet: --session "two\\nlines": the name holds a control or invisible character \(\\n at character 4\)$/ },
  { name: "--session with a zero width space (looks like \"ab\")", args: () => ["--emulate", "--session", "a\u200bb", "hi"], code: 2, line: /^cachet: --session "a\\u\{200b\}b": the name holds a control or invisible character \(\\u\{200b\} at character 2\)$/ },
  { name: "--session with a soft hyphen", args: () => ["--emulate", "--session", "co\u00adst", "hi"], code: 2, line: /^cachet: --session "co\\u\{ad\}st": the name holds a control or invisible character \(\\u\{ad\} at character 3\)$/ },
  { name: "--session with a zero width joiner between letters", args: () => ["--emulate", "--session", "a\u200db", "hi"], code: 2, line: /^cachet: --session "a\\u\{200d\}b": the name holds a control or invisible character \(\\u\{200d\} at character 2\)$/ },
  { name: "--session X --fork=Y (two sessions to fork)", args: () => ["--emulate", "--session", "x", "--fork=y", "hi"], code: 2, line: /^cachet: --fork=y and --session x name two sessions to fork$/ },
  { name: "-c --fork=Y (two sessions to fork)", args: () => ["--emulate", "-c", "--fork=y", "hi"], code: 2, line: /^cachet: --fork=y and -c \(the latest session\) name two sessions to fork$/ },
  { name: "--fork= with no session", args: () => ["--emulate", "--fork=", "hi"], code: 2, line: /^cachet: --fork= names no session$/ },
  { name: "cachet prices without its ACTION: the actions named", args: () => ["prices"], code: 2, line: /^cachet: cachet prices needs ACTION: update, reset$/ },
  { name: "cachet schema without its ACTION: the action named", args: () => ["schema"], code: 2, line: /^cachet: cachet schema needs ACTION: check$/ },
  { name: "-s @/dev/stdin and `-`: stdin read twice", args: () => ["--emulate", "-s", "@/dev/stdin", "-"], code: 2, line: /^cachet: --system @\/dev\/stdin reads its file from stdin, and `-` reads stdin too$/ },
  { name: "--tools /dev/stdin and no PROMPT: nothing to send", args: () => ["--emulate", "--tools", "/dev/stdin"], code: 2, line: /^cachet: nothing to send: no PROMPT argument, and stdin is --tools \/dev\/stdin's file$/ },
  { name: "--tools /dev/stdin and -s @/dev/stdin: two readers of one stdin", args: () => ["--emulate", "--tools", "/dev/stdin", "-s", "@/dev/stdin", "hi"], code: 2, line: /^cachet: --system @\/dev\/stdin reads its file from stdin, and --tools \/dev\/stdin reads stdin too$/ },
  // No redirection opened these fds: by the time the file is read, cachet's own store may hold the number (fd 7 is
  // its cachet.db-shm once open), and its bytes would be read as the file.
  { name: "--schema /dev/fd/7 with no fd 7 given", args: () => ["--emulate", "--schema", "/dev/fd/7", "hi"], code: 3, line: /^cachet: --schema \/dev\/fd\/7: fd 7 is not open \(no redirection opened it for the command\), so the file would be one cachet opens itself$/ },
  { name: "--tools /dev/./fd/9 with no fd 9 given", args: () => ["--emulate", "--tools", "/dev/./fd/9", "hi"], code: 3, line: /^cachet: --tools \/dev\/\.\/fd\/9: fd 9 is not open \(no redirection opened it for the command\), so the file would be one cachet opens itself$/ },
  { name: "-s @LINK to /dev/fd/8 with no fd 8 given", args: (h) => ["--emulate", "-s", `@${join(h, "fd-8")}`, "hi"], code: 3, line: /^cachet: --system @.*fd-8: fd 8 is not open \(no redirection opened it for the command\), so the file would be one cachet opens itself$/ },
  { name: "--session with e and a combining accent (prints as é)", args: () => ["--emulate", "--session", "re\u0301v", "hi"], code: 2, line: /^cachet: --session "re\u0301v": the name holds a letter written as two characters \(a base and a combining mark\)$/ },
  { name: "cachet schema with a mistyped action: the action named, not the FILE after it", args: () => ["schema", "bogus"], code: 2, line: /^cachet: unknown action "bogus" for `cachet schema`$/ },
  { name: "cachet why r_unknown", args: () => ["why", "r_unknown"], code: 2, line: /^cachet: no request "r_unknown" in the ledger$/ },
  { name: "cachet price with malformed usage JSON", args: (h) => ["price", "-m", "anthropic/claude-sonnet-4-6", "--usage", join(h, "usage-bad.json")], code: 3, line: /^cachet: malformed JSON in usage .*usage-bad\.json: / },
  { name: "cachet probe on a missing file", args: (h) => ["probe", join(h, "no-scenario.json")], code: 3, line: /^cachet: scenario .*no-scenario\.json: no such file$/ },
  { name: "--tools /dev/zero: over the 64 MiB cap, refused once it is passed", args: () => ["--emulate", "--tools", "/dev/zero", "hi"], code: 3, line: /^cachet: --tools \/dev\/zero: larger than 64 MiB, the most cachet reads for this input$/ },
  { name: "--schema /dev/urandom: stops at the first invalid UTF-8 byte", args: () => ["--emulate", "--schema", "/dev/urandom", "hi"], code: 3, line: /^cachet: schema file \/dev\/urandom is not valid UTF-8: invalid byte 0x[0-9a-f]{2} at offset \d+$/ },
  { name: "cachet probe /dev/zero: over the 64 MiB cap", args: () => ["probe", "/dev/zero"], code: 3, line: /^cachet: scenario \/dev\/zero: larger than 64 MiB, the most cachet reads for this input$/ },
  { name: "cachet probe on malformed JSON", args: (h) => ["probe", join(h, "probe-bad.json")], code: 3, line: /^cachet: scenario .*probe-bad\.json: not valid JSON/ },
];

describe("one line, the documented exit code, nothing on stdout, nothing stored lost", () => {
  for (const c of CASES) {
    test(c.name, async () => {
      // NO_COLOR unset: stderr is a pipe, so colour codes must not appear anyway.
      const r = await cachet(c.args(home), { home, env: { NO_COLOR: "", TERM: "xterm-256color" } });
      expect(r.stdout).toBe("");
      expect(r.code).toBe(c.code);
      const [line, hint, ...rest] = textLines(r.stderr);
      expect(line).toMatch(c.line);
      // No ANSI colour codes in a non-terminal stderr.
      expect(r.stderr).not.toContain("\x1b[");
      if (hint !== undefined) expect(hint).toStartWith("  hint: ");
      expect(rest).toEqual([]);
      expect((await cachet(["export"], { home })).stdout).toBe(stored);
    });
  }

  test("--schema FILE that is JSON but no valid JSON Schema, or one the provider's contract refuses: the file and the JSON path of the node, exit 3", async () => {
    const invalid = join(home, "schema-invalid.json");
    writeFileSync(invalid, JSON.stringify({ type: "object", properties: { items: { type: "strin" } } }, null, 2));
    const unsupported = join(home, "schema-unsupported.json");
    writeFileSync(unsupported, JSON.stringify({ type: "object", properties: { items: { type: "array", items: { type: "string", not: { const: "x" } } } }, required: ["items"] }));
    const cases: [string[], string[]][] = [
      [
        ["--schema", invalid],
        [
          `cachet: ${invalid}: $.properties.items.type: must be equal to one of the allowed values ("array", "boolean", "integer", "null", "number", "object", "string")`,
          "  hint: fix the value at that path: JSON Schema (2020-12) does not allow it there",
        ],
      ],
      [
        // Checked as the request is rendered for the provider, yet named by its file.
        ["-m", "openai/gpt-4o", "--schema", unsupported],
        [
          `cachet: ${unsupported}: $.properties.items.items: "not" is not supported by openai strict mode`,
          `  hint: remove it: strict mode cannot express negation (state the constraint in "description"); \`cachet schema check ${unsupported} --provider openai\` lists every violation`,
        ],
      ],
    ];
    for (const [flags, lines] of cases) {
      const r = await cachet(["--emulate", ...flags, "hi"], { home });
      expect({ code: r.code, stdout: r.stdout, lines: textLines(r.stderr) }).toEqual({ code: 3, stdout: "", lines });
    }
    expect((await cachet(["export"], { home })).stdout).toBe(stored);
  });

  test("a malformed config.toml: exit 3 naming the file; the store is intact once it is fixed", async () => {
    const config = join(home, "config.toml");
    writeFileSync(config, "[broken\n");
    try {
      const r = await cachet(["--emulate", "hi"], { home });
      expect(r.code).toBe(3);
      expect(r.stdout).toBe("");
      const [line, hint, ...rest] = textLines(r.stderr);
      expect(line).toStartWith(`cachet: malformed TOML in ${config}:1: `);
      expect(hint).toStartWith("  hint: ");
      expect(rest).toEqual([]);
    } finally {
      rmSync(config);
    }
    expect((await cachet(["export"], { home })).stdout).toBe(stored);
  });

  test("a config with an unknown key: exit 3 naming the key and the file, and the key it is a typo of", async () => {
    const config = join(home, "config.toml");
    writeFileSync(config, "bogus = 1\n");
    try {
      const r = await cachet(["--emulate", "hi"], { home });
      expect(r.code).toBe(3);
      expect(r.stdout).toBe("");
      expect(textLines(r.stderr)).toEqual([`cachet: unknown config key "bogus" in ${config}`, "  hint: see README.md, Configuration, for the keys cachet accepts"]);
      writeFileSync(config, "[compaction]\nenabeld = false\n");
      const typo = await cachet(["--emulate", "hi"], { home });
      expect(typo.code).toBe(3);
      expect(textLines(typo.stderr)).toEqual([`cachet: unknown config key "compaction.enabeld" in ${config}`, '  hint: did you mean "compaction.enabled"? (README.md, Configuration, lists the keys cachet accepts)']);
    } finally {
      rmSync(config);
    }
    expect((await cachet(["export"], { home })).stdout).toBe(stored);
  });
});

test("a Gemini option or temperature the API refuses: the provider's error as one line (and its hint), exit 4, nothing on stdout, nothing stored lost, the option not kept for the next turn", async () => {
  // A home of its own: the good turn at the end would become the shared home's latest session.
  const own = freshHome();
  expect((await cachet(["--emulate", "-m", "google/gemini-2.5-flash", "remember this turn"], { home: own })).code).toBe(0);
  const before = (await cachet(["export"], { home: own })).stdout;
  const cases: [string[], RegExp][] = [
    [["-o", "temperature=0.2"], /^cachet: google: HTTP 400: INVALID_ARGUMENT: Invalid JSON payload received\. Unknown name "temperature": Cannot find field\.$/],
    [["--temperature", "3"], /^cachet: google: HTTP 400: INVALID_ARGUMENT: Unable to submit request because it has a temperature value of 3 but the supported range is from 0 \(inclusive\) to 2\.0001 \(exclusive\)\. Update the value and try again\.$/],
  ];
  for (const [flags, expected] of cases) {
    const r = await cachet(["--emulate", "-c", ...flags, "hi"], { home: own });
    // The change of setting is announced before the request; the hint then says it was not kept.
    const [announced, line, hint, ...rest] = textLines(r.stderr);
    expect({ flags, code: r.code, stdout: r.stdout, announced, line, hint, rest }).toEqual({
      flags,
      code: 4,
      stdout: "",
      announced: `[warn] ${flags[0] === "-o" ? `-o ${flags[1]!.split("=")[0]}` : flags[0]} (unset) → ${flags[0] === "-o" ? flags[1]!.split("=")[1] : flags[1]} for this session from now on`,
      line: expect.stringMatching(expected),
      hint: expect.stringMatching(/^  hint: .*the prompt was not kept in the session \(no answer came\), nor were this turn's setting changes: run the same command again to resend it$/),
      rest: [],
    });
  }
  // Everything stored is kept as it was (the session's updatedAt aside); each refused request is a ledger row of its own (status error, $0).
  const lines = (text: string) => text.split("\n").filter(Boolean).map((l) => l.replace(/"updatedAt":\d+/, '"updatedAt":0'));
  const after = lines((await cachet(["export"], { home: own })).stdout);
  const kept = lines(before);
  expect(after.filter((l) => kept.includes(l))).toEqual(kept);
  expect(after.filter((l) => !kept.includes(l)).map((l) => JSON.parse(l)).map((r) => [r.type, r.request?.status, r.request?.costUsd])).toEqual(Array(2).fill(["request", "error", 0]));
  // A refused option does not stick to the session: the next plain turn is answered, and so is a valid option.
  const next = await cachet(["--emulate", "-c", "again"], { home: own });
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" });
  expect((await cachet(["--emulate", "-c", "-o", 'generationConfig={"temperature":0.3}', "hi"], { home: own })).code).toBe(0);
});

test("CACHET_PLUGINS naming a file with a syntax error: the plugin is named, the run still works", async () => {
  const own = freshHome();
  const plugin = join(own, "broken-plugin.js");
  writeFileSync(plugin, "export default {\n");
  const r = await cachet(["--emulate", "hello"], { home: own, env: { CACHET_PLUGINS: plugin } });
  expect(r.code).toBe(0);
  expect(r.stdout.trim().length).toBeGreaterThan(0);
  const lines = textLines(r.stderr);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(plugin);
});

test("a first prompt over the model's window: one error line whose hint offers only what can help (no compaction: nothing earlier to compact; no --max-tokens: the prompt alone overflows), exit 3, nothing stored", async () => {
  // gpt-3.5-turbo's window is 16,385 tokens; "word " is one token.
  const r = await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", "summarise"], { home, stdin: "word ".repeat(20_000) });
  expect(r.code).toBe(3);
  expect(r.stdout).toBe("");
  const lines = textLines(r.stderr);
  expect(lines).toHaveLength(2);
  expect(lines[0]).toBe("cachet: the request does not fit openai/gpt-3.5-turbo's context window: about 20,004 prompt tokens > 16,385; nothing was sent");
  expect(lines[1]).toBe("  hint: send less input, or pick a model with a larger window (`cachet models`)");
  expect((await cachet(["export"], { home })).stdout).toBe(stored);
  expect((await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n")).toHaveLength(1);
});

test("the too-long hint follows the case: --max-tokens when the reserved output overflows, compaction when earlier messages could be summarised", async () => {
  const own = freshHome();
  // 15,000 prompt tokens fit gpt-3.5-turbo's 16,385; with 4,096 reserved for output they do not.
  const reserved = await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", "--max-tokens", "4096", "summarise"], { home: own, stdin: "word ".repeat(15_000) });
  expect(reserved.code).toBe(3);
  expect(textLines(reserved.stderr)).toEqual([
    "cachet: the request does not fit openai/gpt-3.5-turbo's context window: about 15,004 prompt tokens + 4,096 output > 16,385; nothing was sent",
    "  hint: send less input, lower --max-tokens (4,096 output tokens are reserved in the window), or pick a model with a larger window (`cachet models`)",
  ]);
  expect((await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", "hello"], { home: own })).code).toBe(0);
  const later = await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", "-c", "--no-compact", "summarise"], { home: own, stdin: "word ".repeat(20_000) });
  expect(later.code).toBe(3);
  const [first] = (await cachet(["sessions", "--json"], { home: own })).stdout.trim().split("\n").map((l) => (JSON.parse(l) as { id: string }).id);
  // Named: `cachet compact` alone compacts the latest session, which need not be this one.
  expect(textLines(later.stderr)[1]).toBe(`  hint: compact the session (\`cachet compact --session ${first}\`; runs compact on their own unless --no-compact or compaction.enabled = false), send less input, or pick a model with a larger window (\`cachet models\`)`);
  // A fork's first turn: the fork is not kept, so the hint names its parent (not the latest session, made after it).
  expect((await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", "--session", "newer", "hello"], { home: own })).code).toBe(0);
  const fork = await cachet(["--emulate", "-m", "openai/gpt-3.5-turbo", `--fork=${first}`, "--no-compact", "summarise"], { home: own, stdin: "word ".repeat(20_000) });
  expect(fork.code).toBe(3);
  expect(textLines(fork.stderr)[1]).toBe(
    `  hint: compact what the fork inherits (its first run compacts it on its own unless --no-compact or compaction.enabled = false; or \`cachet compact --session ${first}\` compacts the parent, then fork it again), send less input, or pick a model with a larger window (\`cachet models\`)`,
  );
  expect((await cachet(["sessions", "--json"], { home: own })).stdout.trim().split("\n")).toHaveLength(2);
});

test("--json, a new session (or new NAME) refused before anything is stored (over the window, over --max-cost): only the error line, no session line for a session that never exists", async () => {
  const own = freshHome();
  const long = await cachet(["--emulate", "--json", "-m", "openai/gpt-3.5-turbo", "summarise"], { home: own, stdin: "word ".repeat(20_000) });
  expect(long.code).toBe(3);
  expect(events(long.stdout).map((e) => [e.type, e.code])).toEqual([["error", "CONTEXT_TOO_LONG"]]);
  const costly = await cachet(["--emulate", "--json", "--max-cost", "0.000001", "hello"], { home: own });
  expect(costly.code).toBe(6);
  expect(events(costly.stdout).map((e) => [e.type, e.code])).toEqual([["error", "BUDGET_EXCEEDED"]]);
  const named = await cachet(["--emulate", "--json", "--session", "new-name", "-m", "openai/gpt-3.5-turbo", "summarise"], { home: own, stdin: "word ".repeat(20_000) });
  expect(named.code).toBe(3);
  expect(events(named.stdout).map((e) => [e.type, e.code])).toEqual([["error", "CONTEXT_TOO_LONG"]]);
  expect((await cachet(["sessions"], { home: own })).stdout).toStartWith("no sessions");
  const ok = await cachet(["--emulate", "--json", "hello"], { home: own });
  expect(ok.code).toBe(0);
  const lines = events(ok.stdout);
  expect(lines[0]).toMatchObject({ type: "session", name: null, model: "anthropic/claude-sonnet-4-6", prefix_version: 1 });
  expect(lines.at(-1)).toMatchObject({ type: "done", session: lines[0]!.id });
});

test("command-line words given bytes that are not UTF-8 (they reach cachet as U+FFFD): one line naming the word and byte, nothing sent; a prompt word is input (exit 3, ARGV_INVALID_UTF8), a flag's value the command line (exit 2, BAD_FLAG); U+FFFD typed as such and accents and emoji are fine", async () => {
  const run = async (words: string) => {
    const proc = Bun.spawn(["sh", "-c", `"${BINARY}" ${words}`], { env: homeEnv(home), stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };
  for (const [words, code, line] of [
    [`--emulate --session "$(printf 'ab\\303(z')" hi`, 2, 'cachet: command-line word 3 ("ab\ufffd(z") is not valid UTF-8: invalid byte 0xc3 at offset 2'],
    [`--emulate "$(printf 'bad\\377arg')"`, 3, 'cachet: command-line word 2 ("bad\ufffdarg") is not valid UTF-8: invalid byte 0xff at offset 3'],
    [`--emulate -s "$(printf 'sys\\300\\200')" hi`, 2, 'cachet: command-line word 3 ("sys\ufffd\ufffd") is not valid UTF-8: invalid byte 0xc0 at offset 3'],
  ] as const) {
    const r = await run(words);
    expect({ words, code: r.code, stdout: r.stdout }).toEqual({ words, code, stdout: "" });
    const [first, hint, ...rest] = textLines(r.stderr);
    expect(first).toBe(line);
    expect(hint).toStartWith("  hint: ");
    expect(rest).toEqual([]);
  }
  expect((await cachet(["export"], { home })).stdout).toBe(stored);
  // A --json run says it on stdout too: the prompt word's code is stdin's kind of fault, the flag value's the command line's.
  const json = await run(`--emulate --json "$(printf 'bad\\377arg')"`);
  expect({ code: json.code, stdout: JSON.parse(json.stdout), line: textLines(json.stderr)[0] }).toEqual({
    code: 3,
    stdout: { type: "error", code: "ARGV_INVALID_UTF8", message: 'command-line word 3 ("bad\ufffdarg") is not valid UTF-8: invalid byte 0xff at offset 3', hint: expect.any(String), incomplete: false },
    line: 'cachet: command-line word 3 ("bad\ufffdarg") is not valid UTF-8: invalid byte 0xff at offset 3',
  });
  const jsonFlag = await run(`--emulate --json --system "$(printf '\\377')" hi`);
  expect({ code: jsonFlag.code, stdout: JSON.parse(jsonFlag.stdout) }).toEqual({
    code: 2,
    stdout: { type: "error", code: "BAD_FLAG", message: 'command-line word 4 ("\ufffd") is not valid UTF-8: invalid byte 0xff at offset 0', hint: "type it in UTF-8 (e.g. convert it with iconv)", incomplete: false },
  });
  const own = freshHome();
  const typed = await cachet(["--emulate", "a \ufffd typed as such"], { home: freshHome() });
  expect({ code: typed.code, stderr: typed.stderr }).toEqual({ code: 0, stderr: "" });
  const named = await cachet(["--emulate", "--session", "café ☕ 2", "hi"], { home: own });
  expect(named.code).toBe(0);
  expect(JSON.parse((await cachet(["sessions", "--json"], { home: own })).stdout).name).toBe("café ☕ 2");
});

test("a command-line word that is not UTF-8 gets a hint for what it is: a prompt may go on stdin, a path must be renamed, a name retyped", async () => {
  const run = async (words: string) => {
    const proc = Bun.spawn(["sh", "-c", `"${BINARY}" ${words}`], { env: homeEnv(home), stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    return { stderr, code };
  };
  const prompt = "  hint: pass text in UTF-8 (e.g. convert it with iconv), or send it on stdin with --stdin-encoding replace to substitute U+FFFD";
  const path = "  hint: a path that is not UTF-8 cannot be named on cachet's command line: rename the file or directory to a UTF-8 name, or link it from one (ln -s)";
  const text = "  hint: type it in UTF-8 (e.g. convert it with iconv)";
  const bad = `"$(printf 'a\\377b')"`;
  const badDir = `"$(printf '/tmp/bad\\377dir/s.txt')"`;
  for (const [words, hint] of [
    [`--emulate ${bad}`, prompt],
    [`run --emulate hi ${bad}`, prompt],
    [`cost ${bad}`, text],
    [`sessions show ${bad}`, text],
    [`export ${bad}`, text],
    [`why ${bad}`, text],
    [`stats --session ${bad}`, text],
    [`models --provider ${bad}`, text],
    [`--emulate -s ${bad} hi`, text],
    [`plugins remove ${bad}`, text],
    [`--emulate -s @${badDir} hi`, path],
    [`--emulate --system=@${badDir} hi`, path],
    [`--emulate --tools ${badDir} hi`, path],
    [`--emulate --tool-result ${`"$(printf 'call_1=@/tmp/bad\\377.txt')"`}`, path],
    [`probe ${badDir} --emulate`, path],
    [`plugins test ${badDir}`, path],
  ] as const) {
    const r = await run(words);
    // A prompt word is input data, as on stdin (exit 3); any other word is the command line (exit 2).
    expect({ words, code: r.code, hint: textLines(r.stderr)[1] }).toEqual({ words, code: hint === prompt ? 3 : 2, hint });
  }
});

test("100 MB of stdin: read and counted to the end, then refused locally as larger than the model's window (a provider refuses it too), nothing sent", async () => {
  const own = freshHome();
  const input = new Uint8Array(100_000_000).fill(0x61);
  const started = performance.now();
  const r = await cachet(["--emulate", "--no-stream", "-q", "count"], { home: own, stdin: input, timeoutMs: 120_000 });
  const seconds = (performance.now() - started) / 1000;
  expect(r.code).toBe(3);
  expect(r.stdout).toBe("");
  expect(r.stderr).toMatch(/does not fit anthropic\/claude-sonnet-4-6's context window: about [\d,]+ prompt tokens .*> 1,000,000; nothing was sent/);
  // Figures for the report; peak RSS is measured with /usr/bin/time -v outside this suite.
  console.log(`100 MB stdin: ${seconds.toFixed(1)} s`);
}, 130_000);

/** Spawns the binary with `stdin` as given (a file descriptor, or a pipe nobody writes to). */
async function spawnWith(args: string[], home: string, stdin: number | "pipe"): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([BINARY, ...args], { env: homeEnv(home), stdin, stdout: "pipe", stderr: "pipe", timeout: 20_000 });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

test("a directory on stdin (`cachet … < DIR`): exit 3 naming stdin as a directory, not an internal error; nothing stored is lost", async () => {
  const fd = openSync(home, "r");
  try {
    for (const args of [["--emulate", "summarise"], ["--emulate"]]) {
      const r = await spawnWith(args, home, fd);
      expect(r.stdout).toBe("");
      expect(r.code).toBe(3);
      const [line, hint, ...rest] = textLines(r.stderr);
      expect(line).toBe("cachet: stdin: is a directory, not a file");
      expect(hint).toStartWith("  hint: ");
      expect(rest).toEqual([]);
    }
  } finally {
    closeSync(fd);
  }
  expect((await cachet(["export"], { home })).stdout).toBe(stored);
});

test("a bad flag value is refused before stdin is read: a pipe that never writes does not hold the usage error back", async () => {
  const r = await spawnWith(["--emulate", "--max-tokens", "0"], freshHome(), "pipe");
  expect(r.stdout).toBe("");
  expect(r.code).toBe(2);
  expect(textLines(r.stderr)[0]).toBe("cachet: --max-tokens 0: expected an integer ≥ 1 in decimal digits");
});

test("a session stored with a blank system part (before -s refused one) continues: the part is left off the wire, the stored prefix keeps it", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-s", "PLACEHOLDER", "--session", "old", "first"], { home })).code).toBe(0);
  // What an older cachet stored for `-s " "`: the same prefix, built from a blank part.
  const blank = buildPrefix({ system: [" "], tools: [] });
  const db = new Database(join(home, "cachet.db"));
  try {
    expect(db.query("UPDATE prefixes SET fingerprint = ?, prefix = ?").run(blank.fingerprint, JSON.stringify(blank)).changes).toBe(1);
  } finally {
    db.close();
  }
  const next = await cachet(["--emulate", "-c", "--session", "old", "second"], { home });
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" });
  const after = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    expect(after.query("SELECT version, prefix FROM prefixes").all()).toEqual([{ version: 1, prefix: JSON.stringify(blank) }]);
    expect(after.query("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 4 });
    expect(after.query("SELECT count(*) AS n FROM requests WHERE status = 'ok'").get()).toEqual({ n: 2 });
  } finally {
    after.close();
  }
});

test("-s @/dev/zero stops at the prompt-text cap (CACHET_MAX_STDIN_BYTES) with exit 3 naming it; nothing stored", async () => {
  const home = freshHome();
  const r = await cachet(["--emulate", "-s", "@/dev/zero", "hi"], { home, env: { CACHET_MAX_STDIN_BYTES: String(4 * 1024 * 1024) } });
  expect(r.code).toBe(3);
  expect(r.stdout).toBe("");
  expect(r.stderr).toBe("cachet: --system @/dev/zero: larger than 4 MiB, the most cachet reads for this input\n  hint: send a smaller file, or raise the limit with CACHET_MAX_STDIN_BYTES\n");
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
});

test("CACHET_MAX_STDIN_BYTES that is not a whole number of bytes (-5, abc, 1.5, past 4 GiB): exit 2 naming the variable and the form it takes; nothing stored", async () => {
  const home = freshHome();
  for (const value of ["-5", "abc", "1.5", "1e3", String(2 ** 32 + 1)]) {
    const r = await cachet(["--emulate", "hi"], { home, stdin: "some input", env: { CACHET_MAX_STDIN_BYTES: value } });
    expect({ value, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
      value,
      code: 2,
      stdout: "",
      stderr: `cachet: CACHET_MAX_STDIN_BYTES=${JSON.stringify(value)}: expected a whole number of bytes from 0 to 4294967296 (4 GiB)\n  hint: unset it for the default 1 GiB (1073741824)\n`,
    });
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
  const fits = await cachet(["--emulate", "hi"], { home, stdin: "some input", env: { CACHET_MAX_STDIN_BYTES: "10" } });
  expect(fits.code).toBe(0);
  const over = await cachet(["--emulate", "hi"], { home, stdin: "some input!", env: { CACHET_MAX_STDIN_BYTES: "10" } });
  expect(over.code).toBe(3);
  expect(over.stderr.split("\n")[0]).toBe("cachet: stdin is larger than 10 bytes");
});

test("a registry variable that is not an http(s) URL (CACHET_NPM_REGISTRY, npm_config_registry): exit 2 naming it, not an internal error; nothing installed", async () => {
  const home = freshHome();
  for (const [variable, value] of [["CACHET_NPM_REGISTRY", "notaurl"], ["CACHET_NPM_REGISTRY", "ftp://registry.example"], ["npm_config_registry", "registry.example"]] as const) {
    const r = await cachet(["plugins", "add", "some-plugin"], { home, env: { [variable]: value } });
    expect({ variable, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
      variable,
      code: 2,
      stdout: "",
      stderr: `cachet: ${variable}=${JSON.stringify(value)}: expected an http:// or https:// URL\n  hint: e.g. ${variable}=https://registry.npmjs.org, or unset it for that default\n`,
    });
  }
  const listed = JSON.parse((await cachet(["plugins", "list", "--json"], { home })).stdout) as { plugins: { source: string }[] };
  expect(listed.plugins.map((p) => p.source)).toEqual(["builtin:anthropic", "builtin:openai", "builtin:gemini", "builtin:openai-compatible"]);
});

test("an emulator clock or billing variable that cannot be read (CACHET_EMULATOR_CLOCK_MS, _CLOCK_OFFSET_MS, _BYOK): exit 2 naming it when the emulator starts, nothing stored", async () => {
  const home = freshHome();
  const cases = [
    ["CACHET_EMULATOR_CLOCK_MS", "abc", "expected ms since the epoch, e.g. 1767225600000", "unset CACHET_EMULATOR_CLOCK_MS for the wall clock"],
    ["CACHET_EMULATOR_CLOCK_OFFSET_MS", "2026-01-01", "expected a shift in ms, e.g. 300000 or -60000", "unset CACHET_EMULATOR_CLOCK_OFFSET_MS for the wall clock"],
    ["CACHET_EMULATOR_BYOK", "Free", "expected free or fee", "unset CACHET_EMULATOR_BYOK for requests paid with OpenRouter credits"],
  ] as const;
  for (const [variable, value, form, hint] of cases) {
    const r = await cachet(["--emulate", "hi"], { home, env: { [variable]: value } });
    expect({ variable, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ variable, code: 2, stdout: "", stderr: `cachet: ${variable}=${JSON.stringify(value)}: ${form}\n  hint: ${hint}\n` });
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
  const fixed = await cachet(["--emulate", "--json", "hi"], { home, env: { CACHET_EMULATOR_CLOCK_MS: "1767225600000", CACHET_EMULATOR_BYOK: "fee" } });
  expect(fixed.code).toBe(0);
});

/** The three ways the emulator starts: in-process for a run, served, behind the proxy. */
const EMULATOR_STARTS = [["--emulate", "hi"], ["emulate", "--port", "0"], ["proxy", "--port", "0", "--emulate"]] as const;

test("an emulator fault or answer-length variable that cannot be read (CACHET_EMULATOR_FAULT, _ANSWER_TOKENS): exit 2 naming it, the value and the accepted ones, whether --emulate, cachet emulate or cachet proxy --emulate starts it; nothing sent or stored", async () => {
  const home = freshHome();
  const faults = "429, 500, 503, 529, error-before, error-after, cut, stall, chatter, split-utf8, thinking-pings, reset, hold";
  const cases = [
    ["CACHET_EMULATOR_FAULT", "bogus", `expected one of ${faults}, optionally :N for the first N requests (e.g. 429:1)`, "unset CACHET_EMULATOR_FAULT for no fault"],
    ["CACHET_EMULATOR_FAULT", "429:x", `expected one of ${faults}, optionally :N for the first N requests (e.g. 429:1)`, "unset CACHET_EMULATOR_FAULT for no fault"],
    ["CACHET_EMULATOR_ANSWER_TOKENS", "lots", "expected a whole number of tokens from 1, e.g. 200", "unset CACHET_EMULATOR_ANSWER_TOKENS for the default 20"],
    ["CACHET_EMULATOR_ANSWER_TOKENS", "0", "expected a whole number of tokens from 1, e.g. 200", "unset CACHET_EMULATOR_ANSWER_TOKENS for the default 20"],
  ] as const;
  for (const args of EMULATOR_STARTS) {
    for (const [variable, value, form, hint] of cases) {
      const r = await cachet([...args], { home, env: { [variable]: value } });
      expect({ args, variable, value, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, variable, value, code: 2, stdout: "", stderr: `cachet: ${variable}=${JSON.stringify(value)}: ${form}\n  hint: ${hint}\n` });
    }
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
  expect((await cachet(["stats", "--json"], { home })).stdout).toContain('"total":{"key":"total","requests":0,');
  // Well-formed values serve: one 429 then the retry's answer, 3 tokens long.
  const ok = await cachet(["--emulate", "--json", "hi"], { home, env: { CACHET_EMULATOR_FAULT: "429:1", CACHET_EMULATOR_ANSWER_TOKENS: "3" } });
  expect(ok.code).toBe(0);
  const usage = events(ok.stdout).find((e) => e.type === "usage") as { output?: number } | undefined;
  expect(usage?.output).toBe(3);
});

test("the emulator's variables are read one way when checked and when used: surrounding blanks ignored, blank is unset; a count of 0 (`429:0`), a clock in hex or exponent form are refused (exit 2) like any malformed value", async () => {
  const home = freshHome();
  const faults = "429, 500, 503, 529, error-before, error-after, cut, stall, chatter, split-utf8, thinking-pings, reset, hold";
  const refused = [
    ["CACHET_EMULATOR_FAULT", "429:0", `expected one of ${faults}, optionally :N for the first N requests (e.g. 429:1)`, "unset CACHET_EMULATOR_FAULT for no fault"],
    ["CACHET_EMULATOR_FAULT", " 429 :1", `expected one of ${faults}, optionally :N for the first N requests (e.g. 429:1)`, "unset CACHET_EMULATOR_FAULT for no fault"],
    ["CACHET_EMULATOR_CLOCK_MS", "0x10", "expected ms since the epoch, e.g. 1767225600000", "unset CACHET_EMULATOR_CLOCK_MS for the wall clock"],
    ["CACHET_EMULATOR_CLOCK_OFFSET_MS", "1e3", "expected a shift in ms, e.g. 300000 or -60000", "unset CACHET_EMULATOR_CLOCK_OFFSET_MS for the wall clock"],
    ["CACHET_EMULATOR_ANSWER_TOKENS", "3.0", "expected a whole number of tokens from 1, e.g. 200", "unset CACHET_EMULATOR_ANSWER_TOKENS for the default 20"],
  ] as const;
  for (const [variable, value, form, hint] of refused) {
    const r = await cachet(["--emulate", "hi"], { home, env: { [variable]: value } });
    expect({ variable, value, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ variable, value, code: 2, stdout: "", stderr: `cachet: ${variable}=${JSON.stringify(value)}: ${form}\n  hint: ${hint}\n` });
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
  // A value with blanks around it is accepted because it is then applied as written without them.
  const faulty = await cachet(["--emulate", "--retries", "0", "--json", "hi"], { home, env: { CACHET_EMULATOR_FAULT: " 500\t" } });
  expect(faulty.code).toBe(4);
  expect(events(faulty.stdout).find((e) => e.type === "error")).toMatchObject({ code: "PROVIDER_HTTP", message: expect.stringContaining("HTTP 500") });
  const answers = async (env: Record<string, string>) => {
    const r = await cachet(["--emulate", "--json", "--no-store", "hi"], { home, env });
    expect({ env, code: r.code, stderr: r.stderr }).toEqual({ env, code: 0, stderr: "" });
    return events(r.stdout).find((e) => e.type === "usage")!.output;
  };
  expect(await answers({ CACHET_EMULATOR_ANSWER_TOKENS: " 3 " })).toBe(3);
  // A blank variable is unset: the default 20 tokens, not a 1-token answer.
  expect(await answers({ CACHET_EMULATOR_ANSWER_TOKENS: "" })).toBe(20);
  expect(await answers({ CACHET_EMULATOR_ANSWER_TOKENS: "  " })).toBe(20);
  expect(await answers({ CACHET_EMULATOR_FAULT: "   " })).toBe(20);
  // The fixed clock with blanks around it fixes the clock: two stores get the same provider id (derived from the clock) for the same request.
  const providerId = async () => {
    const store = freshHome();
    expect((await cachet(["--emulate", "-q", "hi"], { home: store, env: { CACHET_EMULATOR_CLOCK_MS: " 1767225600000 " } })).code).toBe(0);
    return (await exportSession(store)).requests[0]!.providerRequestId;
  };
  const first = await providerId();
  expect(first).toMatch(/^msg_emu/);
  expect(await providerId()).toBe(first);
});

test("a CACHET_EMULATOR_SCRIPT file that is missing, a directory, not UTF-8, not JSON or not a list of answers: exit 3 naming the file and what is wrong, whether --emulate, cachet emulate or cachet proxy --emulate starts the emulator; nothing sent or stored", async () => {
  const home = freshHome();
  const file = (name: string, body: string | Uint8Array) => {
    const path = join(home, name);
    writeFileSync(path, body);
    return path;
  };
  const cases = [
    [join(home, "none.json"), "no such file"],
    [home, "is a directory, not a file"],
    [file("latin1.json", new Uint8Array([0x5b, 0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d, 0x5d])), "not valid UTF-8"],
    [file("cut.json", '[{"text":'), "not JSON (JSON Parse error: Unexpected EOF)"],
    [file("object.json", '{"text":"a"}'), "invalid at (root): Invalid type: Expected Array but received Object"],
    [file("empty-list.json", "[]"), "invalid at (root): the script must hold at least one answer"],
    [file("typo.json", '[{"txt":"a"}]'), "invalid at 0.txt: unknown key"],
    [file("args.json", '[{"tool_calls":[{"name":"f","arguments":"not json"}]}]'), "invalid at 0.tool_calls.0.arguments: arguments must be a JSON object written as a string"],
  ] as const;
  const hint = "  hint: expected a JSON list of {text?, thinking?, tool_calls?: [{name, arguments}], refusal?, images?, web_search?: [query]}; fix the file, or unset CACHET_EMULATOR_SCRIPT for unscripted answers\n";
  for (const args of EMULATOR_STARTS) {
    for (const [path, problem] of cases) {
      const r = await cachet([...args], { home, env: { CACHET_EMULATOR_SCRIPT: path } });
      expect({ args, path, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, path, code: 3, stdout: "", stderr: `cachet: CACHET_EMULATOR_SCRIPT ${path}: ${problem}\n${hint}` });
    }
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
  expect((await cachet(["stats", "--json"], { home })).stdout).toContain('"total":{"key":"total","requests":0,');
  const good = await cachet(["--emulate", "hi"], { home, env: { CACHET_EMULATOR_SCRIPT: file("good.json", '[{"text":"scripted answer"}]') } });
  expect({ code: good.code, stdout: good.stdout }).toEqual({ code: 0, stdout: "scripted answer\n" });
});

test("a --session value shaped like an id that names no session is refused, the hint says such names are reserved; no session is created; a name of another shape starts one", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "first"], { home })).code).toBe(0);
  const sessions = async () => (await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n").map((l) => (JSON.parse(l) as { name: string | null }).name);
  expect(await sessions()).toEqual([null]);
  for (const ref of ["s_fakeid", "s_FAKEID", "s_k3j2h5g6f7d80"]) {
    const r = await cachet(["--emulate", "--session", ref, "hi"], { home });
    expect({ code: r.code, stdout: r.stdout, lines: textLines(r.stderr) }).toEqual({
      code: 2,
      stdout: "",
      lines: [`cachet: no session "${ref}"`, "  hint: check the id with `cachet sessions`; names that look like ids (s_ and letters or digits) are reserved, so pick another name to start a new session"],
    });
  }
  expect(await sessions()).toEqual([null]);
  const named = await cachet(["--emulate", "--session", "s_fake-id", "hi"], { home });
  expect({ code: named.code, stderr: named.stderr }).toEqual({ code: 0, stderr: "" });
  expect((await sessions()).sort()).toEqual([null, "s_fake-id"].sort());
});

test("a refused connection names the base URL's host:port and the socket error, exit 4, the prompt not kept; config.toml's base_url takes the same check as --base-url", async () => {
  const home = freshHome();
  // A port that refuses: bound, then closed.
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  for (const [model, env] of [["openai/gpt-4o", { OPENAI_API_KEY: "k" }], ["anthropic/claude-sonnet-4-6", { ANTHROPIC_API_KEY: "k" }]] as const) {
    const r = await cachet(["-m", model, "--retries", "0", "--base-url", `http://127.0.0.1:${port}`, "hi"], { home, env });
    const provider = model.split("/")[0];
    expect({ code: r.code, stdout: r.stdout, line: textLines(r.stderr)[0] }).toEqual({ code: 4, stdout: "", line: `cachet: ${provider}: cannot connect to 127.0.0.1:${port} (ECONNREFUSED)` });
  }
  // The prompt is not kept (no answer came); the failed attempt is in the ledger.
  const listed = (await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n").map((l) => JSON.parse(l) as { messages: number; requests: number });
  expect(listed.map((s) => [s.messages, s.requests])).toEqual([[0, 1], [0, 1]]);
  writeFileSync(join(home, "config.toml"), '[providers.openai]\nbase_url = "localhost:8080"\n');
  const r = await cachet(["-m", "openai/gpt-4o", "hi"], { home, env: { OPENAI_API_KEY: "k" } });
  expect({ code: r.code, line: textLines(r.stderr)[0] }).toEqual({ code: 3, line: `cachet: invalid config key "providers.openai.base_url" in ${join(home, "config.toml")}: expected an http:// or https:// URL` });
});

test("a session that stored options cachet now sets itself (an older cachet's n, prompt_cache_key): exit 2 naming all of them, with the -o key=null flags that get out; those flags continue it", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "sticky2", "first"], { home })).code).toBe(0);
  const db = new Database(join(home, "cachet.db"));
  try {
    expect(db.query("UPDATE sessions SET generation = ?").run(JSON.stringify({ providerOptions: { n: 2, prompt_cache_key: "mine" } })).changes).toBe(1);
  } finally {
    db.close();
  }
  const refused = await cachet(["--emulate", "--session", "sticky2", "again"], { home });
  expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: "" });
  expect(textLines(refused.stderr)).toEqual([
    `cachet: the session stores -o n and -o prompt_cache_key from an older cachet, which cachet now sets itself ("n": cachet reads and stores one choice per turn; "prompt_cache_key": it is the session's cache affinity key)`,
    "  hint: drop them from the session with -o n=null -o prompt_cache_key=null",
  ]);
  const json = await cachet(["--emulate", "--json", "--session", "sticky2", "again"], { home });
  expect(json.code).toBe(2);
  expect(JSON.parse(json.stdout.trim())).toMatchObject({ type: "error", code: "BAD_FLAG", hint: "drop them from the session with -o n=null -o prompt_cache_key=null" });
  // One dropped, one left: the one left is named alone.
  const half = await cachet(["--emulate", "--session", "sticky2", "-o", "n=null", "again"], { home });
  expect(half.code).toBe(2);
  expect(textLines(half.stderr)[1]).toBe("  hint: drop it from the session with -o prompt_cache_key=null");
  const out = await cachet(["--emulate", "--session", "sticky2", "-o", "n=null", "-o", "prompt_cache_key=null", "again"], { home });
  expect(out.code).toBe(0);
  expect((await cachet(["--emulate", "--session", "sticky2", "and again"], { home })).code).toBe(0);
});

test("-o on a part cachet sets itself: one line naming it, and a hint naming the flag to use instead (-m for -o model); nothing is stored", async () => {
  const home = freshHome();
  for (const [pair, part, why, use] of [
    ["model=x", "model", "it is part of the session and its cached prefix", "-m/--model"],
    ["stream=true", "stream", "it is part of the session and its cached prefix", "--no-stream"],
    ["n=3", "n", "cachet reads and stores one choice per turn", "one request per answer (leave n unset)"],
  ] as const) {
    const key = pair.split("=")[0]!;
    const r = await cachet(["--emulate", "-o", pair, "hi"], { home });
    expect({ pair, code: r.code, stdout: r.stdout, lines: textLines(r.stderr) }).toEqual({ pair, code: 2, stdout: "", lines: [`cachet: -o ${key}: cachet sets "${part}" itself (${why})`, `  hint: use ${use} instead of -o ${key}`] });
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
});

test("-o with a dotted key is refused with exit 2 and the JSON form (an owned part such as text.format is named as one); nothing is sent", async () => {
  const home = freshHome();
  const dotted = await cachet(["--emulate", "-o", "reasoning.effort=high", "hi"], { home });
  expect({ code: dotted.code, stdout: dotted.stdout }).toEqual({ code: 2, stdout: "" });
  expect(textLines(dotted.stderr)).toEqual([
    "cachet: -o reasoning.effort: -o sets a top-level key of the request and does not nest dotted keys",
    `  hint: give the object as JSON: -o reasoning='{"effort":"high"}'`,
  ]);
  for (const [pair, first] of [
    ["metadata.user_id=x", `cachet: -o metadata: cachet sets "metadata.user_id" itself`],
    ["text.format=x", `cachet: -o text: cachet sets "text.format" itself`],
    ["output_config.format=x", `cachet: -o output_config: cachet sets "output_config.format" itself`],
    ["generationConfig.responseMimeType=application/json", `cachet: -o generationConfig: cachet sets "generationConfig.responseMimeType" itself`],
  ] as const) {
    const r = await cachet(["--emulate", "-o", pair, "hi"], { home });
    expect({ pair, code: r.code }).toEqual({ pair, code: 2 });
    expect(textLines(r.stderr)[0]!.startsWith(first)).toBe(true);
  }
  expect((await cachet(["sessions"], { home })).stdout).toBe("no sessions yet\n");
});

test("--session and --fork with --no-store are refused as -c is (exit 2, sessions neither stored nor read); the stored session is untouched", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "base", "first"], { home })).code).toBe(0);
  for (const [args, flag] of [
    [["--session", "base"], "--session base"],
    [["--fork=base"], "--fork=base"],
    [["--fork"], "--fork"],
  ] as const) {
    const r = await cachet(["--emulate", ...args, "--no-store", "hi"], { home });
    expect({ flag, code: r.code, stdout: r.stdout }).toEqual({ flag, code: 2, stdout: "" });
    expect(textLines(r.stderr)[0]).toBe(`cachet: ${flag}: with --no-store (or CACHET_NO_STORE=1) sessions are neither stored nor read`);
  }
  const env = await cachet(["--emulate", "--session", "base", "hi"], { home, env: { CACHET_NO_STORE: "1" } });
  expect(env.code).toBe(2);
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    expect(db.query("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 2 });
  } finally {
    db.close();
  }
});

test("a missing API key is exit 2, unless --base-url names the server: a gateway may take none, and the request goes with a placeholder key", async () => {
  const own = freshHome();
  const missing = await cachet(["-m", "openai/gpt-5", "hi"], { home: own });
  expect(missing.code).toBe(2);
  expect(missing.stderr.split("\n")[0]).toBe("cachet: no API key for openai: set OPENAI_API_KEY");
  const seen: (string | null)[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      seen.push(request.headers.get("authorization"));
      return Response.json({ error: { message: "gateway says no", type: "server_error" } }, { status: 400 });
    },
  });
  try {
    const sent = await cachet(["-m", "openai/gpt-5", "--retries", "0", "--base-url", `http://127.0.0.1:${server.port}/v1`, "hi"], { home: own });
    expect(sent.code).toBe(4);
    expect(seen.length).toBeGreaterThan(0);
    // The SDK needs some key to build a request: the placeholder, documented in README.
    expect(seen).toEqual(["Bearer unset"]);
  } finally {
    server.stop(true);
  }
});

test("a flag whose file is stdin (-s @/dev/stdin) takes stdin: the prompt is the words alone, the system prompt what was piped", async () => {
  const home = freshHome();
  const r = await cachet(["--emulate", "-s", "@/dev/stdin", "hello"], { home, stdin: "Answer in one line.\n" });
  expect(r.code).toBe(0);
  const log = (await cachet(["export"], { home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  expect(log.find((l) => l.type === "prefix").prefix.prefix.system.map((s: { text: string }) => s.text)).toEqual(["Answer in one line.\n"]);
  expect(log.filter((l) => l.type === "message")[0].message.content).toEqual([{ type: "text", text: "hello" }]);
});

test.skipIf(process.platform !== "linux")("a file that says its size is 0 and holds text (procfs: -s @/proc/version) is read whole", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-s", "@/proc/version", "hello"], { home })).code).toBe(0);
  const log = (await cachet(["export"], { home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  expect(log.find((l) => l.type === "prefix").prefix.prefix.system[0].text).toStartWith("Linux version ");
});
