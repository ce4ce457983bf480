/**
 * What a run does while its stdin is still being read, so that the request
 * leaves as soon as the input ends: open the runtime (config, plugins, the
 * store, the emulator), choose the session, resolve the provider's base URL
 * and open the connection to it (Bun's `fetch.preconnect`: DNS, TCP and the
 * TLS handshake; the request then reuses the pooled connection:
 * https://bun.sh/reference/globals/fetch/preconnect) and load the session.
 * The price catalog is not parsed here: nothing before sending needs it (the
 * window check reads only the model's line of the embedded catalog, src/meter/model-limits.ts), and it would
 * hold this thread when stdin is already closed. Nor is the turn lease's
 * keeper thread started: it starts a second after the lease is taken, after a
 * short run's request has left (src/session/leases.ts).
 *
 * Nothing here is stored and no lease is taken: the turn chooses, leases and
 * loads its session again once the input is complete. That load is cheap
 * after this one (the store caches the log and rereads only what changed
 * since, src/session/log.ts), and it is what the turn uses, so a session
 * another process changes meanwhile is seen as it is then. When the input
 * was complete before the runtime opened (PROMPT words, nothing piped), the
 * session is not loaded here: nothing is left to overlap, and the turn's own
 * load would repeat its reads.
 */
import { openRuntime, type Runtime, type RuntimeOptions } from "./runtime.ts";
import { parseModelRef, providerBaseUrl } from "./resolve-provider.ts";
import { modelRefOf } from "./stages/input.ts";
import { chooseSession } from "./stages/session.ts";
import type { SessionChoice } from "./turn-types.ts";

/** The flags of a run that the early work depends on (all known before stdin is read). */
export interface RunSetup {
  /** `-m provider/model`. */
  model?: string;
  /** `--base-url`. */
  baseUrl?: string;
  session: SessionChoice;
  fork: boolean;
}

/** A runtime being opened ahead of the run's input. */
export interface PreparedRun {
  /** The opened runtime; rejects with what {@link openRuntime} throws (a bad config). The caller closes it. */
  runtime: Promise<Runtime>;
  /** Closes the runtime if it opened: for a run that fails before it uses it (bad stdin, a bad flag file). */
  discard(): Promise<void>;
  /** Says the run's input is complete (stdin read): a runtime opening after this does not load the session ahead of the turn. */
  inputRead(): void;
}

/**
 * Starts opening the runtime and, once open, the early work of the turn
 * described by `setup`. Failures of the early work are ignored: the turn
 * meets them again in order and reports them (an unknown session, provider
 * or model).
 */
export function prepareRun(options: RuntimeOptions, setup: RunSetup, notice: (message: string) => void): PreparedRun {
  const runtime = openRuntime(options, notice);
  let inputRead = false;
  // Rejections are the caller's to see when it awaits `runtime`; not an unhandled rejection meanwhile.
  runtime.then((r) => warm(r, setup, !inputRead)).catch(() => {});
  return {
    runtime,
    async discard() {
      await runtime.then((r) => r.close()).catch(() => {});
    },
    inputRead() {
      inputRead = true;
    },
  };
}

function warm(runtime: Runtime, setup: RunSetup, loadSession: boolean): void {
  let target: ReturnType<typeof chooseSession>;
  try {
    // The session names the provider when -m does not.
    target = loadSession || setup.model === undefined ? chooseSession(runtime, setup) : undefined;
  } catch {
    target = undefined;
  }
  try {
    const ref = parseModelRef(modelRefOf(setup.model, target, runtime.config));
    const url = new URL(providerBaseUrl({ host: runtime.host, config: runtime.config, ref, baseUrl: setup.baseUrl, emulatorUrl: runtime.emulatorUrl }));
    if (!runtime.emulatorUrl && (url.protocol === "https:" || url.protocol === "http:")) runtime.preconnect(url.origin);
  } catch {
    // An unknown provider or a malformed model or URL: the turn reports it.
  }
  if (!loadSession) return;
  try {
    if (target) runtime.store.loadSession(target.id);
  } catch {
    // A session without a stable prefix yet: the turn reports it.
  }
}
