/**
 * Where cachet keeps its state. `CACHET_HOME` relocates everything at once
 * (tests and scripts use it); otherwise the platform's conventions apply:
 * XDG on Linux, ~/Library on macOS, %APPDATA%/%LOCALAPPDATA% on Windows.
 */
import { workingDirectory } from "./working-dir.ts";

/**
 * node:path's join, node:path loaded at the first call: Bun's JS builtin costs
 * ~2 ms to load in a compiled program, and a turn handed to the resident
 * daemon (src/daemon/client.ts) under CACHET_HOME needs no join at all.
 */
function join(...parts: string[]): string {
  return process.getBuiltinModule("node:path").join(...parts);
}

/**
 * The directories cachet reads and writes: absolute paths, unless a variable they come from (CACHET_HOME, XDG_*,
 * HOME, …) is a relative one, which is relative to the working directory.
 */
export interface StatePaths {
  /** Holds `config.toml`. */
  config: string;
  /** Holds the SQLite store, the emulator's cache state, updated price catalogs and plugins. */
  data: string;
}

/**
 * Resolves the state directories from the environment. Creates nothing.
 * @param env the environment to read (defaults to `process.env`)
 * @throws CachetError WORKING_DIR_GONE (exit 1) when a variable a directory comes from is a relative path and the
 *   working directory was removed: everything there would read as missing, and a store be refused with ENOENT
 */
export function statePaths(env: Record<string, string | undefined> = process.env): StatePaths {
  /** The variable `name`, once a relative path in it has a working directory to be relative to. */
  const read = (name: string): string | undefined => {
    const value = env[name];
    // Not node:path's isAbsolute on POSIX: a turn handed to the daemon under CACHET_HOME loads no node:path.
    const absolute = process.platform === "win32" ? process.getBuiltinModule("node:path").isAbsolute(value ?? "") : value?.startsWith("/");
    if (value && !absolute) workingDirectory(`${name}'s relative path "${value}"`);
    return value;
  };
  const home = read("CACHET_HOME");
  if (home) return { config: home, data: home };
  // node:os only when neither is set: Bun's JS builtin costs ~0.5 ms to load. Read only when a directory comes from it.
  const user = () => read("HOME") ?? read("USERPROFILE") ?? process.getBuiltinModule("node:os").homedir();
  if (process.platform === "win32") {
    const roaming = read("APPDATA") ?? join(user(), "AppData", "Roaming");
    const local = read("LOCALAPPDATA") ?? join(user(), "AppData", "Local");
    return { config: join(roaming, "cachet"), data: join(local, "cachet") };
  }
  if (process.platform === "darwin" && !env.XDG_CONFIG_HOME && !env.XDG_DATA_HOME) {
    const support = join(user(), "Library", "Application Support", "cachet");
    return { config: support, data: support };
  }
  return {
    config: join(read("XDG_CONFIG_HOME") || join(user(), ".config"), "cachet"),
    data: join(read("XDG_DATA_HOME") || join(user(), ".local", "share"), "cachet"),
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
