/**
 * Reading stdin for the run command: when to wait for it, when to go on
 * without it, and noticing bytes that arrive after cachet went on without
 * them (CASES.md case 48). Decoding is the shared input reader's
 * (src/input/read-input.ts): BOM dropped, strict UTF-8 with exact offsets,
 * the bytes collected and decoded once at the end.
 */
import type { Stats } from "node:fs";
import { CachetError } from "../errors.ts";
import { Utf8Collector, type Utf8Mode } from "../input/read-input.ts";

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

/** Stdin as a chunk source; a test may pass its own. */
export interface ChunkSource {
  isTTY: boolean;
  /** A reader, or undefined when stdin is the null device (`< /dev/null`), whose read would only end at once. */
  open(): Promise<ChunkReader | undefined>;
}

/** The part of a stream reader that stdin reading uses. */
export interface ChunkReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(): Promise<void>;
  releaseLock(): void;
}

/** Inputs from this many bytes on are collected before decoding (see readToEnd) and after (see readStdin). */
const HUGE_BYTES = 8 << 20;

/**
 * Reads stdin by `options.mode`.
 * @throws CachetError STDIN_INVALID_UTF8 naming the byte offset of the first
 *   invalid sequence (strict mode); STDIN_TOO_LARGE past `maxBytes`; the
 *   signal's reason (INTERRUPTED) when aborted.
 */
export async function readStdin(options: StdinOptions, source: () => ChunkSource = processStdin): Promise<StdinResult> {
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

/**
 * The process's stdin (fd 0) as a chunk source: a redirected file is read by
 * {@link fileReader}, a pipe or device through the runtime's stream, and the
 * null device not at all. What fd 0 is comes from Bun's own stat: node:fs,
 * Bun's JS builtin (~2 ms to load), is loaded only to read a redirected file.
 * @throws CachetError INPUT_INVALID from `open()` when stdin is a directory
 */
export function processStdin(): ChunkSource {
  return {
    isTTY: stdinIsTerminal(),
    open: async () => {
      const stat = await stdinStat();
      // `cachet … < DIR`: the shell opens a directory, which no read can serve.
      if (stat?.isDirectory()) throw new CachetError("INPUT_INVALID", "stdin: is a directory, not a file", { hint: "redirect a file (cachet \"PROMPT\" < FILE), or pipe text in" });
      if (stat?.isFile()) return fileReader(0);
      // Scripts and CI run with `< /dev/null`: a stream, its reader and the first-byte timer cost about 0.7 ms before
      // the request, to read nothing.
      if (stat?.isCharacterDevice() && stat.rdev === (await nullDevice())) return undefined;
      return (Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader() as unknown as ChunkReader;
    },
  };
}

/** Bytes asked of a redirected file at a time. */
const FILE_CHUNK_BYTES = 1 << 20;

/**
 * A redirected file (`cachet … < FILE`) read a chunk when asked, from the
 * shell's offset on, into one buffer reused for every chunk (the collector
 * copies each before the next read): the runtime's stream gives each chunk of
 * a file as a new allocation, so a file read at disk speed left up to its
 * whole size of chunks as garbage next to the collected bytes until a
 * collection (measured: 200 MiB of mixed-script prose peaked 22 MiB lower).
 */
export function fileReader(fd: number, chunkBytes: number = FILE_CHUNK_BYTES): ChunkReader {
  const { read } = process.getBuiltinModule("node:fs");
  const buffer = new Uint8Array(chunkBytes);
  return {
    read: () =>
      new Promise((resolve, reject) =>
        read(fd, buffer, 0, chunkBytes, null, (error, n) => {
          if (error) reject(error);
          else resolve(n === 0 ? { done: true } : { done: false, value: buffer.subarray(0, n) });
        }),
      ),
    cancel: async () => {},
    releaseLock: () => {},
  };
}

/**
 * Whether stdin is a terminal, without building `process.stdin`: that Node
 * stream loads Node's stream modules (3-11 ms measured, on every run, before
 * its request). Bun keeps Node's `tty_wrap` binding for compatibility; a
 * runtime without it gets the answer from `process.stdin`.
 */
function stdinIsTerminal(): boolean {
  const binding = (process as { binding?: (name: string) => { isTTY?: unknown } }).binding;
  const isTTY = binding?.("tty_wrap").isTTY;
  return typeof isTTY === "function" ? isTTY(0) === true : process.stdin.isTTY === true;
}

/** The device number of /dev/null; undefined where there is none. */
async function nullDevice(): Promise<number | undefined> {
  try {
    return (await Bun.file("/dev/null").stat()).rdev;
  } catch {
    return undefined;
  }
}

/** What fd 0 is; undefined when it cannot be asked. */
async function stdinStat(): Promise<Stats | undefined> {
  try {
    return await Bun.stdin.stat();
  } catch {
    return undefined;
  }
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
