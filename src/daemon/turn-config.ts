/**
 * Whether the resident daemon may run a turn, as its config says: asked by the daemon for each turn
 * (src/daemon/server.ts), and by a client that found no daemon before it starts one (src/daemon/autostart.ts), so
 * neither starts a daemon that would decline every turn. Loads neither the server nor the run command.
 */
import { type Config, loadConfig } from "../config.ts";
import { configFile, statePaths } from "../paths.ts";
import { externalPluginSources } from "../plugin/loader.ts";

/**
 * The config a turn run with environment `env` reads, or why the daemon leaves the turn to its client: it would load
 * a third-party plugin, which imported into the daemon would keep its module state between turns, write its console
 * output to the daemon's stderr, end the daemon by process.kill, and be stale after a change of one of its files
 * that keeps its size and modification time; or the config cannot be read, which the client's own process reports
 * as without a daemon. Call it in the turn's working directory (CACHET_PLUGINS paths are relative to it).
 * @param load reads the config file: the daemon's keeps what it parsed for the next turn (src/config.ts loadConfigKept)
 * @returns the config file's path and its contents, or the reason (one clause, for the client's `--verbose` line)
 * @throws CachetError WORKING_DIR_GONE from src/paths.ts statePaths (a relative state directory, the working directory removed)
 */
export async function residentTurnConfig(env: Record<string, string | undefined>, load: (path: string) => Promise<Config> = loadConfig): Promise<{ path: string; config: Config } | string> {
  const path = configFile(statePaths(env));
  let config: Config;
  try {
    config = await load(path);
  } catch {
    return `the config ${path} cannot be used: the client reports why`;
  }
  // Most configs name no plugin: nothing to resolve (statePaths again, a path per source) before every turn.
  const named = config.plugins?.length || config.installed_plugins?.length || env.CACHET_PLUGINS;
  const first = named ? externalPluginSources({ config, env })[0]?.path : undefined;
  if (first !== undefined) return `the turn loads a third-party plugin (${first}): it runs in its own process`;
  return { path, config };
}
