/**
 * A wait that an abort signal ends early (SIGINT / SIGTERM): retry backoff,
 * the session lease, anything that sleeps on the way to a result.
 */

/**
 * Waits `ms`, or less when `signal` aborts.
 * @throws the signal's reason when aborted (before or during the wait).
 */
export async function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  signal?.throwIfAborted();
  await new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
