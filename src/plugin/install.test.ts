/**
 * Which file `cachet plugins add/test` bundles for a directory
 * (src/plugin/install.ts, entryOf): a local project its sources, whether or
 * not its build output is there or current; a fetched package the built
 * file it ships; a stale build output used for want of a source entry is
 * found. A package.json that is not a valid manifest, or an entry outside
 * the package, is refused with one line naming the directory and the field,
 * as the loader refuses it (src/plugin/manifest.ts).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundlePlugin, entryOf, newerSource } from "./install.ts";

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
      expect(() => entryOf(dir, "build")).toThrow(`package.json in ${dir} ${problem}`);
    }
  });

  test("an entry outside the package directory is refused, even when the file exists", () => {
    const dir = project({ "package.json": JSON.stringify({ main: "../outside.js" }), "index.js": "export default {};\n" });
    writeFileSync(join(dir, "..", "outside.js"), "export default {};\n");
    expect(() => entryOf(dir, "build")).toThrow(`package.json in ${dir} has "main": "../outside.js", which is not a file inside the package directory ${dir}`);
  });

  test("a valid manifest picks its first existing built entry: exports conditions, module, main, then index.js", () => {
    const dir = project({ "package.json": JSON.stringify({ exports: { ".": { require: "./x.cjs", import: "./x.mjs" } }, main: "m.js" }), "x.mjs": "", "m.js": "" });
    expect(entryOf(dir, "build")).toEqual({ path: join(dir, "x.mjs"), built: true });
    const fallback = project({ "package.json": JSON.stringify({ main: "dist/missing.js" }), "index.js": "" });
    expect(entryOf(fallback, "build")).toEqual({ path: join(fallback, "index.js"), built: true });
  });
});

/** A plugin project as `cachet plugins new` lays it out (package.json's "source" optional: older scaffolds lack it), built or not. */
function scaffolded(options: { source: boolean; built: boolean }): string {
  const manifest = { name: "cachet-plugin-acme", version: "0.1.0", type: "module", main: "dist/index.js", ...(options.source ? { source: "src/index.ts" } : {}) };
  return project({
    "package.json": JSON.stringify(manifest),
    "src/index.ts": `import { base } from "./adapter";\nexport default { name: "acme", api: 1, setup() { void base; } };\n`,
    "src/adapter.ts": `export const base: string = "https://api.acme.invalid/v1";\n`,
    ...(options.built ? { "dist/index.js": `export default { name: "acme", api: 1, setup() {} };\n` } : {}),
  });
}

describe("a local project is bundled from its sources", () => {
  test("its source entry wins over its build output: the declared \"source\", the exports source condition, else src/index.ts", () => {
    for (const source of [true, false]) {
      const dir = scaffolded({ source, built: true });
      expect(entryOf(dir, "sources")).toEqual({ path: join(dir, "src", "index.ts"), built: false });
      // A package fetched from npm or a tarball ships its build: that is what it bundles.
      expect(entryOf(dir, "build")).toEqual({ path: join(dir, "dist", "index.js"), built: true });
    }
    const conditioned = project({ "package.json": JSON.stringify({ exports: { ".": { source: "./lib/plugin.ts", import: "./dist/index.js" } } }), "lib/plugin.ts": "", "dist/index.js": "" });
    expect(entryOf(conditioned, "sources")).toEqual({ path: join(conditioned, "lib", "plugin.ts"), built: false });
  });

  test("a project with only a built file bundles it", () => {
    const dir = project({ "package.json": JSON.stringify({ main: "dist/plugin.js", source: "src/missing.ts" }), "dist/plugin.js": "" });
    expect(entryOf(dir, "sources")).toEqual({ path: join(dir, "dist", "plugin.js"), built: true });
  });

  test("the same sources bundle to the same bytes with or without a (stale) build output; an edited source is bundled without a build", async () => {
    const dir = scaffolded({ source: false, built: true });
    const withDist = await bundlePlugin(dir, "acme", "sources");
    expect(withDist).toContain("https://api.acme.invalid/v1");
    rmSync(join(dir, "dist"), { recursive: true });
    expect(await bundlePlugin(dir, "acme", "sources")).toBe(withDist);
    writeFileSync(join(dir, "src", "adapter.ts"), `export const base: string = "https://api2.acme.invalid/v1";\n`);
    const edited = await bundlePlugin(dir, "acme", "sources");
    expect(edited).toBe(withDist.replace("https://api.acme.invalid/v1", "https://api2.acme.invalid/v1"));
  });

  test("a build output older than a file under src/ is found, naming the newest such file", () => {
    const dir = project({ "package.json": JSON.stringify({ main: "dist/index.js" }), "src/plugin.ts": "", "src/deep/util.ts": "", "dist/index.js": "", "index.js": "" });
    const at = (path: string, seconds: number) => utimesSync(join(dir, path), seconds, seconds);
    at("dist/index.js", 1_000);
    at("src/plugin.ts", 2_000);
    at("src/deep/util.ts", 3_000);
    at("index.js", 500);
    expect(newerSource(dir, join(dir, "dist", "index.js"))).toBe(join("src", "deep", "util.ts"));
    at("dist/index.js", 3_000);
    expect(newerSource(dir, join(dir, "dist", "index.js"))).toBeUndefined();
    // A file at the top of the project may be a source that imports src/: it is not called stale.
    expect(newerSource(dir, join(dir, "index.js"))).toBeUndefined();
  });
});
