/**
 * One fetch function for the runtimes a resident process (src/daemon) opens,
 * one command at a time, with the same environment, instead of one per
 * runtime: the provider plugins keep their SDK clients per fetch, key and
 * base URL (building one builds every resource object of the SDK, ~0.3 ms
 * before the request), so a client built for one turn serves the next. An SDK
 * reads variables of its own as its client is built (custom headers, log
 * level, an auth token), so a command with another environment gets another
 * function, and with it clients built afresh, as in its own process. Each call
 * goes to the watched fetch of the runtime opened last (src/run/attempt-billing.ts),
 * which is the command's own: the daemon runs one command at a time and a command opens one runtime.
 */

/** The shared functions by environment, once {@link keepFetchStable} was called; undefined in every other process. */
let stable: Map<string, typeof fetch> | undefined;
/** The watched fetch of the runtime opened last. */
let current: typeof fetch | undefined;

/** Environments a resident process keeps a function (and so SDK clients) for. */
const ENVIRONMENTS = 4;

/**
 * The environment of the command the daemon runs now, as the plain object it was sent as (process.env holds the
 * same while it runs); undefined between commands.
 */
let commandEnv: Record<string, string | undefined> | undefined;

/** The environment and key of the command before: the next one's key when its environment is the same. */
let previous: { env: Record<string, string | undefined>; key: string } | undefined;

/**
 * Tells {@link runtimeFetch} the environment of the command the resident process runs now, or undefined once it
 * ended; process.env must hold exactly `env` meanwhile (src/daemon/server.ts). That environment's key is then worked
 * out from this plain object, and taken over from the command before when both hold the same variables, not from
 * process.env (a native lookup per variable, then every name sorted and the whole written as JSON: ~40 µs before
 * each turn's request, measured in the daemon).
 */
export function commandEnvironment(env: Record<string, string | undefined> | undefined): void {
  commandEnv = env;
}

/** Makes {@link runtimeFetch} share functions for the process's life (the daemon calls it once, before any command). */
export function keepFetchStable(): void {
  stable ??= new Map();
}

/**
 * The fetch a runtime gives the provider adapters: `watched` itself, or in a
 * resident process the function shared by the runtimes of environment `env`,
 * which from now on calls `watched`.
 */
export function runtimeFetch(watched: typeof fetch, env: Record<string, string | undefined>): typeof fetch {
  if (stable === undefined) return watched;
  current = watched;
  const key = env === process.env && commandEnv !== undefined ? commandKey(commandEnv) : environmentKey(env);
  let shared = stable.get(key);
  if (shared) stable.delete(key);
  else shared = ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => current!(input, init)) as typeof fetch;
  stable.set(key, shared);
  if (stable.size > ENVIRONMENTS) stable.delete(stable.keys().next().value!);
  return shared;
}

/** What tells environment `env` from another: its variables and values, by name. */
function environmentKey(env: Record<string, string | undefined>): string {
  return JSON.stringify(Object.keys(env).sort().map((name) => [name, env[name]]));
}

/** {@link environmentKey} of a command's environment, taken over from the command before (or its earlier runtime) when it is the same. */
function commandKey(env: Record<string, string | undefined>): string {
  if (previous !== undefined && (previous.env === env || sameEnvironment(previous.env, env))) return previous.key;
  const key = environmentKey(env);
  previous = { env, key };
  return key;
}

/** Whether `a` and `b` hold the same variables with the same values. */
function sameEnvironment(a: Record<string, string | undefined>, b: Record<string, string | undefined>): boolean {
  for (const name in a) if (a[name] !== b[name] || !(name in b)) return false;
  for (const name in b) if (!(name in a)) return false;
  return true;
}
