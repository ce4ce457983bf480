/**
 * A working directory removed after the shell entered it: commands that need
 * none run (state is under an absolute CACHET_HOME); a relative path that
 * needs one is refused with one line saying so. The binary is built with an
 * exec argv (build/build.ts): without one, Bun's compiled executables exit
 * before any of cachet's code runs.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, cleanHomes, freshHome, type Run, homeEnv } from "./harness.ts";

afterAll(cleanHomes);

/** Runs the binary from a directory the shell removes right before starting it. */
async function inRemovedDirectory(args: string[], home: string, env: Record<string, string> = {}): Promise<Run> {
  const gone = mkdtempSync(join(tmpdir(), "cachet-gone-"));
  const proc = Bun.spawn(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", gone, BINARY, ...args], {
    env: { ...homeEnv(home), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

test.skipIf(process.platform === "win32")("commands that need no working directory run in a removed one", async () => {
  const home = freshHome();
  const version = await inRemovedDirectory(["--version"], home);
  expect(version).toMatchObject({ code: 0, stderr: "" });
  expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  const system = join(home, "system.txt");
  writeFileSync(system, "be brief");
  const turn = await inRemovedDirectory(["--emulate", "-s", `@${system}`, "hello"], home);
  expect(turn.stderr).toBe("");
  expect(turn.code).toBe(0);
  // A plugin named by its absolute path is bundled and tested (the bundler runs in the plugin's directory).
  const plugin = join(home, "okp.js");
  writeFileSync(plugin, 'export default { name: "okp", api: "^1", setup() {} };\n');
  const tested = await inRemovedDirectory(["plugins", "test", plugin], home);
  expect({ code: tested.code, stdout: tested.stdout, stderr: tested.stderr }).toEqual({ code: 0, stdout: "passed: okp, 0 of 0 checks\n", stderr: "" });
  for (const args of [["sessions"], ["cost"], ["stats"], ["plugins", "list"]]) {
    const r = await inRemovedDirectory(args, home);
    expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
  }
});

test.skipIf(process.platform === "win32")("a relative path in a removed working directory is one line saying so", async () => {
  const home = freshHome();
  const system = await inRemovedDirectory(["--emulate", "-s", "@system.txt", "hello"], home);
  expect(system.code).toBe(3);
  expect(system.stderr).toBe("cachet: --system @system.txt: a relative path, and the current working directory no longer exists\n  hint: cd into an existing directory and run the command again, or give an absolute path\n");
  const plugin = await inRemovedDirectory(["plugins", "test", "./acme"], home);
  expect(plugin.code).toBe(1);
  expect(plugin.stderr.split("\n")[0]).toBe('cachet: the current working directory no longer exists (ENOENT), and the relative path "./acme" needs it');
  // A relative CACHET_PLUGINS entry is that plugin's load failure (a warning), not the turn's.
  const listed = await inRemovedDirectory(["plugins", "list"], home, { CACHET_PLUGINS: "acme.js" });
  expect(listed.code).toBe(1);
  expect(listed.stderr + listed.stdout).toContain("CACHET_PLUGINS names the relative path acme.js, but the current working directory no longer exists");
});

test.skipIf(process.platform === "win32")("a relative CACHET_HOME or XDG directory in a removed working directory is that one line, exit 1, for a turn and for commands that only read", async () => {
  const home = freshHome();
  const line = (name: string, value: string) => `cachet: the current working directory no longer exists (ENOENT), and ${name}'s relative path "${value}" needs it`;
  for (const args of [["--emulate", "hi"], ["sessions"], ["cost"], ["daemon", "status"]]) {
    const r = await inRemovedDirectory(args, home, { CACHET_HOME: "relhome" });
    expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
      args,
      code: 1,
      stdout: "",
      stderr: `${line("CACHET_HOME", "relhome")}\n  hint: cd into an existing directory and run the command again, or give an absolute path\n`,
    });
  }
  // Without CACHET_HOME the XDG variables name the directories: a relative one is refused alike.
  const xdg = await inRemovedDirectory(["--emulate", "hi"], home, { CACHET_HOME: "", XDG_CONFIG_HOME: join(home, "config"), XDG_DATA_HOME: "reldata" });
  expect({ code: xdg.code, first: xdg.stderr.split("\n")[0] }).toEqual({ code: 1, first: line("XDG_DATA_HOME", "reldata") });
  // A command that reads no state directory still runs.
  expect((await inRemovedDirectory(["--version"], home, { CACHET_HOME: "relhome" })).code).toBe(0);
});
