/**
 * Which file `cachet plugins add/test` bundles for a directory
 * (src/plugin/install.ts, entryOf): a package.json that is not a valid
 * manifest, or an entry outside the package, is refused with one line naming
 * the directory and the field, as the loader refuses it (src/plugin/manifest.ts).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { entryOf } from "./install.ts";

/** A new package directory holding `files` (relative path → text). */
function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "cachet-install-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe("a package's manifest", () => {
  test("a package.json that is not an object, or has an entry field that is not a string, is refused naming the field", () => {
    for (const [text, problem] of [
      ["[1,2]", "holds an array, not a JSON object"],
      [JSON.stringify({ main: 5 }), 'has "main": 5, expected a string'],
      [JSON.stringify({ name: "x", dependencies: { dep: 1 } }), 'has "dependencies" → "dep": 1, expected a string'],
      ["{ nope", "is not valid JSON ("],
    ] as const) {
      const dir = project({ "package.json": text, "index.js": "export default {};\n" });
      expect(() => entryOf(dir)).toThrow(`package.json in ${dir} ${problem}`);
    }
  });

  test("an entry outside the package directory is refused, even when the file exists", () => {
    const dir = project({ "package.json": JSON.stringify({ main: "../outside.js" }), "index.js": "export default {};\n" });
    writeFileSync(join(dir, "..", "outside.js"), "export default {};\n");
    expect(() => entryOf(dir)).toThrow(`package.json in ${dir} has "main": "../outside.js", which is not a file inside the package directory ${dir}`);
  });

  test("a valid manifest picks its first existing built entry: exports conditions, module, main, then index.js", () => {
    const dir = project({ "package.json": JSON.stringify({ exports: { ".": { require: "./x.cjs", import: "./x.mjs" } }, main: "m.js" }), "x.mjs": "", "m.js": "" });
    expect(entryOf(dir)).toBe(join(dir, "x.mjs"));
    const fallback = project({ "package.json": JSON.stringify({ main: "dist/missing.js" }), "index.js": "" });
    expect(entryOf(fallback)).toBe(join(fallback, "index.js"));
  });
});
