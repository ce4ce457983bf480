/**
 * A third-party plugin calling process.exit through the compiled binary: the
 * call is refused with an error, so the guard reports it as it reports a
 * throw at the same place (one line naming the plugin and the call, the same
 * exit code, a --json error line, the ledger settled the same way), never the
 * plugin's exit code with nothing said. Installs and `plugins test` fail with
 * one line and leave no staging directory behind.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pluginDir, statePaths } from "../../src/paths.ts";
import { cachet, cleanHomes, events, freshHome, ofType, type Run } from "./harness.ts";

afterAll(cleanHomes);

const REFUSED = "a plugin must throw an error instead of ending the process";

/** A plugin file in `home` whose `hook` handler runs `body`. */
function hookPlugin(home: string, file: string, hook: string, body: string): string {
  const path = join(home, file);
  writeFileSync(path, `export default { name: "hx", api: "^1", setup(api) { api.hook(${JSON.stringify(hook)}, () => { ${body}; }); } };\n`);
  return path;
}

/** What a run left: exit code, the --json lines' types, the error line's code, and the ledger's and messages' state. */
async function outcome(home: string, run: Run): Promise<Record<string, unknown>> {
  const list = events(run.stdout);
  const exported = await cachet(["export"], { home });
  expect(exported.code).toBe(0);
  const lines = exported.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { type: string; request?: { status: string }; message?: { role: string } });
  return {
    code: run.code,
    types: list.map((e) => e.type).filter((t) => t !== "text"),
    error: ofType(list, "error")[0]?.code,
    requests: lines.filter((l) => l.type === "request").map((l) => l.request!.status),
    roles: lines.filter((l) => l.type === "message").map((l) => l.message!.role),
  };
}

describe("process.exit in a hook is reported as a throw there is", () => {
  const cases: [hook: string, code: number, args: string[]][] = [
    ["request:before", 0, ["--session", "he"]],
    ["request:before", 7, ["--session", "he"]],
    ["response:event", 0, ["--session", "he"]],
    ["usage:record", 3, ["--session", "he"]],
    ["session:fork", 9, ["--session", "par", "--fork"]],
  ];
  test.each(cases)("%s, process.exit(%d)", async (hook, code, args) => {
    const results: Record<string, unknown>[] = [];
    const runs: Run[] = [];
    for (const body of [`process.exit(${code})`, 'throw new Error("stop")']) {
      const home = freshHome();
      // A parent session for the fork, stored before the plugin loads.
      expect((await cachet(["--emulate", "-q", "--session", "par", "base"], { home })).code).toBe(0);
      const env = { CACHET_PLUGINS: hookPlugin(home, "hx.mjs", hook, body) };
      const run = await cachet(["--emulate", "--json", ...args, "hi"], { home, env });
      runs.push(run);
      results.push(await outcome(home, run));
    }
    const [exited, threw] = results as [Record<string, unknown>, Record<string, unknown>];
    expect(exited).toEqual(threw);
    expect(exited.requests).not.toContain("in_flight");
    const message = `hx: hook ${hook} called process.exit(${code}); ${REFUSED}`;
    const stderr = runs[0]!.stderr.split("\n").filter(Boolean);
    expect(stderr[0]!.replace(/^cachet: |^\[warn\] /, "")).toBe(message);
    expect(runs[0]!.stderr).not.toMatch(/\$bunfs|internal error/);
    const error = ofType(events(runs[0]!.stdout), "error")[0];
    if (threw.error !== undefined) expect(error?.message).toBe(message);
    // Whichever way each hook's failure ends the turn, a json run says how: an error line or a done line.
    expect((exited.types as string[]).some((t) => t === "error" || t === "done")).toBe(true);
  }, 60_000);

  test("process.exitCode set in request:before is put back and fails the hook: exit 1 naming it, not the plugin's code after a stored answer", async () => {
    const home = freshHome();
    const threwHome = freshHome();
    // A session of its own in each store, so that export has one to read after the refused first turn left nothing.
    for (const h of [home, threwHome]) expect((await cachet(["--emulate", "-q", "--session", "par", "base"], { home: h })).code).toBe(0);
    const env = { CACHET_PLUGINS: hookPlugin(home, "hx.mjs", "request:before", "process.exitCode = 7") };
    const run = await cachet(["--emulate", "--json", "--session", "he", "hi"], { home, env });
    const threw = await cachet(["--emulate", "--json", "--session", "he", "hi"], { home: threwHome, env: { CACHET_PLUGINS: hookPlugin(threwHome, "hx.mjs", "request:before", 'throw new Error("stop")') } });
    expect(await outcome(home, run)).toEqual(await outcome(threwHome, threw));
    expect(run.code).toBe(1);
    expect(run.stderr.split("\n")[0]).toBe(`cachet: hx: hook request:before called process.exitCode = 7; ${REFUSED}`);
  }, 60_000);

  test("usage:record in a plain run: the answer keeps its final newline, exit 0, one warning", async () => {
    const home = freshHome();
    const env = { CACHET_PLUGINS: hookPlugin(home, "hx.mjs", "usage:record", "process.exit(3)") };
    const r = await cachet(["--emulate", "hi"], { home, env });
    expect(r.code).toBe(0);
    expect(r.stdout).toEndWith("\n");
    expect(r.stdout.length).toBeGreaterThan(1);
    expect(r.stderr).toBe(`[warn] hx: hook usage:record called process.exit(3); ${REFUSED}\n`);
  }, 60_000);
});

describe("process.exit in setup fails the plugin as a throw in setup does", () => {
  const file = (home: string, body: string) => {
    const path = join(home, "sx.mjs");
    writeFileSync(path, `export default { name: "sx", api: "^1", setup(api) { ${body}; } };\n`);
    return path;
  };
  test("a run goes on without it and says so; plugins list exits 1 naming it", async () => {
    const home = freshHome();
    const env = { CACHET_PLUGINS: file(home, "process.exit(0)") };
    const run = await cachet(["--emulate", "--json", "hi"], { home, env });
    expect(run.code).toBe(0);
    expect(ofType(events(run.stdout), "done")).toHaveLength(1);
    expect(run.stderr).toContain(`plugin "sx" (${env.CACHET_PLUGINS}) failed to load: sx: setup() called process.exit(0); ${REFUSED}`);
    const list = await cachet(["plugins", "list"], { home, env });
    expect(list.code).toBe(1);
    expect(list.stdout).toContain(`FAILED sx: plugin "sx" (${env.CACHET_PLUGINS}) failed to load: sx: setup() called process.exit(0); ${REFUSED}`);
    const thrown = await cachet(["plugins", "list"], { home, env: { CACHET_PLUGINS: file(home, 'throw new Error("stop")') } });
    expect(thrown.code).toBe(list.code);
  }, 60_000);

  test("process.exitCode set in setup fails the plugin and leaves cachet's exit code its own", async () => {
    const home = freshHome();
    const env = { CACHET_PLUGINS: file(home, "process.exitCode = 9") };
    const run = await cachet(["--emulate", "hi"], { home, env });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`sx: setup() called process.exitCode = 9; ${REFUSED}`);
    const tested = await cachet(["plugins", "test", env.CACHET_PLUGINS], { home });
    expect(tested.code).toBe(1);
  }, 60_000);

  test("process.reallyExit and process.abort are refused too", async () => {
    const home = freshHome();
    for (const [body, call] of [["process.reallyExit(0)", "process.reallyExit(0)"], ["process.abort()", "process.abort()"]] as const) {
      const list = await cachet(["plugins", "list"], { home, env: { CACHET_PLUGINS: file(home, body) } });
      expect({ code: list.code, failed: list.stdout.includes(`sx: setup() called ${call}; ${REFUSED}`) }).toEqual({ code: 1, failed: true });
    }
  }, 60_000);
});

test("process.exit from a timer, outside any call into the plugin: one line naming no plugin, exit 1", async () => {
  const home = freshHome();
  const path = join(home, "tx.mjs");
  // The module's timer fires while the request:before hook is still waiting, so the run is under way.
  writeFileSync(path, 'let fire; const fired = new Promise((r) => (fire = r)); setTimeout(() => { fire(); process.exit(5); }, 0);\nexport default { name: "tx", api: "^1", setup(api) { api.hook("request:before", () => fired.then(() => new Promise(() => {}))); } };\n');
  const run = await cachet(["--emulate", "--json", "hi"], { home, env: { CACHET_PLUGINS: path } });
  expect(run.code).toBe(1);
  expect(run.stderr.split("\n")).toEqual([`cachet: a plugin called process.exit(5); ${REFUSED}`, expect.stringMatching(/^  hint: /), ""]);
}, 60_000);

describe("plugins add, test and update: a setup calling process.exit is a failed plugin, and no staging directory stays", () => {
  const project = (home: string, body: string): string => {
    const dir = join(home, "proj");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "index.js"), `export default { name: "px", api: "^1", setup(api) { ${body}; } };\n`);
    return dir;
  };
  const staging = (home: string) => join(pluginDir(statePaths({ CACHET_HOME: home })), ".staging");

  test("add and test", async () => {
    const home = freshHome();
    const dir = project(home, "process.exit(4)");
    const added = await cachet(["plugins", "add", dir], { home });
    expect(added.code).toBe(1);
    expect(added.stderr.split("\n")[0]).toBe(`cachet: ${dir} does not load, nothing was installed: plugin "px" (${dir}) failed to load: px: setup() called process.exit(4); ${REFUSED}`);
    expect(existsSync(staging(home))).toBe(false);
    const tested = await cachet(["plugins", "test", dir], { home });
    expect(tested.code).toBe(1);
    expect(tested.stdout + tested.stderr).toContain(`px: setup() called process.exit(4); ${REFUSED}`);
    expect((await cachet(["plugins", "--json"], { home })).stdout).not.toContain('"px"');
  }, 60_000);

  test("update keeps the installed bundle; a later update removes leftovers of crashed installs, and only those", async () => {
    const home = freshHome();
    const dir = project(home, "");
    expect((await cachet(["plugins", "add", dir], { home })).code).toBe(0);
    const installed = join(pluginDir(statePaths({ CACHET_HOME: home })), "px.js");
    const before = readFileSync(installed, "utf8");
    project(home, "process.exit(4)");
    const updated = await cachet(["plugins", "update"], { home });
    expect(updated.code).toBe(1);
    expect(updated.stderr.split("\n")[0]).toContain(`px: setup() called process.exit(4); ${REFUSED}`);
    expect(readFileSync(installed, "utf8")).toBe(before);
    expect(existsSync(staging(home))).toBe(false);
    // What a crashed install of an older cachet (add-XXXXXX) and of this one (add-PID-XXXXXX, its process gone) left,
    // an install under way in a live process (this test's), and a directory cachet did not make.
    const root = staging(home);
    for (const name of ["add-Ab12Cd", "add-4194305-Zz9x0q", `add-${process.pid}-live01`, "notes"]) {
      mkdirSync(join(root, name), { recursive: true });
      writeFileSync(join(root, name, "plugin.js"), "");
    }
    project(home, "");
    expect((await cachet(["plugins", "update"], { home })).code).toBe(0);
    expect(readdirSync(root).sort()).toEqual([`add-${process.pid}-live01`, "notes"]);
  }, 60_000);
});
