/**
 * Where cachet keeps its state. `CACHET_HOME` relocates everything at once
 * (tests and scripts use it); otherwise the platform's conventions apply:
 * XDG on Linux, ~/Library on macOS, %APPDATA%/%LOCALAPPDATA% on Windows.
 */

/**
 * node:path's join, node:path loaded at the first call: Bun's JS builtin costs
 * ~2 ms to load in a compiled program, and a turn handed to the resident
 * daemon (src/daemon/client.ts) under CACHET_HOME needs no join at all.
 */
function join(...parts: string[]): string {
  return process.getBuiltinModule("node:path").join(...parts);
}

/** The directories cachet reads and writes. All absolute paths. */
export interface StatePaths {
  /** Holds `config.toml`. */
  config: string;
  /** Holds the SQLite store, the emulator's cache state, updated price catalogs and plugins. */
  data: string;
}

/**
 * Resolves the state directories from the environment. Pure: creates nothing.
 * @param env the environment to read (defaults to `process.env`)
 */
export function statePaths(env: Record<string, string | undefined> = process.env): StatePaths {
  const home = env.CACHET_HOME;
  if (home) return { config: home, data: home };
  // node:os only when neither is set: Bun's JS builtin costs ~0.5 ms to load.
  const user = env.HOME ?? env.USERPROFILE ?? process.getBuiltinModule("node:os").homedir();
  if (process.platform === "win32") {
    const roaming = env.APPDATA ?? join(user, "AppData", "Roaming");
    const local = env.LOCALAPPDATA ?? join(user, "AppData", "Local");
    return { config: join(roaming, "cachet"), data: join(local, "cachet") };
  }
  if (process.platform === "darwin" && !env.XDG_CONFIG_HOME && !env.XDG_DATA_HOME) {
    const support = join(user, "Library", "Application Support", "cachet");
    return { config: support, data: support };
  }
  return {
    config: join(env.XDG_CONFIG_HOME || join(user, ".config"), "cachet"),
    data: join(env.XDG_DATA_HOME || join(user, ".local", "share"), "cachet"),
  };
}

/** Path of the config file. */
export function configFile(paths: StatePaths = statePaths()): string {
  return join(paths.config, "config.toml");
}

/** Path of the SQLite store (sessions, nodes, ledger). */
export function storeFile(paths: StatePaths = statePaths()): string {
  return join(paths.data, "cachet.db");
}

/** Path of the price catalog `cachet prices update` stores (src/meter/catalog.ts). */
export function storedCatalogFile(paths: StatePaths = statePaths()): string {
  return join(paths.data, "prices", "api.json");
}

/** Directory where npm-installed plugins live (`<data>/plugins/node_modules/<name>`). */
export function pluginDir(paths: StatePaths = statePaths()): string {
  return join(paths.data, "plugins");
}
