/**
 * Loads plugins in order: the built-in ones (plugins/), then config
 * `plugins = [...]` (file paths, or npm package names installed under the
 * plugin directory), then the bundles `cachet plugins add` installed
 * (`[[installed_plugins]]`), then `CACHET_PLUGINS` (comma-separated paths).
 *
 * Third-party plugins ship as one bundled ESM file: a compiled cachet binary
 * can import a .js or .ts file at run time, but not resolve a plugin's own
 * node_modules.
 */
import { isAbsolute, join, resolve } from "node:path";
import { builtinPlugins } from "../../plugins/index.ts";
import type { Config } from "../config.ts";
import { CachetError } from "../errors.ts";
import { pluginDir, statePaths } from "../paths.ts";
import { workingDirectoryExists } from "../working-dir.ts";
import { trapPluginExits } from "./exit-trap.ts";
import { PluginHost } from "./host.ts";
import { builtEntries, entryInside, parseManifest } from "./manifest.ts";

/** Where to look for plugins besides the built-in ones. */
export interface LoadOptions {
  config: Config;
  env?: Record<string, string | undefined>;
  /** Directory relative config paths are resolved against (the config directory). */
  configDir?: string;
}

/**
 * Loads every plugin into a new host. Never throws for a bad plugin: failures
 * are in `host.failures`, each naming the plugin.
 * @throws CachetError CONFIG_INVALID when every plugin loaded and a `[providers.ID]` table of the config names a
 *   provider none registers (a typo would otherwise be ignored; with a failed plugin, that plugin may be the one).
 */
export async function loadPlugins(options: LoadOptions): Promise<PluginHost> {
  const configDir = options.configDir ?? statePaths(options.env ?? process.env).config;
  const external = externalPluginSources(options);
  // Built-in plugins alone are the same code with the same setup every time (they read no environment in it):
  // a resident process loads them once. A third-party plugin's setup may read anything, so its host is new.
  const kept = external.length === 0 ? builtinHost : undefined;
  const host = kept?.host ?? (await builtinsInto(new PluginHost()));
  // Only a host whose every plugin loaded is kept: a failure is reported by each command, as in its own process.
  if (kept && host.failures.length === 0) kept.host = host;
  for (const { path: source, problem } of external) {
    if (problem !== undefined) {
      host.failures.push({ plugin: source, message: problem });
      continue;
    }
    if (!existsSync(source)) {
      host.failures.push({ plugin: source, message: `plugin file ${source} does not exist` });
      continue;
    }
    // From the first third-party import on, a plugin's process.exit throws instead of ending cachet (exit-trap.ts).
    trapPluginExits();
    const plugin = await importDefault(() => import(source), source, host);
    if (plugin !== undefined) await host.load(plugin, source);
  }
  if (host.failures.length === 0) refuseUnknownProviderTables(options.config, host, join(configDir, "config.toml"));
  return host;
}

/**
 * The third-party plugin files {@link loadPlugins} imports, in its order:
 * config `plugins` (a path relative to the config directory, or an npm
 * package name resolved to its entry file under the plugin directory), the
 * `[[installed_plugins]]` bundles, then `CACHET_PLUGINS` (comma-separated,
 * relative to the working directory). Empty when only the built-in plugins
 * load. Each is an absolute path, whether or not a file is there. Reads no
 * file but the package.json of a plugin named by package; when that file is
 * not a valid manifest (src/plugin/manifest.ts) or its entry is outside the
 * package directory, the source is the package.json with the `problem` (the
 * plugin fails to load, named, as any bad plugin does). Never throws for a plugin.
 * @throws CachetError WORKING_DIR_GONE from src/paths.ts statePaths (a relative state directory, the working
 *   directory removed)
 */
export function externalPluginSources(options: LoadOptions): PluginSource[] {
  const env = options.env ?? process.env;
  const paths = statePaths(env);
  const configDir = options.configDir ?? paths.config;
  return [
    ...(options.config.plugins ?? []).map((spec) => resolveSpecifier(spec, configDir, pluginDir(paths))),
    ...(options.config.installed_plugins ?? []).map((record) => ({ path: record.file })),
    ...(env.CACHET_PLUGINS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map(fromWorkingDirectory),
  ];
}

/**
 * A `CACHET_PLUGINS` entry: its absolute path, or the entry as given with a
 * `problem` when it is relative and the working directory was removed since
 * cachet started there.
 */
function fromWorkingDirectory(path: string): PluginSource {
  if (isAbsolute(path) || workingDirectoryExists()) return { path: resolve(path) };
  return { path, problem: `CACHET_PLUGINS names the relative path ${path}, but the current working directory no longer exists; hint: cd into an existing directory, or give an absolute path` };
}

/** A third-party plugin's file (absolute path), or, with `problem`, why it cannot be found (one line). */
export interface PluginSource {
  path: string;
  problem?: string;
}

/**
 * The host of the built-in plugins alone, kept between commands once
 * {@link keepBuiltinHost} was called (the resident daemon: a turn skips
 * their setup and spec validation). Undefined in every other process.
 */
let builtinHost: { host?: PluginHost } | undefined;

/**
 * Makes {@link loadPlugins} reuse one host for every load that finds no
 * third-party plugin (no config `plugins`, no installed ones, no
 * `CACHET_PLUGINS`), for the process's life. The caller sets the host's
 * `limits` for each command, as src/run/runtime.ts does.
 */
export function keepBuiltinHost(): void {
  builtinHost ??= {};
}

/** Loads every built-in plugin into `host` and returns it. */
async function builtinsInto(host: PluginHost): Promise<PluginHost> {
  for (const [name, load] of Object.entries(builtinPlugins)) {
    const plugin = await importDefault(load, `builtin:${name}`, host);
    if (plugin !== undefined) await host.load(plugin, `builtin:${name}`, { builtin: true });
  }
  return host;
}

/** A `[providers.ID]` table for a provider no loaded plugin registers is a config error, as any unknown key is. */
function refuseUnknownProviderTables(config: Config, host: PluginHost, file: string): void {
  for (const id of Object.keys(config.providers ?? {})) {
    if (host.providers.has(id)) continue;
    throw new CachetError("CONFIG_INVALID", `invalid config key "providers.${id}" in ${file}: no plugin registers provider "${id}"`, {
      hint: `the providers are ${[...host.providers.keys()].sort().join(", ")}; a third-party provider's plugin goes in plugins = [...] (see README.md, Configuration)`,
    });
  }
}

async function importDefault(load: () => Promise<unknown>, source: string, host: PluginHost): Promise<unknown> {
  try {
    const mod = (await load()) as { default?: unknown };
    if (mod?.default === undefined) {
      host.failures.push({ plugin: source, message: `plugin ${source} has no default export; export default definePlugin({...})` });
      return undefined;
    }
    return mod.default;
  } catch (cause) {
    host.failures.push({ plugin: source, message: importFailure(source, cause) });
    return undefined;
  }
}

/**
 * Why a plugin module did not import, in the user's terms: a bare import the
 * compiled binary cannot resolve gets the bundling hint, and the binary's
 * internal paths (`/$bunfs/root/...`) are left out.
 */
function importFailure(source: string, cause: unknown): string {
  const message = (cause instanceof Error ? cause.message : String(cause)).split("\n", 1)[0]!;
  const bare = /Cannot find (?:package|module) ['"]([^'"./][^'"]*)['"]/.exec(message);
  if (bare) {
    return `plugin ${source} imports "${bare[1]}", which cachet cannot resolve at run time; hint: bundle it into one ESM file (\`bun build ${source} --target=bun --format=esm --outfile=plugin.js\`) or install it with \`cachet plugins add\``;
  }
  return `cannot import plugin ${source}: ${message.replace(/\s*from ['"]?\/\$bunfs\/[^'"\s]*['"]?/g, "").replace(/\/\$bunfs\/\S*/g, "cachet")}`;
}

/**
 * node:fs's existsSync, node:fs loaded at the first call: Bun's JS builtin costs ~2 ms to load, and only a run with
 * plugins of its own (config, CACHET_PLUGINS) asks.
 */
function existsSync(path: string): boolean {
  return process.getBuiltinModule("node:fs").existsSync(path);
}

/**
 * A path (absolute, or relative to the config dir) or an npm package name
 * under the plugin dir, resolved to its built entry ({@link builtEntries}:
 * `exports`, `module`, `main`, else index.js). A package.json that is not a
 * valid manifest, or an entry outside the package directory, is the source's
 * `problem`, naming the package, the file and the field.
 */
function resolveSpecifier(spec: string, configDir: string, pluginsRoot: string): PluginSource {
  if (isAbsolute(spec)) return { path: spec };
  if (spec.startsWith(".") || spec.includes("/") && existsSync(join(configDir, spec))) return { path: resolve(configDir, spec) };
  const packageDir = join(pluginsRoot, "node_modules", spec);
  const manifestPath = join(packageDir, "package.json");
  if (!existsSync(manifestPath)) return { path: join(packageDir, "index.js") };
  const hint = `hint: reinstall the package or remove "${spec}" from plugins in the config`;
  let text: string;
  try {
    // Read, not require()d: a required file is cached for the process's life, and a resident process would keep an old one.
    text = process.getBuiltinModule("node:fs").readFileSync(manifestPath, "utf8");
  } catch (cause) {
    return { path: manifestPath, problem: `plugin package ${spec}: cannot read ${manifestPath} (${(cause instanceof Error ? cause.message : String(cause)).split("\n", 1)[0]}); ${hint}` };
  }
  const parsed = parseManifest(text);
  if ("problem" in parsed) return { path: manifestPath, problem: `plugin package ${spec}: ${manifestPath} ${parsed.problem}; ${hint}` };
  const [entry] = builtEntries(parsed.manifest);
  if (entry === undefined) return { path: join(packageDir, "index.js") };
  const inside = entryInside(packageDir, entry);
  if ("problem" in inside) return { path: manifestPath, problem: `plugin package ${spec}: ${manifestPath} ${inside.problem}; ${hint}` };
  return inside;
}
