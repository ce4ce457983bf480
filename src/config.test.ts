import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfigKept, tomlErrorLine } from "./config.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a resident process's config is parsed again when its text changes, even with the same size and modification time", async () => {
  const path = join(dir, "config.toml");
  writeFileSync(path, 'model = "openai/gpt-5"\n');
  const first = await loadConfigKept(path);
  expect(first).toEqual({ model: "openai/gpt-5" });
  // The same text: the parsed config is the one kept.
  expect(await loadConfigKept(path)).toBe(first);
  const { atime, mtime } = statSync(path);
  writeFileSync(path, 'model = "openai/gpt-4"\n');
  utimesSync(path, atime, mtime);
  expect(await loadConfigKept(path)).toEqual({ model: "openai/gpt-4" });
});

test("a kept config is not used for a file that is gone or no longer valid", async () => {
  const path = join(dir, "other.toml");
  writeFileSync(path, 'model = "openai/gpt-5"\n');
  await loadConfigKept(path);
  writeFileSync(path, 'model = "no slash"\n');
  await expect(loadConfigKept(path)).rejects.toMatchObject({ code: "CONFIG_INVALID" });
  // Still refused: the failed text was not kept, nor is the last good one used.
  await expect(loadConfigKept(path)).rejects.toMatchObject({ code: "CONFIG_INVALID" });
  rmSync(path);
  expect(await loadConfigKept(path)).toEqual({});
});

test("a config file replaced by another of the same size and times is parsed again", async () => {
  const path = join(dir, "replaced.toml");
  writeFileSync(path, 'model = "openai/gpt-5"\n');
  expect(await loadConfigKept(path)).toEqual({ model: "openai/gpt-5" });
  const { atime, mtime } = statSync(path);
  const next = join(dir, "replaced.next");
  writeFileSync(next, 'model = "openai/gpt-4"\n');
  utimesSync(next, atime, mtime);
  renameSync(next, path);
  expect(await loadConfigKept(path)).toEqual({ model: "openai/gpt-4" });
});

test("a directory where the config goes is refused, as without a kept config", async () => {
  await expect(loadConfigKept(dir)).rejects.toMatchObject({ code: "CONFIG_UNREADABLE" });
});

test("a TOML error is named by its line: a redefined key, a value missing, a table never closed, after a multi-line array, a string left open", () => {
  expect(tomlErrorLine("a = 1\nb = 2\na = 3\n")).toBe(3);
  expect(tomlErrorLine("x = 1\n\n[cache]\nttl = \n")).toBe(4);
  expect(tomlErrorLine("[compaction\nenabled = ")).toBe(1);
  expect(tomlErrorLine("arr = [\n 1,\n 2\n]\nbad = = 1\n")).toBe(5);
  // A construct that never closes is named by the line that opens it.
  expect(tomlErrorLine("ok = 1\narr = [\n 1,\n 2\n")).toBe(2);
  expect(tomlErrorLine('s = """\nmulti\n"""\nq = \'open\n')).toBe(4);
});
