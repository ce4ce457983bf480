/**
 * Where third-party plugins are found (src/plugin/loader.ts): a plugin named by
 * npm package resolves through its package.json, and a package.json that is not
 * JSON fails that plugin alone, named, never the command.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { externalPluginSources, loadPlugins } from "./loader.ts";

function home(): { env: Record<string, string>; packages: string } {
  const dir = mkdtempSync(join(tmpdir(), "cachet-loader-"));
  const packages = join(dir, "plugins", "node_modules");
  mkdirSync(packages, { recursive: true });
  return { env: { CACHET_HOME: dir }, packages };
}

describe("third-party plugin sources", () => {
  test("a package resolves to its package.json's entry (exports, then module, then main, else index.js)", () => {
    const { env, packages } = home();
    const conditions = { exports: { ".": { require: "./x.cjs", import: "./x.mjs" } }, main: "m.js" };
    for (const [name, manifest] of [["a", { exports: "./x.js", main: "m.js" }], ["b", { module: "mod.js", main: "m.js" }], ["c", { main: "m.js" }], ["d", conditions]] as const) {
      mkdirSync(join(packages, name));
      writeFileSync(join(packages, name, "package.json"), JSON.stringify(manifest));
    }
    const sources = externalPluginSources({ config: { plugins: ["a", "b", "c", "d", "e"] }, env });
    expect(sources).toEqual([
      { path: join(packages, "a", "x.js") },
      { path: join(packages, "b", "mod.js") },
      { path: join(packages, "c", "m.js") },
      { path: join(packages, "d", "x.mjs") },
      { path: join(packages, "e", "index.js") },
    ]);
  });

  test("a package.json that is not JSON fails that plugin with one line naming the file, and the built-in plugins still load", async () => {
    const { env, packages } = home();
    mkdirSync(join(packages, "broken"));
    writeFileSync(join(packages, "broken", "package.json"), "{ not json");
    const host = await loadPlugins({ config: { plugins: ["broken"] }, env });
    expect(host.failures).toHaveLength(1);
    expect(host.failures[0]!.plugin).toBe(join(packages, "broken", "package.json"));
    expect(host.failures[0]!.message).toStartWith(`plugin package broken: ${join(packages, "broken", "package.json")} is not valid JSON (`);
    expect(host.failures[0]!.message).not.toContain("\n");
    expect(host.providers.has("anthropic")).toBe(true);
  });

  test("a package.json that is JSON but not a manifest, or whose entry leaves the package, fails that plugin with one line naming the package and the field", async () => {
    const { env, packages } = home();
    const cases: Record<string, [string, string]> = {
      list: ["[1,2]", "holds an array, not a JSON object"],
      numbered: [JSON.stringify({ main: 5 }), 'has "main": 5, expected a string'],
      exported: [JSON.stringify({ exports: 7 }), 'has "exports": 7, expected a path, an array, an object of subpaths or conditions, or null'],
      escaping: [JSON.stringify({ main: "../../../../../../etc/passwd" }), `has "main": "../../../../../../etc/passwd", which is not a file inside the package directory ${join(packages, "escaping")}`],
      absolute: [JSON.stringify({ exports: { ".": { import: "/etc/passwd" } } }), `has "exports": "/etc/passwd", which is not a file inside the package directory ${join(packages, "absolute")}`],
    };
    for (const [name, [text]] of Object.entries(cases)) {
      mkdirSync(join(packages, name));
      writeFileSync(join(packages, name, "package.json"), text);
    }
    const host = await loadPlugins({ config: { plugins: Object.keys(cases) }, env });
    const hint = (name: string) => `; hint: reinstall the package or remove "${name}" from plugins in the config`;
    expect(host.failures).toEqual(Object.entries(cases).map(([name, [, problem]]) => ({ plugin: join(packages, name, "package.json"), message: `plugin package ${name}: ${join(packages, name, "package.json")} ${problem}${hint(name)}` })));
    // Nothing outside was imported, and the built-in plugins loaded.
    expect(host.plugins.every((p) => p.source.startsWith("builtin:"))).toBe(true);
    expect(host.providers.has("anthropic")).toBe(true);
  });
});
