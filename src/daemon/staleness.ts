/**
 * What a resident process cannot take from a client's command line: the
 * environment the runtime read once at start (proxies, CA certificates, the
 * runtime's own options, the time zone), and module files it loaded
 * (a module cannot be unloaded, so a changed file means a stale server).
 */
import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { statePaths } from "../paths.ts";

/** Variables read once when the runtime starts (exact names; proxy names are matched in any case). */
const START_ONLY = new Set(["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_OPTIONS", "NODE_TLS_REJECT_UNAUTHORIZED", "TZ"]);
const PROXY = new Set(["http_proxy", "https_proxy", "no_proxy", "all_proxy"]);

/** Whether `name` is one the runtime reads at start only: a server whose value differs would act on its own, not the client's. */
export function startOnlyVariable(name: string): boolean {
  if (START_ONLY.has(name) || name.startsWith("BUN_")) return true;
  // Every proxy name ends in y or Y ("_proxy"): the others are told apart without lower-casing a copy of each name
  // of two environments before every turn the daemon takes.
  return name.length >= 8 && (name.charCodeAt(name.length - 1) | 0x20) === 0x79 && PROXY.has(name.toLowerCase());
}

/**
 * The first start-only variable (see {@link startOnlyVariable}) whose value
 * differs between `client` and `server`, or undefined when they agree.
 */
export function startEnvDifference(client: Record<string, string | undefined>, server: Record<string, string | undefined>): string | undefined {
  for (const name in client) if (startOnlyVariable(name) && (client[name] ?? "") !== (server[name] ?? "")) return name;
  for (const name in server) if (!(name in client) && startOnlyVariable(name) && (server[name] ?? "") !== "") return name;
  return undefined;
}

/**
 * Whether `client`'s environment names other state directories than
 * `server`'s (CACHET_HOME, XDG_*, HOME): the same data directory reached
 * the socket, but a config directory elsewhere is another installation.
 * Compared as the directories they are, not as text: each path resolved
 * against its process's working directory (`clientCwd`, `serverCwd`) and its
 * symbolic links followed, so `/h/`, `/h/.`, `/x/../h`, a relative `.` run
 * inside `/h` and a link to it are all `/h`.
 */
export function otherStateDirs(client: Record<string, string | undefined>, clientCwd: string, server: Record<string, string | undefined>, serverCwd: string): boolean {
  try {
    const a = statePaths(client);
    const b = statePaths(server);
    // The same path names, absolute or from the same directory, are the same directories: followed only when they
    // differ (realpath asks the file system part by part, four times, before every turn the daemon takes).
    if (a.config === b.config && a.data === b.data && ((isAbsolute(a.config) && isAbsolute(a.data)) || clientCwd === serverCwd)) return false;
    return directoryOf(a.config, clientCwd) !== directoryOf(b.config, serverCwd) || directoryOf(a.data, clientCwd) !== directoryOf(b.data, serverCwd);
  } catch {
    // A relative directory with no working directory to be relative to (the daemon's data directory removed): the
    // client's own process tells the user.
    return true;
  }
}

/**
 * `path` resolved against `cwd`, its symbolic links followed: those of its deepest part that exists, the rest
 * appended as written (a config directory not made yet under a home reached through a link is still under the
 * home's real path).
 */
function directoryOf(path: string, cwd: string): string {
  let head = resolve(cwd, path);
  let rest = "";
  for (;;) {
    try {
      return join(realpathSync.native(head), rest);
    } catch {
      const parent = dirname(head);
      if (parent === head) return resolve(cwd, path);
      rest = join(basename(head), rest);
      head = parent;
    }
  }
}

/**
 * Every module file this process loaded from outside its own binary, from
 * the runtime's module registry (`require.cache`, which in Bun lists ES
 * modules too). The binary's own modules live in its embedded file system
 * (/$bunfs/… on POSIX, B:/~BUN/… on Windows) and never change; a resident
 * process imports no third-party plugin (src/daemon/server.ts declines such
 * turns), so these are cachet's own files and its dependencies' when it runs
 * from source (`bun src/cli/main.ts`). Of those, the build id
 * (src/daemon/build-id.ts) covers src/, plugins/ and package.json, not
 * node_modules: a dependency changed under a running server is seen here.
 */
export function loadedModuleFiles(): string[] {
  return Object.keys(require.cache).filter((path) => !path.startsWith("/$bunfs/") && !path.includes("~BUN") && isAbsolute(path));
}

/** What identifies one version of a file: inode, size and modification time; "" when it does not exist. */
export async function fileVersion(path: string): Promise<string> {
  const stat = await Bun.file(path)
    .stat()
    .catch(() => undefined);
  return stat ? `${stat.ino}:${stat.size}:${stat.mtimeMs}` : "";
}

/**
 * The versions of the module files a process loaded (see
 * {@link loadedModuleFiles}), taken when it first saw each: {@link changed}
 * names one whose file is another version now.
 */
export class ImportedFiles {
  private versions = new Map<string, string>();

  /** Records the version of each file in `files` not yet seen. */
  async note(files: Iterable<string>): Promise<void> {
    for (const file of files) if (!this.versions.has(file)) this.versions.set(file, await fileVersion(file));
  }

  /** The first recorded file that changed since it was noted, or undefined. */
  async changed(): Promise<string | undefined> {
    for (const [file, version] of this.versions) if ((await fileVersion(file)) !== version) return file;
    return undefined;
  }
}
