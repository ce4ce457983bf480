/**
 * Opening an SQLite file that other cachet processes may be opening at the
 * same moment (the store, the emulator's cache state).
 */

/**
 * Runs `open` (open the file and set it up: pragmas, schema), again while it
 * fails with SQLITE_BUSY, for up to `timeoutMs`. SQLite answers SQLITE_BUSY at
 * once, without calling its busy handler, in a few places while another
 * process is creating the file or switching it to WAL; those races end within
 * milliseconds, so the waits are short (2 ms doubling to 50 ms, jittered).
 * `open` must close what it opened before it throws.
 * @param transient another failure of such a race, retried as SQLITE_BUSY is (the caller knows what its file allows)
 * @throws the error of `open` when it is not SQLITE_BUSY (the code on the error or on its `cause`) nor `transient`, or the last one once the time is up
 */
export function retryWhileBusy<T>(open: () => T, timeoutMs: number, transient: (error: unknown) => boolean = () => false): T {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    try {
      return open();
    } catch (error) {
      if (!(isBusy(error) || transient(error)) || Date.now() + delay > deadline) throw error;
      Bun.sleepSync(delay + Math.random() * delay);
    }
  }
}

function isBusy(error: unknown): boolean {
  const e = error as { code?: unknown; cause?: { code?: unknown } } | undefined;
  return /^SQLITE_BUSY/.test(String(e?.code ?? "")) || /^SQLITE_BUSY/.test(String(e?.cause?.code ?? ""));
}
