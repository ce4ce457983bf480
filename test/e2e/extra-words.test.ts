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
    [["cost", "review", "extra"], 'cachet: cachet cost takes at most one word; "extra" is one too many', "  hint: run `cachet cost --help` for what it takes"],
    [["schema", "check", "F", "extra", "--provider", "openai"], 'cachet: cachet schema takes at most 2 words; "extra" is one too many', "  hint: run `cachet schema --help` for what it takes"],
    [["proxy", "--emulate", "extra"], 'cachet: cachet proxy takes no word "extra"', "  hint: run `cachet proxy --help` for what it takes"],
    [["plugins", "list", "extra"], 'cachet: `cachet plugins list` takes no word "extra"', "  hint: run `cachet plugins --help` for what each action takes"],
    [["sessions", "list", "extra"], 'cachet: `cachet sessions list` takes no word "extra"', "  hint: to see one session use `cachet sessions show SESSION`"],
    [["help", "cost", "extra"], 'cachet: cachet help takes at most one word; "extra" is one too many', "  hint: run `cachet help --help` for what it takes"],
  ];
  for (const [args, message, hint] of cases) {
    const r = await cachet(args, { home });
    expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 2, stdout: "", stderr: `${message}\n${hint}\n` });
  }
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
