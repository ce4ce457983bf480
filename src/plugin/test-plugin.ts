/**
 * `cachet plugins test FILE`: the contract kit (contract-kit.ts) run on one
 * plugin, offline, against an in-process emulator. FILE may be a bundled
 * plugin, a plugin's source entry or its project directory: it is bundled
 * the way `plugins add` bundles it (a project from its sources), then loaded beside the built-ins.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { runContract, type ContractCheck } from "./contract-kit.ts";
import { bundlePlugin } from "./install.ts";
import { loadPlugins } from "./loader.ts";

/** What {@link testPlugin} found. */
export interface PluginTestReport {
  /** The plugin's name, or the path when it did not load. */
  plugin: string;
  /** Load failures (the plugin's, one line each); empty when it loaded. */
  loadErrors: string[];
  checks: ContractCheck[];
  ok: boolean;
}

/**
 * Bundles, loads and checks a plugin.
 * @throws CachetError PLUGIN_INSTALL when FILE does not exist or does not bundle.
 */
export async function testPlugin(path: string, options: { cwd: string; env: Record<string, string | undefined> }): Promise<PluginTestReport> {
  const source = resolve(options.cwd, path);
  const bundle = await bundlePlugin(source, path, "sources");
  const scratch = await mkdtemp(join(tmpdir(), "cachet-plugin-test-"));
  try {
    const file = join(scratch, "plugin.js");
    await writeFile(file, bundle);
    const host = await loadPlugins({ config: {}, env: { ...options.env, CACHET_PLUGINS: file } });
    const loaded = host.plugins.find((p) => p.source === file);
    const loadErrors = host.failures.map((f) => f.message.replaceAll(file, path));
    if (!loaded) return { plugin: path, loadErrors, checks: [], ok: false };
    const { startEmulator } = await import("../emulator/index.ts");
    const emulator = await startEmulator({ port: 0, statePath: null, env: { ...options.env, CACHET_HOME: scratch } });
    try {
      const checks: ContractCheck[] = [];
      for (const provider of loaded.providers) checks.push(...(await runContract(host, provider, { emulatorUrl: emulator.url })));
      return { plugin: loaded.name, loadErrors, checks, ok: loadErrors.length === 0 && checks.every((c) => c.ok) };
    } finally {
      await emulator.stop();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
