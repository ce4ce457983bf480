/**
 * `cachet plugins add/remove/update`: a plugin from a local path (a project
 * directory or a file), an npm package (`name[@version|range|tag]`) or a
 * tarball URL is bundled with its dependencies into one ESM file under
 * `<data>/plugins/`, loaded once to prove it works, and recorded in the
 * config (name, version, integrity, API range, file); the next run loads it.
 *
 * Nothing from a package is run while installing (no install scripts); the
 * registry's integrity hash is checked before a tarball is unpacked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, readdir, rename, rm, rmdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import { loadConfig } from "../config.ts";
import { CachetError } from "../errors.ts";
import { configFile, pluginDir, statePaths } from "../paths.ts";
import { makePrivateDir } from "../private-files.ts";
import { apiRange } from "./api-range.ts";
import { KEYS, writeInstalled, type InstalledPlugin } from "./installed-config.ts";
import { loadPlugins } from "./loader.ts";
import { builtEntries, entryInside, parseManifest, sourceEntries, type DeclaredEntry, type Manifest } from "./manifest.ts";
import { warn } from "../log.ts";
import { downloadTarball, parsePackageSpec, registryUrl, resolveVersion, sri, unpackTarball, type RegistryOptions } from "./npm-registry.ts";
import { workingDirectoryExists } from "../working-dir.ts";
import { processAlive } from "../process-alive.ts";

/** Where and how to install. */
export interface InstallOptions {
  env: Record<string, string | undefined>;
  fetch: typeof fetch;
  /** Directory relative paths are resolved against. */
  cwd: string;
}

/**
 * Installs (or reinstalls) a plugin and records it in the config.
 * @throws CachetError PLUGIN_INSTALL (exit 1, as every failed install) when
 *   the source is missing, cannot be fetched or bundled, fails its integrity
 *   check, or its bundle does not load (with the plugin's own error).
 *   Nothing is recorded then.
 */
export async function addPlugin(source: string, options: InstallOptions): Promise<InstalledPlugin> {
  return (await install(source, options)).record;
}

/**
 * {@link addPlugin}, saying whether the installed bundle changed. A bundle with
 * the same bytes as the installed file leaves that file as it is (its mtime
 * too: whatever watches it sees no change), and the same record
 * leaves the config file as it is.
 * @returns the record, and whether the bundled file was written (it was missing or its bytes differed)
 */
async function install(source: string, options: InstallOptions): Promise<{ record: InstalledPlugin; bundleChanged: boolean }> {
  const paths = statePaths(options.env);
  const root = pluginDir(paths);
  makePrivateDir(join(root, ".staging"));
  await removeLeftoverStaging(join(root, ".staging"));
  // The pid in the name tells a later install whether the directory's install may still be under way.
  const staging = await mkdtemp(join(root, ".staging", `add-${process.pid}-`));
  try {
    const registry: RegistryOptions = { registry: registryUrl(options.env), fetch: options.fetch };
    const fetched = await fetchSource(source, staging, registry, options.cwd);
    await installDependencies(fetched.dir, registry);
    const bundle = new TextEncoder().encode(await bundlePlugin(fetched.dir, source, fetched.local ? "sources" : "build"));
    const staged = join(staging, "plugin.js");
    await writeFile(staged, bundle);
    const plugin = await checkLoads(staged, source, options.env);
    const manifest = readManifest(fetched.dir);
    const name = manifest?.name ?? plugin.name;
    const file = join(root, `${name.replace(/^@/, "").replaceAll("/", "__")}.js`);
    const record: InstalledPlugin = {
      name,
      version: manifest?.version ?? "0.0.0",
      source: fetched.source,
      integrity: fetched.integrity ?? sri("sha512", bundle),
      api: apiRange(plugin.api),
      file,
    };
    const bundleChanged = !sameBytes(file, bundle);
    if (bundleChanged) await rename(staged, file);
    const config = await loadConfig(configFile(paths));
    const recorded = config.installed_plugins ?? [];
    const previous = recorded.find((r) => r.name === name);
    if (bundleChanged || !previous || KEYS.some((k) => previous[k] !== record[k])) {
      await writeInstalled(configFile(paths), [...recorded.filter((r) => r !== previous), record]);
    }
    return { record, bundleChanged };
  } finally {
    await rm(staging, { recursive: true, force: true });
    // The staging directory goes too once empty; another install under way keeps it (rmdir refuses a non-empty one).
    await rmdir(join(root, ".staging")).catch(() => {});
  }
}

/**
 * Removes the staging directories of installs that ended without removing
 * theirs (a crash, SIGKILL, a cachet from before plugin exits were refused):
 * only cachet's own (`add-PID-XXXXXX`, or `add-XXXXXX` from before the pid
 * was in the name), and none whose process is still running.
 */
async function removeLeftoverStaging(dir: string): Promise<void> {
  for (const entry of await readdir(dir).catch(() => [] as string[])) {
    const match = /^add-(?:(\d+)-)?[A-Za-z0-9]{6}$/.exec(entry);
    if (!match || (match[1] !== undefined && processAlive(Number(match[1])))) continue;
    await rm(join(dir, entry), { recursive: true, force: true });
  }
}

/** Whether the file at `path` exists and holds exactly `bytes`. */
function sameBytes(path: string, bytes: Uint8Array): boolean {
  if (!existsSync(path)) return false;
  const stat = statSync(path);
  return stat.isFile() && stat.size === bytes.length && Buffer.from(bytes).equals(readFileSync(path));
}

/**
 * Removes an installed plugin: its record and its bundled file.
 * @throws CachetError PLUGIN_NOT_INSTALLED (exit 2) when no installed plugin has that name.
 */
export async function removePlugin(name: string, options: Pick<InstallOptions, "env">): Promise<InstalledPlugin> {
  const paths = statePaths(options.env);
  const config = await loadConfig(configFile(paths));
  const records = config.installed_plugins ?? [];
  const record = installedNamed(records, name);
  await writeInstalled(configFile(paths), records.filter((r) => r !== record));
  await rm(record.file, { force: true });
  return record;
}

/** One plugin `update` re-installed: its version before and after, and whether its bundle changed. */
export interface PluginUpdate {
  name: string;
  from: string;
  to: string;
  /** The bundled file was rewritten: the new bundle's bytes differ from the installed one's (the same version may rebundle differently: a local project's edited source, a dependency moved within its range). */
  changed: boolean;
  /** The recorded integrity before and after (a local source's is the bundle's; an npm or tarball source's is its tarball's). */
  integrity: { from: string; to: string };
}

/**
 * Re-installs installed plugins from their recorded sources (an npm source
 * without a pinned version moves to the newest matching version). A plugin
 * whose new bundle has the bytes of the installed one keeps its file and its
 * record untouched.
 * @returns each plugin with its version before and after, and whether its bundle changed.
 * @throws CachetError as {@link addPlugin}; PLUGIN_NOT_INSTALLED (exit 2) for an unknown name.
 */
export async function updatePlugins(name: string | undefined, options: InstallOptions): Promise<PluginUpdate[]> {
  const config = await loadConfig(configFile(statePaths(options.env)));
  const installed = config.installed_plugins ?? [];
  const records = name === undefined ? installed : [installedNamed(installed, name)];
  const out: PluginUpdate[] = [];
  for (const record of records) {
    const next = await install(record.source, options);
    out.push({ name: record.name, from: record.version, to: next.record.version, changed: next.bundleChanged, integrity: { from: record.integrity, to: next.record.integrity } });
  }
  return out;
}

/**
 * The installed plugin `name` names: its package name, or the short name of a
 * `cachet-plugin-NAME` package (the name its plugin registers, which
 * `plugins list` shows).
 * @throws CachetError PLUGIN_NOT_INSTALLED (exit 2) naming the installed ones
 */
function installedNamed(records: readonly InstalledPlugin[], name: string): InstalledPlugin {
  const record = records.find((r) => r.name === name) ?? records.find((r) => r.name === `cachet-plugin-${name}`);
  if (record) return record;
  throw new CachetError("PLUGIN_NOT_INSTALLED", `no installed plugin named "${name}"`, {
    hint: records.length ? `installed: ${records.map((r) => r.name).join(", ")}` : "`cachet plugins add SOURCE` installs one",
  });
}

/** Bundles run one at a time: each holds the process's working directory for its whole build. */
let bundling: Promise<unknown> = Promise.resolve();

/**
 * The bundled ESM text of the plugin at `path` (a project directory or a file;
 * its entry as {@link entryOf} picks it from `from`), dependencies inlined.
 * A local project bundled from a built entry older than a file under its
 * `src/` is said in one warning line ({@link newerSource}). The same
 * sources give the same bytes whatever directory cachet runs from: Bun writes
 * each module's path into the bundle (`// node_modules/dep/index.js`) relative
 * to the working directory as the build reads it, and has no option to set
 * that directory, so the build runs with the plugin's own directory (the
 * project directory, or the file's) as the working directory.
 * @throws CachetError PLUGIN_INSTALL when `path` does not exist or has no entry ({@link entryOf}), or with the bundler's first error.
 */
export async function bundlePlugin(path: string, label: string, from: EntryFrom): Promise<string> {
  const entry = entryOf(path, from);
  const project = statSync(path).isDirectory();
  const root = project ? path : dirname(path);
  const newer = project && from === "sources" && entry.built ? newerSource(root, entry.path) : undefined;
  if (newer !== undefined) {
    await warn(
      `${root}: bundling its build output ${relative(root, entry.path)}, which is older than ${newer}; run its build (npm run build), or declare its source entry ("source" in package.json) to bundle the sources instead`,
    );
  }
  const run = bundling.then(() => bundleFrom(entry.path, label, root));
  bundling = run.catch(() => {});
  return run;
}

async function bundleFrom(entry: string, label: string, root: string): Promise<string> {
  // A working directory removed since cachet started there cannot be entered again: the process stays in `root`, and
  // the command's relative paths were resolved before (src/cli/plugins.ts refuses them there).
  const before = workingDirectoryExists() ? process.cwd() : undefined;
  process.chdir(root);
  let result: Awaited<ReturnType<typeof Bun.build>>;
  try {
    // The bundler thread reads the working directory while it works, not when called: it is kept until the build ends.
    result = await Bun.build({ entrypoints: [entry], target: "bun", format: "esm", throw: false });
  } finally {
    if (before !== undefined) process.chdir(before);
  }
  if (!result.success) {
    const first = result.logs.find((l) => l.level === "error") ?? result.logs[0];
    throw new CachetError("PLUGIN_INSTALL", `cannot bundle plugin ${label}: ${String(first?.message ?? first ?? "unknown bundler error").split("\n", 1)[0]}`, {
      hint: "install its dependencies (npm install) in the project, or check the entry in its package.json",
    });
  }
  if (result.outputs.length !== 1) throw new CachetError("PLUGIN_INSTALL", `plugin ${label} bundles to ${result.outputs.length} files; cachet needs one`, { hint: "avoid dynamic import() of local modules in the plugin" });
  return result.outputs[0]!.text();
}

/**
 * Which entry of a project directory to bundle: `sources` for a local
 * project (its declared source entry or the `src/index.ts` that
 * `cachet plugins new` writes, so an edit is bundled without a build and the
 * bytes depend on the sources alone), `build` for a package fetched from npm
 * or a tarball (the built file it ships; its sources may need its dev dependencies).
 */
export type EntryFrom = "sources" | "build";

/** The module file {@link entryOf} picked, and whether it is a built entry (`build`'s candidates) rather than a source one. */
export interface PluginEntry {
  path: string;
  built: boolean;
}

/**
 * The module file to bundle for a path: a file as is; for a directory, with
 * `from` = `sources`, its package.json's source entries ({@link sourceEntries}:
 * `source`, the `source` export condition) and `src/index.ts`; then (and
 * alone, with `build`) its built entries ({@link builtEntries}: `exports`,
 * `module`, `main`), else `index.js`, `index.ts`, `src/index.ts`: the first
 * that exists.
 * @throws CachetError PLUGIN_INSTALL (exit 1, as every failed `plugins add` and `plugins test`) when `path` does not
 *   exist, a directory has no entry, its package.json is not a valid manifest ({@link readManifest}), or an entry it
 *   declares is outside the directory.
 */
export function entryOf(path: string, from: EntryFrom): PluginEntry {
  if (!existsSync(path)) throw new CachetError("PLUGIN_INSTALL", `plugin file ${path} does not exist`, { hint: "pass a plugin file, its source entry or its project directory" });
  if (!statSync(path).isDirectory()) return { path, built: false };
  const manifest = readManifest(path) ?? {};
  const inside = (entry: DeclaredEntry) => {
    const found = entryInside(path, entry);
    if ("problem" in found) throw new CachetError("PLUGIN_INSTALL", `package.json in ${path} ${found.problem}`, { hint: `point "${entry.field}" at the plugin's entry file inside the package` });
    return found.path;
  };
  const sources = from === "sources" ? [...sourceEntries(manifest).map(inside), join(path, "src", "index.ts")] : [];
  const built = [...builtEntries(manifest).map(inside), ...["index.js", "index.ts", "src/index.ts"].map((c) => join(path, c))];
  const candidates = [...new Set([...sources, ...built])];
  const found = candidates.find((c) => existsSync(c));
  if (!found) {
    throw new CachetError("PLUGIN_INSTALL", `no plugin entry in ${path} (tried ${candidates.map((c) => relative(path, c)).join(", ")})`, {
      hint: from === "sources" ? 'set "source" (its source entry) or "main" in its package.json' : 'the package declares no entry that exists: check its "exports" and "main"',
    });
  }
  return { path: found, built: !sources.includes(found) };
}

/**
 * The file under the project's `src/` modified last, relative to the project
 * directory, when it was modified after `entry`, a build output: a file in a
 * subdirectory other than `src/` (`dist/index.js`; a file at the top of the
 * project may itself be a source importing `src/`). Undefined when the
 * output is not older, `entry` is not such a file, or the project has no `src/`.
 */
export function newerSource(project: string, entry: string): string | undefined {
  const sources = join(project, "src");
  const where = relative(project, entry).split(sep);
  if (where.length < 2 || where[0] === "src" || where[0] === ".." || !existsSync(sources) || !statSync(sources).isDirectory()) return undefined;
  const built = statSync(entry).mtimeMs;
  let newest: { path: string; mtimeMs: number } | undefined;
  for (const name of readdirSync(sources, { recursive: true, encoding: "utf8" })) {
    // A file removed since the directory was read is no newer source.
    const stat = statSync(join(sources, name), { throwIfNoEntry: false });
    if (stat?.isFile() && stat.mtimeMs > built && stat.mtimeMs > (newest?.mtimeMs ?? 0)) newest = { path: join("src", name), mtimeMs: stat.mtimeMs };
  }
  return newest?.path;
}

/**
 * The validated package.json of a package directory (src/plugin/manifest.ts), undefined when it has none.
 * @throws CachetError PLUGIN_INSTALL naming the directory and the fault: not JSON, not an object, a field of the wrong type.
 */
function readManifest(dir: string): Manifest | undefined {
  const path = join(dir, "package.json");
  if (!existsSync(dir) || !statSync(dir).isDirectory() || !existsSync(path)) return undefined;
  const parsed = parseManifest(readFileSync(path, "utf8"));
  if ("problem" in parsed) throw new CachetError("PLUGIN_INSTALL", `package.json in ${dir} ${parsed.problem}`, { hint: "fix the package's package.json" });
  return parsed.manifest;
}

/**
 * The package directory (or file) of a source, fetched into `staging` when remote (`local` false: bundled from its
 * built entry); its entry is checked ({@link entryOf}) before any dependency is fetched.
 */
async function fetchSource(source: string, staging: string, registry: RegistryOptions, cwd: string): Promise<{ dir: string; source: string; local: boolean; integrity?: string }> {
  if (/^https?:\/\//.test(source)) {
    const [url, fragment] = source.split("#", 2) as [string, string | undefined];
    const tarball = await downloadTarball(url, fragment?.includes("-") ? fragment : undefined, registry, url);
    const dir = await unpackTarball(tarball.bytes, join(staging, "package"));
    entryOf(dir, "build");
    return { dir, source, local: false, integrity: tarball.integrity };
  }
  const local = resolve(cwd, source);
  if (existsSync(local)) {
    entryOf(local, "sources");
    return { dir: local, source: local, local: true };
  }
  if (source.startsWith(".") || source.startsWith("/") || source.includes("\\")) {
    throw new CachetError("PLUGIN_INSTALL", `no such file or directory: ${local}`, { hint: "pass a plugin project directory, a plugin file, an npm package name or a tarball URL" });
  }
  const { name, range } = parsePackageSpec(source);
  if (!/^(@[a-z0-9][\w.~-]*\/)?[a-z0-9~][\w.~-]*$/.test(name)) {
    throw new CachetError("PLUGIN_INSTALL", `"${source}" is neither a path nor an npm package name`, { hint: "e.g. cachet plugins add ./acme, cachet plugins add cachet-plugin-acme@1.2.0" });
  }
  const version = await resolveVersion(name, range, registry);
  const tarball = await downloadTarball(version.dist.tarball, version.dist.integrity, registry, `${name}@${version.version}`);
  const dir = await unpackTarball(tarball.bytes, join(staging, "package"));
  entryOf(dir, "build");
  return { dir, source, local: false, integrity: version.dist.integrity ?? tarball.integrity };
}

/**
 * Fetches a package's dependencies (and theirs) from the registry into its
 * node_modules, flat (the first version resolved for a name wins), each
 * tarball integrity-checked, unless the package brings a node_modules of its
 * own (a local project). Scripts are not run.
 */
async function installDependencies(dir: string, registry: RegistryOptions): Promise<void> {
  const into = join(dir, "node_modules");
  if (existsSync(into)) return;
  const pending = Object.entries(readManifest(dir)?.dependencies ?? {});
  const seen = new Set<string>();
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
    const [name, range] = next;
    if (seen.has(name)) continue;
    seen.add(name);
    const version = await resolveVersion(name, range, registry);
    const tarball = await downloadTarball(version.dist.tarball, version.dist.integrity, registry, `${name}@${version.version}`);
    const unpacked = await unpackTarball(tarball.bytes, join(dir, ".unpack", name));
    const target = join(into, name);
    makePrivateDir(join(target, ".."));
    await rename(unpacked, target);
    pending.push(...Object.entries(readManifest(target)?.dependencies ?? {}));
  }
}

/** Imports the bundle and loads it beside the built-ins; the plugin object when it loads cleanly. */
async function checkLoads(file: string, label: string, env: Record<string, string | undefined>): Promise<{ name: string; api: string | number }> {
  const host = await loadPlugins({ config: {}, env: { ...env, CACHET_PLUGINS: file } });
  const failure = host.failures[0];
  if (failure) throw new CachetError("PLUGIN_INSTALL", `${label} does not load, nothing was installed: ${failure.message.replaceAll(file, label)}`, { hint: "fix the plugin, then check it with `cachet plugins test`" });
  const mod = (await import(file)) as { default: { name: string; api: string | number } };
  return mod.default;
}
