/**
 * One fetch function for every runtime a resident process (src/daemon) opens,
 * one command at a time, instead of one per runtime: the provider plugins keep
 * their SDK clients per fetch, key and base URL (building one builds every
 * resource object of the SDK, ~0.3 ms before the request), so a client built
 * for one turn serves the next. Each call goes to the watched fetch of the
 * runtime opened last (src/run/attempt-billing.ts), which is the command's own:
 * the daemon runs one command at a time and a command opens one runtime.
 */

/** The runtimes' shared fetch once {@link keepFetchStable} was called; undefined in every other process. */
let stable: typeof fetch | undefined;
/** The watched fetch of the runtime opened last. */
let current: typeof fetch | undefined;

/** Makes {@link runtimeFetch} return one function for the process's life (the daemon calls it once, before any command). */
export function keepFetchStable(): void {
  stable ??= ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => current!(input, init)) as typeof fetch;
}

/**
 * The fetch a runtime gives the provider adapters: `watched` itself, or in a
 * resident process the shared function, which from now on calls `watched`.
 */
export function runtimeFetch(watched: typeof fetch): typeof fetch {
  if (stable === undefined) return watched;
  current = watched;
  return stable;
}
