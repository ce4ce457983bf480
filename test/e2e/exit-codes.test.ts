/**
 * Exit codes as README.md's table gives them, and what a failing `--json`
 * run prints on stdout, through the binary: malformed JSON on the stdin of
 * `--tool-result -` is bad input (3); every failed `plugins add` is 1; a
 * `--json` run that fails with 2 or 3 prints one `error` line on stdout; a
 * rolled-back provider failure says `incomplete: false` in `error` and `done`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";

afterAll(cleanHomes);

test("--tool-result - with stdin that is not JSON: exit 3 (bad input), not 2", async () => {
  const r = await cachet(["--emulate", "--tool-result", "-"], { stdin: "not json" });
  expect(r.code).toBe(3);
  expect(r.stdout).toBe("");
  expect(r.stderr.split("\n")[0]).toBe("cachet: --tool-result -: stdin is not a JSON object of results {ID: result}");
});

test("plugins add: a missing path and a plugin that does not load both exit 1, nothing recorded", async () => {
  const home = freshHome();
  const missing = await cachet(["plugins", "add", join(home, "nope")], { home });
  expect(missing.code).toBe(1);
  expect(missing.stderr.split("\n")[0]).toBe(`cachet: no such file or directory: ${join(home, "nope")}`);
  const dir = join(home, "broken");
  mkdirSync(dir);
  writeFileSync(join(dir, "index.js"), 'export default { name: "broken", api: "^1", setup() { throw new Error("boom"); } };\n');
  const broken = await cachet(["plugins", "add", dir], { home });
  expect(broken.stderr.split("\n")[0]).toStartWith(`cachet: ${dir} does not load, nothing was installed: `);
  expect(broken.code).toBe(1);
  expect((await cachet(["plugins", "--json"], { home })).stdout).not.toContain("broken");
});

test("a --json run that fails with exit 2 or 3 prints one error line on stdout, the same message as stderr", async () => {
  const cases: Array<{ args: string[]; code: number; error: string; message: string }> = [
    { args: ["--emulate", "--json", "--fork=", "hi"], code: 2, error: "BAD_FLAG", message: "--fork= names no session" },
    { args: ["--emulate", "--json", "--tools", "/nonexistent/tools.json", "hi"], code: 3, error: "INPUT_INVALID", message: "--tools /nonexistent/tools.json: no such file" },
    { args: ["--emulate", "--json", "--frobnicate", "hi"], code: 2, error: "UNKNOWN_FLAG", message: "unknown flag --frobnicate for `cachet run`" },
  ];
  for (const c of cases) {
    const r = await cachet(c.args);
    expect({ args: c.args, code: r.code }).toEqual({ args: c.args, code: c.code });
    const list = events(r.stdout);
    expect(list).toEqual([{ type: "error", code: c.error, message: c.message, hint: expect.any(String), incomplete: false }]);
    expect(r.stderr.split("\n")[0]).toBe(`cachet: ${c.message}`);
  }
});

test("a rolled-back 503 under --json: error and done agree (incomplete false), exit 4, no second error line", async () => {
  const r = await cachet(["--emulate", "--json", "--retries", "0", "hi"], { env: { CACHET_EMULATOR_FAULT: "503" } });
  expect(r.code).toBe(4);
  const list = events(r.stdout);
  expect(ofType(list, "error")).toHaveLength(1);
  expect(ofType(list, "error")[0]).toMatchObject({ code: "PROVIDER_HTTP", incomplete: false });
  expect(list.at(-1)).toMatchObject({ type: "done", incomplete: false, finish_reason: null });
});
