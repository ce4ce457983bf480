/**
 * Words a command does not take are usage errors, never silently dropped
 * (`cachet compact review` must not compact the latest session), and
 * `cachet help` reads its own command line the same way.
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(cleanHomes);

test("a word past a command's positionals (before or after --): exit 2, the word and what to do on stderr, nothing on stdout (compact sends nothing)", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "review", "hello"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "--session", "other", "hello"], { home })).code).toBe(0);
  const cases: [string[], string, string][] = [
    [["compact", "review", "--emulate"], 'cachet: cachet compact takes no word "review"', "  hint: to name a session use --session review"],
    [["compact", "--", "review"], 'cachet: cachet compact takes no word "review"', "  hint: to name a session use --session review"],
    [["models", "--", "-p"], 'cachet: cachet models takes no word "-p"', "  hint: run `cachet models --help` for what it takes"],
    [["stats", "--session", "review", "extra"], 'cachet: cachet stats takes no word "extra"', "  hint: run `cachet stats --help` for what it takes"],
    [["cost", "review", "extra"], 'cachet: cachet cost takes at most one word; "extra" is one too many', "  hint: to send it as a prompt: cachet run cost review extra (or cachet -- cost review extra); run `cachet cost --help` for what it takes"],
    [["schema", "check", "F", "extra", "--provider", "openai"], 'cachet: cachet schema takes at most 2 words; "extra" is one too many', "  hint: run `cachet schema --help` for what it takes"],
    [["proxy", "--emulate", "extra"], 'cachet: cachet proxy takes no word "extra"', "  hint: run `cachet proxy --help` for what it takes"],
    [["plugins", "list", "extra"], 'cachet: `cachet plugins list` takes no word "extra"', "  hint: run `cachet plugins --help` for what each action takes"],
    [["sessions", "list", "extra"], 'cachet: `cachet sessions list` takes no word "extra"', "  hint: to see one session use `cachet sessions show SESSION`"],
    [["help", "cost", "extra"], 'cachet: cachet help takes one command; "extra" is one too many', "  hint: to send it as a prompt: cachet run help cost extra (or cachet -- help cost extra); run `cachet help COMMAND` for one command's help"],
    [["help", "sessions", "show", "extra"], 'cachet: cachet help takes a command and one of its actions; "extra" is one too many', "  hint: to send it as a prompt: cachet run help sessions show extra (or cachet -- help sessions show extra); run `cachet help COMMAND` for one command's help"],
    [["help", "-q", "sessions", "extra"], 'cachet: unknown action "extra" for `cachet sessions`', "  hint: its actions: list, show, rm; run `cachet help sessions`"],
    [["help", "prices", "list"], 'cachet: unknown action "list" for `cachet prices`', "  hint: its actions: update, reset; run `cachet help prices`; to send it as a prompt: cachet run help prices list (or cachet -- help prices list)"],
  ];
  for (const [args, message, hint] of cases) {
    const r = await cachet(args, { home });
    expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 2, stdout: "", stderr: `${message}\n${hint}\n` });
  }
});

test("a prompt that starts with a command word (cachet why is the sky blue): exit 2 with the prompt reading as the hint, which sends it; a single stored session's name keeps the --session hint; help COMMAND ACTION shows the command's help", async () => {
  const home = freshHome();
  const cases: [string[], string, string][] = [
    [["why", "is", "the", "sky", "blue"], 'cachet: cachet why takes at most one word; "the" is one too many', "cachet run why is the sky blue (or cachet -- why is the sky blue); run `cachet why --help` for what it takes"],
    [["stats", "for", "nerds"], 'cachet: cachet stats takes no word "for"', "cachet run stats for nerds (or cachet -- stats for nerds); run `cachet stats --help` for what it takes"],
    [["compact", "this", "paragraph"], 'cachet: cachet compact takes no word "this"', "cachet run compact this paragraph (or cachet -- compact this paragraph); run `cachet compact --help` for what it takes"],
    [["export", "this", "table", "to", "csv"], 'cachet: cachet export takes at most one word; "table" is one too many', "cachet run export this table to csv (or cachet -- export this table to csv); run `cachet export --help` for what it takes"],
    [["help", "me", "write", "a", "poem"], 'cachet: unknown command "me"', "run `cachet --help` for the commands; to send it as a prompt: cachet run help me write a poem (or cachet -- help me write a poem)"],
  ];
  for (const [args, message, hint] of cases) {
    const r = await cachet(args, { home });
    expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
    const [line, hintLine] = r.stderr.split("\n");
    expect({ args, line }).toEqual({ args, line: message });
    expect(hintLine!.endsWith(hint)).toBe(true);
  }
  // The offered reading sends the prompt.
  const sent = await cachet(["--emulate", "run", "why", "is", "the", "sky", "blue"], { home });
  expect({ code: sent.code, stderr: sent.stderr }).toEqual({ code: 0, stderr: "" });
  expect(sent.stdout.length).toBeGreaterThan(0);
  const sessions = await cachet(["help", "sessions", "show"], { home });
  expect({ code: sessions.code, stdout: sessions.stdout }).toEqual({ code: 0, stdout: (await cachet(["sessions", "--help"], { home })).stdout });
});

test("help: `help help` is the root help, an unknown flag is refused, a global flag before the command is skipped", async () => {
  const home = freshHome();
  const root = await cachet(["--help"], { home });
  const helpHelp = await cachet(["help", "help"], { home });
  expect(helpHelp.code).toBe(0);
  expect(helpHelp.stdout).toBe(root.stdout);
  const bogus = await cachet(["help", "--bogus"], { home });
  expect(bogus.code).toBe(2);
  expect(bogus.stderr.split("\n")[0]).toBe("cachet: unknown flag --bogus for `cachet help`");
  const cost = await cachet(["help", "-q", "cost"], { home });
  expect(cost.code).toBe(0);
  expect(cost.stdout).toBe((await cachet(["cost", "--help"], { home })).stdout);
  expect(cost.stdout).toContain("USAGE cost");
});

test("a flag given to an action or mode that does not take it is refused (exit 2, naming the flag and what takes it), not ignored", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "review", "hello"], { home })).code).toBe(0);
  const cases: [string[], string, string][] = [
    [["sessions", "show", "--recorded"], "`cachet sessions show` takes no --recorded (it is for `cachet sessions list`)", "sessions"],
    [["sessions", "show", "review", "--force"], "`cachet sessions show` takes no --force (it is for `cachet sessions rm`)", "sessions"],
    [["sessions", "--force"], "`cachet sessions list` takes no --force (it is for `cachet sessions rm`)", "sessions"],
    [["sessions", "rm", "review", "--recorded"], "`cachet sessions rm` takes no --recorded (it is for `cachet sessions list`)", "sessions"],
    [["prices", "reset", "--from", "x.json"], "`cachet prices reset` takes no --from (it is for `cachet prices update`)", "prices"],
    [["prices", "reset", "--replace"], "`cachet prices reset` takes no --replace (it is for `cachet prices update`)", "prices"],
    [["stats", "--budget", "--by", "model"], "`cachet stats --budget` takes no --by (it is for `cachet stats`)", "stats"],
    [["stats", "--since", "7d", "--budget"], "`cachet stats --budget` takes no --since (it is for `cachet stats`)", "stats"],
    [["stats", "--emulate"], "`cachet stats` takes no --emulate (it is for `cachet stats --budget`)", "stats"],
  ];
  for (const [args, message, command] of cases) {
    const r = await cachet(args, { home });
    const flag = /--\w+/.exec(message.split("takes no ")[1]!)![0];
    expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 2, stdout: "", stderr: `cachet: ${message}\n  hint: leave ${flag} out, or run \`cachet ${command} --help\` for what each takes\n` });
  }
  // Nothing was removed, and each flag still works where it belongs.
  expect((await cachet(["sessions", "show", "review"], { home })).code).toBe(0);
  expect((await cachet(["sessions", "--recorded"], { home })).code).toBe(0);
  expect((await cachet(["stats", "--budget", "--emulate"], { home })).code).toBe(0);
  expect((await cachet(["sessions", "rm", "review", "--force", "-q"], { home })).code).toBe(0);
});

test("COMMAND --help takes what `cachet help COMMAND` takes: nothing, or one of its actions; a word more is refused (exit 2), not dropped", async () => {
  const home = freshHome();
  const cases: [string[], string, string][] = [
    [["run", "--help", "extra"], '`cachet run --help` takes no other words; "extra" is one too many', 'run `cachet run --help` alone for its help; to send a prompt, leave out --help (or put "--help" after `--`)'],
    [["hello", "--help"], '`cachet run --help` takes no other words; "hello" is one too many', 'run `cachet run --help` alone for its help; to send a prompt, leave out --help (or put "--help" after `--`)'],
    [["cost", "--help", "review"], '`cachet cost --help` takes no other words; "review" is one too many', "run `cachet cost --help` alone for its help"],
    [["sessions", "--help", "show", "x"], '`cachet sessions --help` takes at most one of its actions; "x" is one too many', "run `cachet sessions --help` alone or with one of its actions for its help"],
    [["sessions", "--help", "extra"], 'unknown action "extra" for `cachet sessions`', "its actions: list, show, rm; run `cachet help sessions`"],
  ];
  for (const [args, message, hint] of cases) {
    const r = await cachet(args, { home });
    expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 2, stdout: "", stderr: `cachet: ${message}\n  hint: ${hint}\n` });
    // The `help` form of the same words is refused too.
    const [command, , ...words] = args[0] === "hello" ? ["run", "--help", "hello"] : args;
    expect({ args, code: (await cachet(["help", command!, ...words], { home })).code }).toEqual({ args, code: 2 });
  }
  const action = await cachet(["sessions", "--help", "show"], { home });
  expect({ code: action.code, stdout: action.stdout }).toEqual({ code: 0, stdout: (await cachet(["help", "sessions", "show"], { home })).stdout });
  expect((await cachet(["--emulate", "--help"], { home })).code).toBe(0);
});
