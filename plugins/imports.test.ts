/**
 * The built-in plugins are written as a third party would write them: every
 * module under plugins/ (tests aside) imports from src/ only the public plugin
 * API, src/plugin/index.ts — the module published as `cachet-plugin-api`.
 * Everything else they import is npm packages or their own files.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const PLUGINS = import.meta.dir;
const ROOT = join(PLUGINS, "..");
const API = join(ROOT, "src", "plugin", "index.ts");

test("built-in plugins import nothing from src/ but the public plugin API", () => {
  const files = [...new Bun.Glob("**/*.ts").scanSync({ cwd: PLUGINS })].filter((f) => !f.endsWith(".test.ts"));
  expect(files.length).toBeGreaterThan(20);
  const outside: string[] = [];
  let apiImports = 0;
  for (const file of files) {
    const path = join(PLUGINS, file);
    for (const specifier of specifiers(readFileSync(path, "utf8"))) {
      if (!specifier.startsWith(".")) continue;
      const target = resolve(dirname(path), specifier);
      if (target === API) apiImports++;
      else if (!target.startsWith(PLUGINS + "/")) outside.push(`${file} imports ${relative(ROOT, target)}`);
    }
  }
  expect(outside).toEqual([]);
  expect(apiImports).toBeGreaterThan(10);
});

/** Every module specifier in a file: static imports and re-exports (type-only ones included) and dynamic imports. */
function specifiers(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
}
