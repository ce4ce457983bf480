/**
 * SIGINT and SIGTERM for a run: one abort signal that every wait listens to
 * (stdin, the session lease, retry backoff, plugin hooks, the stream), and a
 * watchdog that ends the process within a second whatever is still running.
 */
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
 * process is still alive `graceMs` later (a plugin that ignores the signal, a
 * synchronous step), it prints one line and exits with 130 (SIGINT) or 143
 * (SIGTERM). A second signal exits at once.
 * @param graceMs how long the run may take to store what it has, ms (default 800: the whole run ends within 1 s)
 */
export function handleInterrupts(graceMs = 800): Interrupt {
  const controller = new AbortController();
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const handlers = new Map<NodeJS.Signals, () => void>();
  for (const name of Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]) {
    const code = SIGNAL_EXIT[name];
    const handler = () => {
      if (controller.signal.aborted) hardExit(code);
      controller.abort(new CachetError("INTERRUPTED", `interrupted by ${name}; the partial answer, if any, is stored and marked incomplete`, { exitCode: code }));
      watchdog = setTimeout(() => hardExit(code), graceMs);
    };
    handlers.set(name, handler);
    process.on(name, handler);
  }
  return {
    signal: controller.signal,
    dispose() {
      for (const [name, handler] of handlers) process.off(name, handler);
      clearTimeout(watchdog);
    },
  };
}

/** The exit code of an interrupted run: from the signal's reason, else 130. */
export function interruptExitCode(signal: AbortSignal): number {
  const reason = signal.reason as { exitCode?: unknown } | undefined;
  return typeof reason?.exitCode === "number" ? reason.exitCode : EXIT.interrupted;
}

function hardExit(code: number): never {
  process.stderr.write("cachet: interrupted; stopped what was still running (what was stored so far is kept)\n");
  process.exit(code);
}
