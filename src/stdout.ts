/**
 * The one way cachet writes to stdout: the command's native stdout sink
 * (src/edges.ts; the process's own is `Bun.stdout.writer()`, a FileSink),
 * taken at the command's first write. Not
 * `process.stdout`: Bun builds that Node stream lazily over the same native
 * writer, and building it loads node:stream (~8 ms of CPU in a compiled
 * program measured on the 2-core bench machine, 40–70 ms wall under load).
 * Not `Bun.write(Bun.stdout, …)` either: to a pipe whose reader is slow it
 * may write a large piece only in part (src/cli/write-out.ts). Each piece is
 * flushed: the sink writes what the pipe takes and waits for it to take the
 * rest, so pieces go out whole and in order.
 *
 * A reader closing the pipe early (`| head`) is no failure: the writes stop
 * and the command goes on, so a run still stores its turn and ledger row.
 * Any other failed write (a full disk: ENOSPC) also stops the writes, and
 * {@link settleStdout} turns it into an error at the command's end, after the
 * turn was stored.
 */
import { edges, type StdoutSink } from "./edges.ts";
import { CachetError } from "./errors.ts";

/** What a command writes its output with. */
export interface StdoutWriter {
  /** Queues `chunk`; after a failed write (or a closed pipe) it writes nothing. */
  write(chunk: string): void;
}

// The command's state: a resident process runs many commands, one at a time (resetStdout).
let sink: StdoutSink | undefined;
/** The reader closed the pipe (EPIPE). */
let closed = false;
/** The first failed write that is not EPIPE. */
let failure: NodeJS.ErrnoException | undefined;
let pending = 0;
/** Called once no write is pending. */
let idle: (() => void)[] = [];

const writer: StdoutWriter = {
  write(chunk) {
    if (closed || failure !== undefined || chunk === "") return;
    sink ??= edges().stdoutSink();
    pending++;
    // Each a number when the piece went out (or was buffered) at once, else a promise settled once it did or
    // failed: a large piece is written at once, and its write's promise, not the flush's, carries its failure.
    // Either may also throw (the flush, once the reader closed the pipe, while the write's promise is pending):
    // both outcomes are held, or a rejection nobody holds ends the process with a stack trace.
    const wrote = attempt(() => sink!.write(chunk));
    const flushed = attempt(() => sink!.flush());
    Promise.all([wrote, flushed]).then(settled, (error: unknown) => {
      noteStdoutFailure(error);
      settled();
    });
  },
};

/** `run`'s result, or its synchronous throw as a rejected promise. */
function attempt<T>(run: () => T): T | Promise<never> {
  try {
    return run();
  } catch (error) {
    return Promise.reject(error);
  }
}

function settled(): void {
  if (--pending === 0) for (const done of idle.splice(0)) done();
}

/** The stdout writer of the command now running (its native sink is taken at the first write). */
export function stdout(): StdoutWriter {
  return writer;
}

/**
 * Forgets the previous command's stdout (its sink, a closed pipe, a failed
 * write): called as a command starts, once the previous one settled its
 * writes ({@link settleStdout}), so a resident process's next command writes
 * to its own stdout.
 */
export function resetStdout(): void {
  sink = undefined;
  closed = false;
  failure = undefined;
  pending = 0;
  idle = [];
}

/**
 * Records a write to stdout that failed outside {@link stdout} (the entry's
 * `Bun.write` of `--version` and `--help`): EPIPE closes the output
 * quietly, any other error is reported by {@link settleStdout}.
 */
export function noteStdoutFailure(error: unknown): void {
  if ((error as NodeJS.ErrnoException | null)?.code === "EPIPE") closed = true;
  else failure ??= error as NodeJS.ErrnoException;
}

/** True once nothing more reaches stdout (a closed pipe or a failed write): writers may stop producing. */
export function stdoutStopped(): boolean {
  return closed || failure !== undefined;
}

/** Resolves once every write so far went out or failed (a failure is kept for {@link settleStdout}). */
export function stdoutDrained(): Promise<void> {
  return pending === 0 ? Promise.resolve() : new Promise((resolve) => idle.push(resolve));
}

/**
 * Waits until every write so far went out or failed.
 * @param what what the command wrote ("answer" for a run, "output" for the others), for the message
 * @throws CachetError STDOUT_WRITE (exit 1) when a write failed with anything but EPIPE
 */
export async function settleStdout(what: "answer" | "output"): Promise<void> {
  await stdoutDrained();
  if (failure === undefined) return;
  const code = failure.code ?? "EIO";
  // Bun's and Node's messages read "ENOSPC: no space left on device, write".
  const reason = /^E[A-Z0-9]+: ([^,]+)/.exec(failure.message)?.[1] ?? failure.message;
  throw new CachetError("STDOUT_WRITE", `cannot write the ${what} to stdout: ${reason} (${code})`, {
    cause: failure,
    hint:
      what === "answer"
        ? "make room where stdout goes (or send it elsewhere); the turn is stored in full (`cachet export` prints it) unless --no-store"
        : "make room where stdout goes (or send it elsewhere) and run the command again",
  });
}
