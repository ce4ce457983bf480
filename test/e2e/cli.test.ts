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
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CACHET_HOME: home, NO_COLOR: "1" };
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
      '  hint: did you mean `cachet sessions`? To send "sesions" as a prompt, use `cachet run sesions`',
    ]);
    expect(readdirSync(home)).toEqual([]);
  });
});

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
      expect(message).toStartWith(`cachet: malformed TOML in ${config}: `);
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
      expect(hint).toStartWith("  hint: ");
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
  }
});
