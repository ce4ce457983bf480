/**
 * A broken config.toml (malformed TOML: CONFIG_UNREADABLE; a wrong value: CONFIG_INVALID) across the read-only
 * commands, through the compiled binary. Every command that reads the config refuses it as a turn does (exit 3, the
 * turn's very line), whatever its flags and whatever is stored; the commands that never read it (they show what is
 * stored, or the daemon's state) answer as they do without it. Nothing stored is lost either way.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(cleanHomes);

let home: string;
let stored: string;
let session: string;

beforeAll(async () => {
  home = freshHome();
  expect((await cachet(["--emulate", "remember the good turn"], { home })).code).toBe(0);
  stored = (await cachet(["export"], { home })).stdout;
  session = (JSON.parse((await cachet(["sessions", "--json"], { home })).stdout) as { id: string }).id;
  writeFileSync(join(home, "usage.json"), JSON.stringify({ input_tokens: 1000, output_tokens: 50 }));
  writeFileSync(join(home, "schema.json"), JSON.stringify({ type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false }));
});

/** The first stderr line that carries text. */
function firstLine(stderr: string): string | undefined {
  return stderr.split("\n").find((l) => l.trim() !== "");
}

/** Commands that read the config: each refuses a broken one. */
const REFUSING: ((home: string) => string[])[] = [
  () => ["cost"],
  () => ["cost", "--json"],
  () => ["cost", "--tree"],
  () => ["stats"],
  () => ["stats", "--by", "model", "--json"],
  () => ["stats", "--budget"],
  () => ["why"],
  () => ["models"],
  () => ["models", "--provider", "openai"],
  () => ["compact", "--emulate"],
  (h) => ["price", "--model", "anthropic/claude-sonnet-4-6", "--usage", join(h, "usage.json")],
  (h) => ["schema", "check", join(h, "schema.json"), "--provider", "openai"],
];

/** Commands that never read the config: stored sessions, the daemon's state, the price catalog. */
const SILENT: string[][] = [["sessions"], ["sessions", "show", "--json"], ["export"], ["daemon", "status"], ["prices", "reset"]];

const BROKEN = [
  { name: "malformed TOML", text: "[compaction\nenabled = ", line: (path: string) => new RegExp(`^cachet: malformed TOML in ${path.replaceAll(".", "\\.")}:1: TOML Parse error: .+`) },
  { name: "a wrong value", text: 'hook_timeout = "x"\n', line: (path: string) => new RegExp(`^cachet: invalid config key "hook_timeout" in ${path.replaceAll(".", "\\.")}: Invalid type: Expected number but received "x"$`) },
];

for (const broken of BROKEN) {
  describe(`a config.toml with ${broken.name}`, () => {
    const path = () => join(home, "config.toml");
    const quiet = new Map<string, { code: number; stdout: string; stderr: string }>();
    let turnLine: string | undefined;

    beforeAll(async () => {
      // What the silent commands answer without a config, to compare with.
      for (const args of SILENT) quiet.set(args.join(" "), await cachet(args, { home }));
      writeFileSync(path(), broken.text);
      const turn = await cachet(["--emulate", "hi"], { home });
      expect({ code: turn.code, stdout: turn.stdout }).toEqual({ code: 3, stdout: "" });
      turnLine = firstLine(turn.stderr);
      expect(turnLine).toMatch(broken.line(path()));
    });

    afterAll(async () => {
      rmSync(path());
      // Nothing stored was lost: the session is still listed and exports as it did before.
      const listed = (await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n").map((l) => (JSON.parse(l) as { id: string }).id);
      expect(listed).toEqual([session]);
      expect((await cachet(["export"], { home })).stdout).toBe(stored);
    });

    for (const argsIn of REFUSING) {
      test(`cachet ${argsIn("HOME").join(" ")}: exit 3, the turn's line`, async () => {
        const r = await cachet(argsIn(home), { home });
        expect({ code: r.code, stdout: r.stdout, line: firstLine(r.stderr) }).toEqual({ code: 3, stdout: "", line: turnLine });
        expect(r.stderr.split("\n")[1]).toStartWith("  hint: ");
      });
    }

    test("refused whatever is stored: cost, stats and why in a home with no store, cost of a session that does not exist", async () => {
      const empty = freshHome();
      writeFileSync(join(empty, "config.toml"), broken.text);
      for (const [args, where] of [[["cost"], empty], [["stats", "--session", "nope"], empty], [["why"], empty], [["cost", "s_nosuchsession"], home]] as const) {
        const r = await cachet([...args], { home: where });
        expect({ args, code: r.code, line: firstLine(r.stderr) }).toMatchObject({ args, code: 3, line: expect.stringMatching(broken.line(join(where, "config.toml"))) });
      }
    });

    for (const args of SILENT) {
      test(`cachet ${args.join(" ")}: answers as without the config (it never reads it)`, async () => {
        expect(await cachet(args, { home })).toEqual(quiet.get(args.join(" "))!);
      });
    }
  });
}
