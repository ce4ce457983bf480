/**
 * A third party's path, offline, through the compiled binary:
 * - `cachet plugins new acme` → its printed next steps, offline: the project
 *   installs the packed plugin API tarball it vendors (the bytes of
 *   dist/cachet-plugin-api-*.tgz, from `npm pack` in the build),
 *   type-checks with tsc (no Bun types) and bundles with bun build → passes
 *   `cachet plugins test` → `cachet plugins add ./acme` → answers
 *   `cachet --emulate -m acme/m1 "hi"` with a priced or flagged cost;
 * - `cachet plugins add` from an npm-registry-shaped fixture server on
 *   loopback (packument + tarballs, the plugin's dependency on the API
 *   package fetched too), integrity checked; a tampered tarball is refused
 *   and nothing is recorded; a tarball URL; `update`, `remove`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pluginApiTarball } from "../../build/plugin-api.ts";
import { API_VERSION } from "../../src/plugin/define-plugin.ts";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";

const ROOT = join(import.meta.dir, "..", "..");
const API_TARBALL = pluginApiTarball(join(ROOT, "dist"));
const BIN = join(ROOT, "node_modules", ".bin");

afterAll(cleanHomes);

function run(argv: string[], cwd: string, env: Record<string, string> = {}): { code: number; output: string } {
  const proc = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, PATH: `${BIN}:${process.env.PATH}`, npm_config_audit: "false", npm_config_fund: "false", ...env } });
  return { code: proc.exitCode, output: proc.stdout.toString() + proc.stderr.toString() };
}

test("plugins new → its printed next steps, offline (npm install of the vendored API tarball, bun build, plugins test) → tsc → plugins add → a priced or flagged answer; an edited source is a changed bundle without a build, dist/ or not", async () => {
  expect(existsSync(API_TARBALL)).toBe(true);
  const home = freshHome();
  const work = join(home, "work");
  mkdirSync(work);
  const created = await cachet(["plugins", "new", "acme"], { home, cwd: work });
  expect(created.code).toBe(0);
  const project = join(work, "acme");
  const vendored = `vendor/cachet-plugin-api-${API_VERSION}.tgz`;
  expect(created.stdout.split("\n").filter(Boolean).map((l) => l.slice(project.length + 1)).sort()).toEqual(["README.md", "package.json", "src/adapter.ts", "src/index.ts", "test/contract.test.ts", "tsconfig.json", vendored]);
  // Not on npm: the project depends on the API package this binary was built with, vendored as a tarball.
  expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).devDependencies).toEqual({ "cachet-plugin-api": `file:${vendored}` });
  expect(Buffer.compare(readFileSync(join(project, vendored)), readFileSync(API_TARBALL))).toBe(0);

  // The printed next step, run as printed, with npm offline: `cd DIR && step && step && …`.
  const next = /next: (.+?) {3}\(/.exec(created.stderr);
  const [cd, ...steps] = next![1]!.split(" && ");
  expect(cd).toBe(`cd ${project}`);
  expect(steps).toEqual(["npm install", "npm run build", "cachet plugins test dist/index.js"]);
  for (const step of steps) {
    const [command, ...argv] = step.split(" ");
    if (command === "cachet") {
      const kit = await cachet(argv, { home, cwd: project });
      expect(kit.stdout).not.toContain("FAIL");
      expect(kit.stdout).toContain("passed: acme, 6 of 6 checks");
      expect(kit.code).toBe(0);
    } else {
      const result = run([command!, ...argv], project, { npm_config_offline: "true" });
      expect({ step, code: result.code, output: result.code === 0 ? "" : result.output }).toEqual({ step, code: 0, output: "" });
    }
  }
  const bundle = readFileSync(join(project, "dist", "index.js"), "utf8");
  expect(bundle).not.toMatch(/from\s+["']cachet-plugin-api["']/);
  // The project's tsconfig has `types: []` and no skipLibCheck: the package's .d.ts must stand without Bun's types.
  expect(run([join(BIN, "tsc"), "-p", "."], project)).toEqual({ code: 0, output: "" });

  const added = await cachet(["plugins", "add", "./acme", "--json"], { home, cwd: work });
  expect(added.code).toBe(0);
  expect(JSON.parse(added.stdout)).toMatchObject({ name: "cachet-plugin-acme", version: "0.1.0", api: "^1", source: project, integrity: expect.stringMatching(/^sha512-/) });

  const answer = await cachet(["--emulate", "--json", "-m", "acme/m1", "hi"], { home });
  expect(answer.code).toBe(0);
  const list = events(answer.stdout);
  expect(ofType(list, "text").length).toBeGreaterThan(0);
  expect(ofType(list, "usage")[0]).toMatchObject({ input: expect.any(Number), output: expect.any(Number) });
  const [cost] = ofType(list, "cost");
  // Priced (a number) or flagged (null with the reason); never a silent 0.
  if (cost!.cost_usd === null) expect(String(cost!.reason)).toContain("acme/m1");
  else expect(cost!.cost_usd).toBeGreaterThan(0);

  // `plugins add .` bundled the sources the scaffold declares ("source": "src/index.ts"), not dist/: an edit shows
  // at the next update without `npm run build`, and the bytes do not depend on whether dist/ is there.
  const { integrity } = JSON.parse(added.stdout) as { integrity: string };
  const same = await cachet(["plugins", "update", "acme"], { home, cwd: home });
  expect({ code: same.code, stderr: same.stderr }).toEqual({ code: 0, stderr: "[info] cachet-plugin-acme: 0.1.0 (unchanged)\n" });
  writeFileSync(join(project, "src", "index.ts"), `${readFileSync(join(project, "src", "index.ts"), "utf8")}export const X = 1;\n`);
  const edited = await cachet(["plugins", "update", "acme", "--json"], { home, cwd: home });
  expect(edited.code).toBe(0);
  const [update] = JSON.parse(edited.stdout).updated;
  expect(update).toMatchObject({ from: "0.1.0", to: "0.1.0", changed: true, integrity: { from: integrity } });
  expect(update.integrity.to).not.toBe(integrity);
  expect(readFileSync(join(home, "plugins", "cachet-plugin-acme.js"), "utf8")).toContain("X = 1");
  rmSync(join(project, "dist"), { recursive: true });
  const withoutDist = await cachet(["plugins", "update", "acme", "--json"], { home, cwd: home });
  expect(JSON.parse(withoutDist.stdout).updated).toEqual([{ name: "cachet-plugin-acme", from: "0.1.0", to: "0.1.0", changed: false, integrity: { from: update.integrity.to, to: update.integrity.to } }]);
}, 120_000);

test("a local project with only a build output bundles it, and one older than a file under src/ is said in one warning line", async () => {
  const home = freshHome();
  const project = join(home, "acme");
  mkdirSync(join(project, "src"), { recursive: true });
  mkdirSync(join(project, "dist"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "cachet-plugin-acme", version: "0.1.0", type: "module", main: "dist/index.js" }));
  const plugin = (base: string) => `export default { name: "acme", api: 1, setup(api) {
  api.provider({ id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"], defaultBaseUrl: "${base}", emulatorPath: "/acme/v1", create: (config) => api.adapter("openai-compatible", config) });
} };
`;
  writeFileSync(join(project, "src", "plugin.js"), plugin("https://api2.acme.invalid/v1"));
  writeFileSync(join(project, "dist", "index.js"), plugin("https://api.acme.invalid/v1"));
  utimesSync(join(project, "dist", "index.js"), 1_000, 1_000);
  utimesSync(join(project, "src", "plugin.js"), 2_000, 2_000);
  const added = await cachet(["plugins", "add", "."], { home, cwd: project });
  expect(added.code).toBe(0);
  const lines = added.stderr.split("\n").filter(Boolean);
  expect(lines[0]).toBe(
    `[warn] ${project}: bundling its build output dist/index.js, which is older than src/plugin.js; run its build (npm run build), or declare its source entry ("source" in package.json) to bundle the sources instead`,
  );
  expect(lines.slice(1)).toEqual([expect.stringMatching(/^\[info\] installed cachet-plugin-acme@0\.1\.0 /)]);
  expect(readFileSync(join(home, "plugins", "cachet-plugin-acme.js"), "utf8")).toContain("https://api.acme.invalid/v1");
  // Built again: no warning.
  utimesSync(join(project, "dist", "index.js"), 3_000, 3_000);
  const again = await cachet(["plugins", "update", "acme"], { home, cwd: project });
  expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "[info] cachet-plugin-acme: 0.1.0 (unchanged)\n" });
}, 60_000);

test("a local project bundles to the same bytes from any directory: update says unchanged and leaves the file alone; an edited source is a changed bundle", async () => {
  const home = freshHome();
  const project = join(home, "rd", "acme");
  mkdirSync(join(project, "node_modules", "helper"), { recursive: true });
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "cachet-plugin-acme", version: "0.1.0", type: "module", main: "index.js" }));
  writeFileSync(join(project, "node_modules", "helper", "package.json"), JSON.stringify({ name: "helper", version: "1.0.0", type: "module", main: "index.js" }));
  writeFileSync(join(project, "node_modules", "helper", "index.js"), `export const base = "https://api.acme.invalid/v1";\n`);
  writeFileSync(
    join(project, "index.js"),
    `import { base } from "helper";
export default { name: "acme", api: 1, setup(api) {
  api.provider({ id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"], defaultBaseUrl: base, emulatorPath: "/acme/v1", create: (config) => api.adapter("openai-compatible", config) });
} };
`,
  );
  const added = await cachet(["plugins", "add", ".", "--json"], { home, cwd: project });
  expect(added.code).toBe(0);
  const record = JSON.parse(added.stdout);
  const before = statSync(record.file);
  const bytes = readFileSync(record.file);
  // The module comments name paths from the project directory, not from where cachet ran.
  expect(bytes.toString()).toContain("// node_modules/helper/index.js\n");
  const config = readFileSync(join(home, "config.toml"), "utf8");

  const updated = await cachet(["plugins", "update", "acme"], { home, cwd: home });
  expect({ code: updated.code, stderr: updated.stderr }).toEqual({ code: 0, stderr: "[info] cachet-plugin-acme: 0.1.0 (unchanged)\n" });
  const after = statSync(record.file);
  expect({ ino: after.ino, mtimeMs: after.mtimeMs }).toEqual({ ino: before.ino, mtimeMs: before.mtimeMs });
  expect(Buffer.compare(readFileSync(record.file), bytes)).toBe(0);
  expect(readFileSync(join(home, "config.toml"), "utf8")).toBe(config);

  writeFileSync(join(project, "node_modules", "helper", "index.js"), `export const base = "https://api2.acme.invalid/v1";\n`);
  const changed = await cachet(["plugins", "update", "acme", "--json"], { home, cwd: join(home, "rd") });
  expect(changed.code).toBe(0);
  const [update] = JSON.parse(changed.stdout).updated;
  expect(update).toMatchObject({ name: "cachet-plugin-acme", from: "0.1.0", to: "0.1.0", changed: true, integrity: { from: record.integrity } });
  const rebundled = readFileSync(record.file);
  expect(update.integrity.to).toBe(`sha512-${new Bun.CryptoHasher("sha512").update(rebundled).digest("base64")}`);
  expect(update.integrity.to).not.toBe(record.integrity);
  expect(rebundled.toString()).toContain("https://api2.acme.invalid/v1");
  expect(readFileSync(join(home, "config.toml"), "utf8")).toContain(`integrity = "${update.integrity.to}"`);
  // Said as such without --json: the same version, a different bundle.
  writeFileSync(join(project, "node_modules", "helper", "index.js"), `export const base = "https://api3.acme.invalid/v1";\n`);
  const line = await cachet(["plugins", "update", "acme"], { home, cwd: project });
  expect(line.stderr).toMatch(/^\[info\] cachet-plugin-acme: 0\.1\.0 \(same version, bundle changed, integrity sha512-\S+… → sha512-\S+…\)\n$/);
}, 60_000);

describe("plugins add from an npm registry on loopback", () => {
  let server: ReturnType<typeof Bun.serve>;
  let registry: string;
  /** name → version → tarball bytes (served) and the integrity the packument states. */
  const packages = new Map<string, Map<string, { bytes: Uint8Array; integrity: string }>>();
  const latest = new Map<string, string>();

  const publish = async (name: string, version: string, files: Record<string, string>, tamper = false) => {
    const prefixed = Object.fromEntries(Object.entries(files).map(([k, v]) => [`package/${k}`, v]));
    const bytes = await new Bun.Archive(prefixed, { compress: "gzip" }).bytes();
    const integrity = `sha512-${new Bun.CryptoHasher("sha512").update(bytes).digest("base64")}`;
    const served = tamper ? await new Bun.Archive({ ...prefixed, "package/index.js": `${files["index.js"]}\nfetch("https://evil.invalid");` }, { compress: "gzip" }).bytes() : bytes;
    if (!packages.has(name)) packages.set(name, new Map());
    packages.get(name)!.set(version, { bytes: served, integrity });
    latest.set(name, version);
  };

  beforeAll(async () => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        const path = decodeURIComponent(new URL(request.url).pathname);
        const tarball = /^\/tarballs\/(.+)-(\d+\.\d+\.\d+)\.tgz$/.exec(path);
        if (tarball) {
          const found = packages.get(tarball[1]!)?.get(tarball[2]!);
          return found ? new Response(found.bytes) : new Response("not found", { status: 404 });
        }
        const name = path.slice(1);
        const versions = packages.get(name);
        if (!versions) return Response.json({ error: "Not found" }, { status: 404 });
        return Response.json({
          name,
          "dist-tags": { latest: latest.get(name) },
          versions: Object.fromEntries(
            [...versions].map(([version, p]) => [version, { name, version, ...(p === undefined ? {} : { dist: { tarball: `${registry}/tarballs/${name}-${version}.tgz`, integrity: p.integrity } }), dependencies: dependenciesOf(name) }]),
          ),
        });
      },
    });
    registry = `http://127.0.0.1:${server.port}`;
    // The API package as published: the packed tarball from the build.
    const api = new Uint8Array(readFileSync(API_TARBALL));
    packages.set("cachet-plugin-api", new Map([[API_VERSION, { bytes: api, integrity: `sha512-${new Bun.CryptoHasher("sha512").update(api).digest("base64")}` }]]));
    latest.set("cachet-plugin-api", API_VERSION);
    await publish("cachet-plugin-zeta", "1.0.0", zeta("1.0.0"));
    await publish("cachet-plugin-evil", "1.0.0", zeta("1.0.0", "evil"), true);
  });
  afterAll(() => server?.stop(true));

  /** A published plugin that is not bundled: its entry imports the API package, which `add` must fetch and bundle. */
  function zeta(version: string, id = "zeta"): Record<string, string> {
    return {
      "package.json": JSON.stringify({ name: `cachet-plugin-${id}`, version, type: "module", main: "index.js", dependencies: { "cachet-plugin-api": `^${API_VERSION}` }, scripts: { postinstall: "touch /tmp/cachet-must-not-run" } }),
      "index.js": `import { definePlugin } from "cachet-plugin-api";
export default definePlugin({ name: "${id}", api: "^1", setup(api) {
  api.provider({ id: "${id}", protocol: "openai-chat", env: ["ZETA_API_KEY"], defaultBaseUrl: "https://api.zeta.invalid/v1", emulatorPath: "/${id}/v1",
    create: (config) => api.adapter("openai-compatible", config) });
} });
`,
    };
  }

  function dependenciesOf(name: string): Record<string, string> {
    return name === "cachet-plugin-api" ? {} : { "cachet-plugin-api": `^${API_VERSION}` };
  }

  test("an npm name is fetched with its dependency, integrity checked, bundled, recorded and loaded; update and remove", async () => {
    const home = freshHome();
    const env = { CACHET_NPM_REGISTRY: registry };
    const added = await cachet(["plugins", "add", "cachet-plugin-zeta@^1", "--json"], { home, env });
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    const record = JSON.parse(added.stdout);
    expect(record).toMatchObject({ name: "cachet-plugin-zeta", version: "1.0.0", api: "^1", source: "cachet-plugin-zeta@^1", integrity: packages.get("cachet-plugin-zeta")!.get("1.0.0")!.integrity });
    const bundled = readFileSync(record.file, "utf8");
    expect(bundled).toContain("function definePlugin");
    expect(bundled).not.toMatch(/from\s+["']cachet-plugin-api["']/);
    expect(readFileSync(join(home, "config.toml"), "utf8")).toContain(`[[installed_plugins]]\nname = "cachet-plugin-zeta"\nversion = "1.0.0"`);
    expect(existsSync("/tmp/cachet-must-not-run")).toBe(false);

    const answer = await cachet(["--emulate", "--json", "-m", "zeta/z1", "hi"], { home, env });
    expect(answer.code).toBe(0);
    expect(ofType(events(answer.stdout), "text").length).toBeGreaterThan(0);

    await publish("cachet-plugin-zeta", "1.1.0", zeta("1.1.0"));
    const updated = await cachet(["plugins", "update", "--json"], { home, env });
    const integrity = { from: record.integrity, to: packages.get("cachet-plugin-zeta")!.get("1.1.0")!.integrity };
    // 1.1.0 differs from 1.0.0 in its package.json only: a new version (and tarball), the same bundle, so the file stays.
    expect(JSON.parse(updated.stdout)).toEqual({ updated: [{ name: "cachet-plugin-zeta", from: "1.0.0", to: "1.1.0", changed: false, integrity }] });
    // Unpacked into a new staging directory each time, the same tarball bundles to the same bytes.
    const again = await cachet(["plugins", "update", "zeta", "--json"], { home, env });
    expect(JSON.parse(again.stdout)).toEqual({ updated: [{ name: "cachet-plugin-zeta", from: "1.1.0", to: "1.1.0", changed: false, integrity: { from: integrity.to, to: integrity.to } }] });

    const unknown = await cachet(["plugins", "remove", "nosuch"], { home, env });
    expect({ code: unknown.code, stderr: unknown.stderr }).toEqual({ code: 2, stderr: 'cachet: no installed plugin named "nosuch"\n  hint: installed: cachet-plugin-zeta\n' });
    // The short name (cachet-plugin-NAME's NAME) names it too.
    const removed = await cachet(["plugins", "remove", "zeta"], { home, env });
    expect(removed.code).toBe(0);
    expect(existsSync(record.file)).toBe(false);
    expect(readFileSync(join(home, "config.toml"), "utf8")).not.toContain("installed_plugins");
    // Nothing of the installs is left behind: no staging directory.
    expect(existsSync(join(dirname(record.file), ".staging"))).toBe(false);
  }, 60_000);

  test("a tampered tarball is refused with the integrity error; nothing is installed or recorded", async () => {
    const home = freshHome();
    const r = await cachet(["plugins", "add", "cachet-plugin-evil"], { home, env: { CACHET_NPM_REGISTRY: registry } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/integrity check failed for cachet-plugin-evil@1\.0\.0: the tarball's sha512 is sha512-\S+, the registry says sha512-\S+/);
    expect(r.stderr).toContain("nothing was installed");
    expect(existsSync(join(home, "config.toml"))).toBe(false);
    expect(existsSync(join(home, "plugins", "cachet-plugin-evil.js"))).toBe(false);
  }, 30_000);

  test("a tarball URL installs; an unknown package and a missing path are one line each", async () => {
    const home = freshHome();
    const env = { CACHET_NPM_REGISTRY: registry };
    const byUrl = await cachet(["plugins", "add", `${registry}/tarballs/cachet-plugin-zeta-1.0.0.tgz`, "--json"], { home, env });
    expect(byUrl.code).toBe(0);
    expect(JSON.parse(byUrl.stdout)).toMatchObject({ name: "cachet-plugin-zeta", version: "1.0.0", integrity: expect.stringMatching(/^sha512-/) });
    const unknown = await cachet(["plugins", "add", "cachet-plugin-nope"], { home, env });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`no package "cachet-plugin-nope" in the registry ${registry}`);
    const missing = await cachet(["plugins", "add", "./nope"], { home, env, cwd: home });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no such file or directory: ${join(home, "nope")}`);
    // Exit 1 as for `plugins add` and every other failed `plugins test` (README).
    const untested = await cachet(["plugins", "test", "nope.js"], { home, cwd: home });
    expect(untested.code).toBe(1);
    expect(untested.stderr).toContain(`plugin file ${join(home, "nope.js")} does not exist`);
  }, 30_000);
});
