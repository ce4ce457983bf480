/**
 * Keeps third-party plugin code from ending cachet. Once the first
 * third-party plugin is about to be imported ({@link trapPluginExits}),
 * `process.exit`, `process.reallyExit` and `process.abort` throw a
 * PLUGIN_HOOK error instead of ending the process: a plugin that ended the
 * process left no error line, no done line, a ledger row in flight and its
 * own exit code (0 included) as cachet's; setting `process.exitCode` did the
 * same once cachet ended. Inside a guarded call (guard.ts)
 * the error becomes that call's one-line failure; outside one (a timer the
 * plugin set) it is uncaught, and ends cachet with its one line and exit 1
 * (Bun's own report of an uncaught error quotes the bundle's source). cachet's own exits go
 * through src/edges.ts, which took the real `process.exit` before any plugin loaded.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import { edges } from "../edges.ts";
import { CachetError } from "../errors.ts";
import type { CallSite } from "./guard.ts";

/** The errors the trap threw: an uncaught one is reported in one line. */
const refused = new WeakSet<object>();

/** The call site of the plugin code now running; made with the trap, so a run of built-in plugins alone never loads node:async_hooks. */
let sites: AsyncLocalStorage<CallSite> | undefined;

/**
 * Replaces the process's exits with throwing ones, once per process. Call
 * before importing any third-party plugin; from then on, for the process's life.
 */
export function trapPluginExits(): void {
  if (sites) return;
  const { AsyncLocalStorage } = process.getBuiltinModule("node:async_hooks");
  sites = new AsyncLocalStorage<CallSite>();
  const trapped = (what: string) =>
    function exitRefused(code?: unknown): never {
      throw exitError(sites?.getStore(), what === "abort" ? "process.abort()" : `process.${what}(${code === undefined ? "" : String(code)})`);
    };
  const target = process as unknown as Record<string, unknown>;
  for (const what of ["exit", "reallyExit", "abort"]) {
    if (typeof target[what] === "function") target[what] = trapped(what);
  }
  // A monitor, not a handler: every other uncaught error keeps the runtime's own report and exit code.
  process.on("uncaughtExceptionMonitor", (error) => {
    if (!refused.has(error)) return;
    const e = error as CachetError;
    edges().writeStderr(`cachet: ${e.message}\n  hint: ${e.hint}\n`);
    edges().exit(e.exitCode);
  });
}

/**
 * Runs `fn` as plugin code of `site`: an exit it (or anything it schedules)
 * attempts names that plugin and call, and a `process.exitCode` it set (by
 * the time its promise settles) is put back and throws the same refusal.
 * Just `fn()` before {@link trapPluginExits}.
 */
export function inSite<T>(site: CallSite, fn: () => T): T {
  if (!sites) return fn();
  // process.exitCode cannot be trapped (Bun's property is not configurable): a call that set it gets it put back and
  // fails as a refused exit, so a plugin's code never becomes cachet's (an answer printed and stored, then exit 7).
  const before = process.exitCode;
  const checked = (): void => {
    const after = process.exitCode;
    if (after === before) return;
    // Bun keeps a set code when given undefined back: 0 is what an unset one means.
    process.exitCode = before ?? 0;
    throw exitError(site, `process.exitCode = ${String(after)}`);
  };
  const result = sites.run(site, fn);
  if (result instanceof Promise) {
    return result.then(
      (value) => {
        checked();
        return value;
      },
      (error: unknown) => {
        checked();
        throw error;
      },
    ) as T;
  }
  checked();
  return result;
}

/** The error a refused exit throws: PLUGIN_HOOK naming the plugin and the call when known. */
function exitError(site: CallSite | undefined, call: string): CachetError {
  const who = site ? `${site.plugin}: ${site.call} called` : "a plugin called";
  const error = new CachetError("PLUGIN_HOOK", `${who} ${call}; a plugin must throw an error instead of ending the process`, {
    hint: site ? `update or remove the plugin "${site.plugin}" (\`cachet plugins list\`), or report it to its author` : "`cachet plugins list` shows the loaded plugins; update or remove the one that ends the process",
  });
  refused.add(error);
  return error;
}
