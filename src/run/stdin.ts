/**
 * Reading stdin for the run command: when to wait for it, when to go on
 * without it, and noticing bytes that arrive after cachet went on without
 * them (CASES.md case 48). Decoding is the shared input reader's
 * (src/input/read-input.ts): BOM dropped, strict UTF-8 with exact offsets,
 * the bytes collected and decoded once at the end.
 */
import { edges, type ChunkReader, type ChunkSource } from "../edges.ts";
import { CachetError } from "../errors.ts";
import { Utf8Collector, type Utf8Mode } from "../input/read-input.ts";

export { fileReader, processStdin, type ChunkReader, type ChunkSource } from "../edges.ts";

/**
 * When to read stdin:
 * - `wait`: to its end, however long the first byte takes (no PROMPT, `-`, `--stdin wait`);
 * - `bounded`: to its end once a first byte arrived within `firstByteWaitMs`, else go on without it (a PROMPT was given);
 * - `skip`: not at all (`--stdin skip`).
 */
export type StdinMode = "wait" | "bounded" | "skip";

/** How stdin is read. */
export interface StdinOptions {
  mode: StdinMode;
  /** Read a terminal too (an explicit `-` or `--stdin wait`); otherwise a terminal is never read. */
  terminal: boolean;
  /** `bounded`: how long to wait for the first byte, ms. */
  firstByteWaitMs: number;
  encoding: Utf8Mode;
  /** Largest accepted input, bytes. */
  maxBytes: number;
  /** Ends any wait (SIGINT / SIGTERM); the read rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What was read. */
export interface StdinResult {
  /** undefined when stdin was a terminal, skipped, empty, or silent past the wait. */
  text: string | undefined;
  /** Bytes read. */
  bytes: number;
  /** True when cachet stopped waiting for a silent pipe. */
  timedOut: boolean;
  /**
   * After a time-out: stops listening to stdin and says whether bytes
   * arrived after cachet went on without them. False otherwise.
   */
  settleLate(): boolean;
}

/** Inputs from this many bytes on are collected before decoding (see readToEnd) and after (see readStdin). */
const HUGE_BYTES = 8 << 20;

/**
 * Reads stdin by `options.mode`.
 * @throws CachetError STDIN_INVALID_UTF8 naming the byte offset of the first
 *   invalid sequence (strict mode); STDIN_TOO_LARGE past `maxBytes`; the
 *   signal's reason (INTERRUPTED) when aborted.
 */
export async function readStdin(options: StdinOptions, source: () => ChunkSource = () => edges().stdin()): Promise<StdinResult> {
  const none = (timedOut: boolean, settleLate: () => boolean = () => false): StdinResult => ({ text: undefined, bytes: 0, timedOut, settleLate });
  if (options.mode === "skip") return none(false);
  const stdin = source();
  if (stdin.isTTY && !options.terminal) return none(false);
  const reader = await stdin.open();
  if (reader === undefined) return none(false);
  let read: { text: string; bytes: number };
  try {
    const firstRead = reader.read();
    const first = await untilAborted(options.mode === "bounded" ? withDeadline(firstRead, options.firstByteWaitMs) : firstRead, options.signal);
    if (first === "timeout") {
      // The pipe may stay open forever (an inherited stdin in a script): go on, but keep
      // listening, so data that comes late is reported instead of silently dropped.
      let late = false;
      firstRead.then((r) => (late = !r.done && r.value.byteLength > 0)).catch(() => {});
      return none(true, () => {
        void reader.cancel().catch(() => {});
        return late;
      });
    }
    // Empty (`< /dev/null`, a closed pipe): no collector, whose buffer reserves the most the input may hold.
    if (first.done) {
      reader.releaseLock();
      return none(false);
    }
    read = await readToEnd(reader, first, options);
  } catch (error) {
    void reader.cancel().catch(() => {});
    throw error;
  }
  reader.releaseLock();
  if (read.bytes === 0) return none(false);
  // The input's bytes are garbage now: collect them before the next step copies anything.
  if (read.bytes >= HUGE_BYTES) Bun.gc(true);
  return { text: read.text, bytes: read.bytes, timedOut: false, settleLate: () => false };
}

/** The rest of stdin from its first read, checked as it comes and decoded once at its end (the collector is garbage on return). */
async function readToEnd(reader: ChunkReader, first: Awaited<ReturnType<ChunkReader["read"]>>, options: StdinOptions): Promise<{ text: string; bytes: number }> {
  const collector = new Utf8Collector({ label: "stdin", code: "STDIN_INVALID_UTF8", encoding: options.encoding }, options.maxBytes);
  for (let next = first; !next.done; next = await untilAborted(reader.read(), options.signal)) {
    if (collector.bytes + next.value.byteLength > options.maxBytes) {
      throw new CachetError("STDIN_TOO_LARGE", `stdin is larger than ${formatBytes(options.maxBytes)}`, {
        hint: "send a smaller input, or raise the limit with CACHET_MAX_STDIN_BYTES",
      });
    }
    collector.push(next.value);
  }
  // Decoding is the read's peak (the bytes and their text both held): the chunks a pipe's stream gave, garbage now,
  // are collected first, never left beside them however far the collector lags (measured, 200 MiB piped: 12 MiB less).
  if (collector.bytes >= HUGE_BYTES) Bun.gc(true);
  return { text: collector.end(), bytes: collector.bytes };
}

/**
 * Joins stdin and the PROMPT words: the words are split at each `-`, each run
 * is joined with spaces, and the runs and stdin (at the `-`, else first) are
 * separated by a blank line (documented in README.md). Either may be absent.
 * Words from index `literalFrom` on (those after `--`) are text, a `-` among them too.
 */
export function mergeInput(stdin: string | undefined, words: readonly string[] | string | undefined, literalFrom = Infinity): string | undefined {
  const list = typeof words === "string" ? [words] : (words ?? []);
  const parts: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length > 0 && run.join("") !== "") parts.push(run.join(" "));
    run = [];
  };
  let placed = false;
  for (const [i, word] of list.entries()) {
    if (word !== "-" || i >= literalFrom) {
      run.push(word);
      continue;
    }
    flush();
    if (stdin !== undefined && !placed) parts.push(stdin);
    placed = true;
  }
  flush();
  if (!placed && stdin !== undefined) parts.unshift(stdin);
  if (parts.length === 0) return undefined;
  let out = parts[0]!;
  for (const part of parts.slice(1)) out += `${out.endsWith("\n") ? "" : "\n"}\n${part}`;
  return out;
}

async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort!);
  }
}

async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function formatBytes(n: number): string {
  return n >= 1 << 20 ? `${Math.round(n / (1 << 20))} MiB` : `${n} bytes`;
}
