/**
 * The CLI skeleton's contract, through the compiled binary (dist/cachet from
 * `npm run build:host`, which `npm test` runs first): version, help, and the
 * usage and config errors: one clear line (plus a hint), a non-zero exit,
 * nothing on stdout and nothing written to the state directory.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { version } from "../../package.json";
import { EXIT } from "../../src/errors.ts";
import { commands } from "../../src/cli/index.ts";

const BINARY = join(import.meta.dir, "..", "..", "dist", "cachet");
if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run \`npm run build:host\` (npm test does it first)`);

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function freshHome(): string {
  const home = mkdtempSync(join(tmpdir(), "cachet-e2e-cli-"));
  homes.push(home);
  return home;
}

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the binary with stdin closed, a fresh CACHET_HOME (unless given) and no provider keys. */
function cachet(args: string[], home = freshHome()): Result {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: home, CACHET_HOME: home, NO_COLOR: "1" };
  const proc = Bun.spawnSync([BINARY, ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 20_000 });
  return { code: proc.exitCode ?? -1, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

/** stderr as lines, without the trailing empty one. */
function lines(text: string): string[] {
  return text.split("\n").filter((l, i, all) => l !== "" || i < all.length - 1);
}

describe("cachet --version and --help", () => {
  test("--version prints the package version and nothing else", () => {
    const r = cachet(["--version"]);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  test("-v is --version", () => {
    expect(cachet(["-v"]).stdout).toBe(`${version}\n`);
  });

  test("--version is not a flag of any command: beside other flags it is refused and points at `cachet --version` alone, as the help says", () => {
    const help = cachet(["--help"]).stdout;
    expect(help).toContain("Global flags (any command, also before it): --quiet, --verbose, --debug, --help.");
    expect(help).toContain("`cachet --version` prints the version; it takes no other arguments.");
    for (const args of [["--emulate", "--version"], ["sessions", "--version"]]) {
      const home = freshHome();
      const r = cachet(args, home);
      const command = args[0] === "sessions" ? "sessions" : "run";
      expect({ args, code: r.code, stdout: r.stdout, first: lines(r.stderr)[0] }).toEqual({ args, code: EXIT.usage, stdout: "", first: `cachet: unknown flag --version for \`cachet ${command}\`` });
      expect(lines(r.stderr)[1]).toStartWith("  hint: `cachet --version` alone prints the version; ");
      expect(readdirSync(home)).toEqual([]);
    }
    expect(lines(cachet(["-q", "--version"]).stderr)).toEqual(["cachet: --version takes no other arguments", "  hint: run `cachet --version` alone"]);
  });

  test("--help lists every command with its description, on stdout", () => {
    const r = cachet(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain(`cachet ${version}`);
    for (const [name, entry] of Object.entries(commands)) {
      expect(r.stdout).toMatch(new RegExp(`^  ${name} +${entry.description.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
    }
  });
});

describe("usage errors: one line naming the problem, a hint, exit 2", () => {
  test("an unknown flag on the default command", () => {
    const home = freshHome();
    const r = cachet(["--frobnicate", "hello"], home);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stdout).toBe("");
    const [message, hint, ...rest] = lines(r.stderr);
    expect(message).toBe("cachet: unknown flag --frobnicate for `cachet run`");
    expect(hint).toStartWith("  hint: ");
    expect(rest).toEqual([]);
    expect(readdirSync(home)).toEqual([]);
  });

  test("an unknown flag on a subcommand names the subcommand", () => {
    const r = cachet(["plugins", "--frobnicate"]);
    expect(r.code).toBe(EXIT.usage);
    expect(lines(r.stderr)[0]).toBe("cachet: unknown flag --frobnicate for `cachet plugins`");
    expect(r.stdout).toBe("");
  });

  test("a mistyped command gets a did-you-mean hint instead of being sent as a prompt", () => {
    const home = freshHome();
    const r = cachet(["sesions"], home);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stdout).toBe("");
    expect(lines(r.stderr)).toEqual([
      'cachet: unknown command "sesions"',
      '  hint: did you mean `cachet sessions`? To send "sesions" as a prompt, use `cachet run sesions` or put it after `--`',
    ]);
    expect(readdirSync(home)).toEqual([]);
  });
});

describe("global flags before a command, the lone-word guard and `--`", () => {
  test("global flags before a command run the command (-q sessions, --debug --verbose sessions)", () => {
    for (const args of [["-q", "sessions"], ["--debug", "--verbose", "sessions"], ["--quiet", "sessions", "-q"]]) {
      const r = cachet(args);
      expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 0, stdout: "no sessions yet\n", stderr: "" });
    }
  });

  test("a lone prompt word equal to a command after run flags is refused, nothing sent or stored", () => {
    const home = freshHome();
    const r = cachet(["--emulate", "sessions"], home);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stdout).toBe("");
    expect(lines(r.stderr)).toEqual([
      'cachet: "sessions" is a command: it must come first, before other flags',
      '  hint: `cachet sessions` runs the command. To send "sessions" as a prompt, use `cachet run --emulate sessions` or put it after `--`',
    ]);
    expect(readdirSync(home)).toEqual([]);
  });

  test("a lone prompt word close to a command after flags (and a flag's value) is refused", () => {
    for (const args of [["--emulate", "sesions"], ["-q", "sesions"], ["-m", "anthropic/claude-sonnet-4-6", "--emulate", "sesions"]]) {
      const home = freshHome();
      const r = cachet(args, home);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: EXIT.usage, stdout: "" });
      expect(lines(r.stderr)).toEqual([
        'cachet: unknown command "sesions"',
        `  hint: did you mean \`cachet sessions\`? To send "sesions" as a prompt, use \`cachet run ${args.join(" ")}\` or put it after \`--\``,
      ]);
      expect(readdirSync(home)).toEqual([]);
    }
  });

  test("help and version are guarded as commands are: a lone help, hepl, halp or version is refused, nothing sent or stored", () => {
    const cases: [string[], string, string][] = [
      [["--emulate", "--no-store", "help"], 'cachet: "help" is a command: it must come first, before other flags', "`cachet help` runs the command."],
      [["--emulate", "hepl"], 'cachet: unknown command "hepl"', "did you mean `cachet help`?"],
      [["--emulate", "halp"], 'cachet: unknown command "halp"', "did you mean `cachet help`?"],
      [["--emulate", "version"], 'cachet: unknown command "version"', "did you mean `cachet --version`?"],
    ];
    for (const [args, message, start] of cases) {
      const home = freshHome();
      const r = cachet(args, home);
      const word = args.at(-1)!;
      expect({ args, code: r.code, stdout: r.stdout, stderr: lines(r.stderr) }).toEqual({
        args,
        code: EXIT.usage,
        stdout: "",
        stderr: [message, `  hint: ${start} To send "${word}" as a prompt, use \`cachet run ${args.join(" ")}\` or put it after \`--\``],
      });
      expect(readdirSync(home)).toEqual([]);
    }
  });

  test("`cachet run WORD` and `cachet -- WORD` send a command's name as the prompt", () => {
    for (const args of [["run", "--emulate", "sessions"], ["--emulate", "--", "sessions"]]) {
      const home = freshHome();
      const r = cachet(args, home);
      expect({ args, code: r.code }).toEqual({ args, code: 0 });
      expect(r.stdout.length).toBeGreaterThan(0);
      expect(userTexts(home)).toEqual(["sessions"]);
    }
  });

  test("words after `--` are prompt text: -c is sent, not taken as --continue", () => {
    const home = freshHome();
    expect(cachet(["--emulate", "first"], home).code).toBe(0);
    const r = cachet(["--emulate", "--", "explain", "the", "-c", "flag"], home);
    expect(r.code).toBe(0);
    // A new session (not a continuation of "first") whose one user message holds "-c".
    expect(userTexts(home)).toEqual(["explain the -c flag"]);
    expect(cachet(["sessions"], home).stdout.trim().split("\n").length).toBe(3);
  });
});

/** The user messages' texts of the latest session, from `cachet export`. */
function userTexts(home: string): string[] {
  const r = cachet(["export"], home);
  expect(r.code).toBe(0);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === "message" && e.message.role === "user")
    .map((e) => e.message.content.map((c: { text: string }) => c.text).join(""));
}

describe("config errors: one clear line naming the file, non-zero exit, nothing written", () => {
  // `plugins` reads the config and touches nothing else; `--emulate` is the default command's path.
  const readers: Array<{ name: string; args: string[] }> = [
    { name: "cachet plugins", args: ["plugins"] },
    { name: "cachet --emulate PROMPT", args: ["--emulate", "hello"] },
  ];

  for (const reader of readers) {
    test(`malformed TOML (${reader.name})`, () => {
      const home = freshHome();
      const config = join(home, "config.toml");
      writeFileSync(config, 'model = "anthropic/claude-sonnet-4-5"\n[cache\nmode = "auto"\n');
      const r = cachet(reader.args, home);
      expect(r.code).toBe(EXIT.input);
      expect(r.stdout).toBe("");
      const [message, hint, ...rest] = lines(r.stderr);
      // The second line opens the table that never closes: named by its line, which Bun's parser does not give.
      expect(message).toStartWith(`cachet: malformed TOML in ${config}:2: `);
      expect(hint).toStartWith("  hint: ");
      expect(rest).toEqual([]);
      expect(readdirSync(home)).toEqual(["config.toml"]);
    });

    test(`unreadable config: a directory named config.toml (${reader.name})`, () => {
      // Tests run as root here, so chmod 000 would not stop a read; a directory always does.
      const home = freshHome();
      const config = join(home, "config.toml");
      mkdirSync(config);
      const r = cachet(reader.args, home);
      expect(r.code).toBe(EXIT.input);
      expect(r.stdout).toBe("");
      const [message, hint, ...rest] = lines(r.stderr);
      expect(message).toBe(`cachet: config ${config}: is a directory, not a file`);
      expect(hint).toBe("  hint: make it a file cachet can read (or move it away to run without a config), or set CACHET_HOME to use another state directory");
      expect(rest).toEqual([]);
      expect(readdirSync(home)).toEqual(["config.toml"]);
      expect(readdirSync(config)).toEqual([]);
    });

    test(`an unknown key is named with the file (${reader.name})`, () => {
      const home = freshHome();
      const config = join(home, "config.toml");
      writeFileSync(config, '[cache]\nttl = "2h"\n');
      const r = cachet(reader.args, home);
      expect(r.code).toBe(EXIT.input);
      expect(r.stdout).toBe("");
      expect(lines(r.stderr)[0]).toStartWith(`cachet: invalid config key "cache.ttl" in ${config}: `);
      expect(readdirSync(home)).toEqual(["config.toml"]);
    });

    test(`a [providers.ID] table no plugin registers is an unknown key (${reader.name}); a known one is fine`, () => {
      const home = freshHome();
      const config = join(home, "config.toml");
      writeFileSync(config, '[providers.anthropic]\nbase_url = "http://127.0.0.1:9"\n\n[providers.nosuch]\nbase_url = "http://127.0.0.1:9"\n');
      const r = cachet(reader.args, home);
      expect(r.code).toBe(EXIT.input);
      expect(r.stdout).toBe("");
      const [message, hint, ...rest] = lines(r.stderr);
      expect(message).toBe(`cachet: invalid config key "providers.nosuch" in ${config}: no plugin registers provider "nosuch"`);
      expect(hint).toStartWith("  hint: the providers are alibaba, anthropic, ");
      expect(rest).toEqual([]);
      expect(readdirSync(home)).toEqual(["config.toml"]);
      writeFileSync(config, '[providers.openai-responses]\nincremental = true\n');
      expect(cachet(reader.args, home).code).toBe(0);
    });
  }
});
