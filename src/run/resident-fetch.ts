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
  const key = JSON.stringify(Object.keys(env).sort().map((name) => [name, env[name]]));
  let shared = stable.get(key);
  if (shared) stable.delete(key);
  else shared = ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => current!(input, init)) as typeof fetch;
  stable.set(key, shared);
  if (stable.size > ENVIRONMENTS) stable.delete(stable.keys().next().value!);
  return shared;
}
