/**
 * SIGINT and SIGTERM for a run: one abort signal that every wait listens to
 * (stdin, the session lease, retry backoff, plugin hooks, the stream), and a
 * watchdog that ends the command within a second whatever is still running.
 * Signals and the exit are the command's edges (src/edges.ts).
 */
import { edges, type Edges } from "../edges.ts";
import { CachetError, EXIT } from "../errors.ts";

/** The interruption of one run. */
export interface Interrupt {
  /** Aborted on the first SIGINT or SIGTERM; its reason is a CachetError INTERRUPTED carrying the exit code. */
  signal: AbortSignal;
  /** Removes the signal handlers and the watchdog. */
  dispose(): void;
}

/** Exit codes by signal: 128 + the signal number, as shells report it. */
const SIGNAL_EXIT = { SIGINT: EXIT.interrupted, SIGTERM: EXIT.terminated } as const;

/**
 * Installs the handlers. On a signal the run's signal is aborted; if the
 * run is still going `graceMs` later (a plugin that ignores the signal, a
 * synchronous step), it prints one line and exits with 130 (SIGINT) or 143
 * (SIGTERM). A second signal exits at once.
 * @param graceMs how long the run may take to store what it has, ms (default 800: the whole run ends within 1 s)
 */
export function handleInterrupts(graceMs = 800): Interrupt {
  const controller = new AbortController();
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  // The edges of the run that installed the handlers: the watchdog may fire after a resident process bound another's.
  const own = edges();
  const unsubscribe: (() => void)[] = [];
  for (const name of Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]) {
    const code = SIGNAL_EXIT[name];
    const handler = () => {
      if (controller.signal.aborted) hardExit(own, code);
      // Only what happened: the stage the signal stops says what it kept (interruptedAt).
      controller.abort(new CachetError("INTERRUPTED", `interrupted by ${name}`, { exitCode: code }));
      watchdog = setTimeout(() => hardExit(own, code), graceMs);
    };
    unsubscribe.push(own.onSignal(name, handler));
  }
  return {
    signal: controller.signal,
    dispose() {
      for (const off of unsubscribe) off();
      clearTimeout(watchdog);
    },
  };
}

/**
 * The run's interruption as one error saying where it stopped and what was
 * kept, e.g. `interrupted by SIGINT before the request was sent: nothing was sent`.
 * @param signal an aborted run signal (its reason names the signal and carries the exit code)
 * @param what where the run stopped and what it kept
 */
export function interruptedAt(signal: AbortSignal, what: string): CachetError {
  const reason = signal.reason as { message?: unknown } | undefined;
  const head = typeof reason?.message === "string" && reason.message.startsWith("interrupted") ? reason.message : "interrupted";
  return new CachetError("INTERRUPTED", `${head} ${what}`, { exitCode: interruptExitCode(signal) });
}

/**
 * Throws when the run was interrupted: called before anything is sent (a
 * request, a summary call), so a signal that came during a step that cannot
 * itself be stopped (module loading, a synchronous plugin) sends nothing.
 * @throws CachetError INTERRUPTED "… before the request was sent: nothing was sent"
 */
export function stopIfInterrupted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw interruptedBeforeSend(signal);
}

/**
 * Resolves once a signal that already reached the process has run its
 * handler: Bun dispatches signals from the event loop, which a chain of
 * settled promises (a plugin's synchronous hook, memoized steps) never
 * reaches, so without this turn of the loop the abort would come just after
 * the request left.
 */
export function signalsDelivered(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A point where a run may stop before sending: lets a pending signal's
 * handler run ({@link signalsDelivered}), then {@link stopIfInterrupted}.
 * @throws CachetError INTERRUPTED when the run was interrupted
 */
export async function checkpoint(signal: AbortSignal | undefined): Promise<void> {
  await signalsDelivered();
  stopIfInterrupted(signal);
}

/**
 * `promise`, or a rejection with the signal's reason as soon as the signal is aborted (the promise itself goes on:
 * a read of a pipe cannot be taken back, and the run ends before it matters).
 */
export function untilInterrupted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** What a run interrupted before its request says it kept (also said by a daemon's client whose command never started). */
export const NOTHING_SENT = "before the request was sent: nothing was sent, and the prompt was not stored";

/** The interruption of a run stopped before its request was sent (see {@link interruptedAt}). */
export function interruptedBeforeSend(signal: AbortSignal): CachetError {
  return interruptedAt(signal, NOTHING_SENT);
}

/** The exit code of an interrupted run: from the signal's reason, else 130. */
export function interruptExitCode(signal: AbortSignal): number {
  const reason = signal.reason as { exitCode?: unknown } | undefined;
  return typeof reason?.exitCode === "number" ? reason.exitCode : EXIT.interrupted;
}

function hardExit(own: Edges, code: number): never {
  own.writeStderr("cachet: interrupted; stopped what was still running (what was stored so far is kept)\n");
  return own.exit(code);
}
