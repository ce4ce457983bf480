/**
 * The one reader for every file and stream cachet takes text from: stdin,
 * `@FILE` flags, schema, tools, probe scenarios and the files they name,
 * price and usage files, the config (CASES.md case 43: each input read by its
 * own code stripped a byte-order mark in some places and sent it in others).
 *
 * Every input is decoded the same way: a leading UTF-8 byte-order mark is
 * dropped (RFC 8259 §8.1 allows a parser to ignore it; Windows editors write
 * it), invalid UTF-8 is an error naming the exact byte offset of the first bad
 * byte (or replaced by U+FFFD when the caller asks), and a path that is
 * missing, a directory or unreadable is named as such.
 *
 * Files and stdin are read in chunks and checked as they come, so a read stops
 * at the first invalid byte and as soon as it passes its size cap (a device
 * such as /dev/zero or /dev/urandom never fills memory); the text is decoded
 * once, from the input's bytes, when it ends (see {@link Utf8Collector}).
 */
import type { FileHandle } from "node:fs/promises";
import { isUtf8 } from "node:buffer";
import { CachetError, type ErrorCode } from "../errors.ts";
import { workingDirectoryExists } from "../working-dir.ts";

/** What to do with invalid UTF-8: `strict` fails naming the offset; `replace` substitutes U+FFFD. */
export type Utf8Mode = "strict" | "replace";

/** How an input is named and reported. */
export interface InputSource {
  /** How errors name the input, e.g. `stdin`, `--tools tools.json`, `scenario s.json`. */
  label: string;
  /** Error code for a missing, unreadable or non-UTF-8 input (default INPUT_INVALID). */
  code?: ErrorCode;
  /** Hint for a missing, unreadable or directory path (default: a generic one). */
  hint?: string;
  /** Invalid UTF-8 handling (default strict). */
  encoding?: Utf8Mode;
  /** Most bytes a file may hold (default {@link CONFIG_INPUT_MAX_BYTES}); the read stops once past it. */
  maxBytes?: number;
  /** Hint for a file over `maxBytes` (default: check the path). */
  capHint?: string;
}

/**
 * The size cap of config-like files, bytes (64 MiB): tools, schema, config,
 * prices, usage, a scenario and the files it names. Far above any real one;
 * the cap turns a wrong path (a device, a log) into an error at once.
 */
export const CONFIG_INPUT_MAX_BYTES = 64 * 1024 * 1024;

/** Bytes read at a time. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Reads a text file through the shared decoder, chunk by chunk.
 * @throws CachetError (`source.code`, default INPUT_INVALID) naming the label
 *   and the cause: no such file, is a directory, permission denied, other
 *   read failure, larger than `source.maxBytes`, or the byte offset of
 *   invalid UTF-8 (the read stops there).
 */
export async function readTextFile(path: string, source: InputSource): Promise<string> {
  const file = Bun.file(path);
  // A regular file (exists() answers at once) is read through Bun: node:fs/promises and the node:events it loads cost
  // 1-2 ms, paid before the request of every run with a config file. Anything else (missing, a directory, a device, a
  // pipe) is opened as below, which names each as such.
  // A size of 0 is read as below too: procfs and sysfs files say 0 and hold text (`-s @/proc/version`), which Bun's
  // stream of a regular file, trusting the size, would read as empty.
  if ((await file.exists()) && file.size > 0) return readRegularFile(file, source);
  // Loaded here, not with the module: node:fs/promises costs about 1 ms, paid before every request by a run that reads
  // no file (stdin is read through this module's collector).
  const { open } = await import("node:fs/promises");
  let handle: FileHandle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    throw unreadable(error, source, await isDirectory(path), path);
  }
  try {
    const reader = new CappedReader(source);
    const buffer = new Uint8Array(CHUNK_BYTES);
    for (;;) {
      let n: number;
      try {
        n = (await handle.read(buffer, 0, CHUNK_BYTES, null)).bytesRead;
      } catch (error) {
        throw unreadable(error, source, (error as NodeJS.ErrnoException).code === "EISDIR");
      }
      if (n === 0) return reader.end();
      reader.push(buffer.subarray(0, n));
    }
  } finally {
    await handle.close();
  }
}

/** A regular file's text through Bun's file stream, chunk by chunk, as {@link readTextFile} reads one. */
async function readRegularFile(file: Bun.BunFile, source: InputSource): Promise<string> {
  const stream = file.stream().getReader();
  let done = false;
  try {
    const reader = new CappedReader(source);
    for (;;) {
      let chunk: Awaited<ReturnType<typeof stream.read>>;
      try {
        chunk = await stream.read();
      } catch (error) {
        done = true;
        throw unreadable(error, source, false);
      }
      if (chunk.done) {
        done = true;
        return reader.end();
      }
      reader.push(chunk.value);
    }
  } finally {
    // Past the cap or at invalid UTF-8 the rest is not read: the stream is cancelled, which closes the file.
    if (!done) await stream.cancel().catch(() => {});
  }
}

/** {@link readTextFile}, synchronously (for validators that are synchronous). */
export function readTextFileSync(path: string, source: InputSource): string {
  // Loaded here, not with the module: node:fs (~2 ms to load) is no cost of a run that reads no file.
  const { closeSync, openSync, readSync, statSync } = process.getBuiltinModule("node:fs");
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    let directory = false;
    try {
      directory = statSync(path).isDirectory();
    } catch {
      // missing or unreadable: named by the open error itself
    }
    throw unreadable(error, source, directory, path);
  }
  try {
    const reader = new CappedReader(source);
    const buffer = new Uint8Array(CHUNK_BYTES);
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buffer, 0, CHUNK_BYTES, null);
      } catch (error) {
        throw unreadable(error, source, (error as NodeJS.ErrnoException).code === "EISDIR");
      }
      if (n === 0) return reader.end();
      reader.push(buffer.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

/** The bytes of a file read so far, refusing it once past its cap. */
class CappedReader {
  private readonly collector: Utf8Collector;
  private readonly max: number;

  constructor(private readonly source: InputSource) {
    this.max = source.maxBytes ?? CONFIG_INPUT_MAX_BYTES;
    this.collector = new Utf8Collector(source, this.max);
  }

  push(chunk: Uint8Array): void {
    if (this.collector.bytes + chunk.byteLength > this.max) {
      throw new CachetError(this.source.code ?? "INPUT_INVALID", `${this.source.label}: larger than ${formatBytes(this.max)}, the most cachet reads for this input`, {
        hint: this.source.capHint ?? "check the path: is it the file you meant?",
      });
    }
    this.collector.push(chunk);
  }

  end(): string {
    return this.collector.end();
  }
}

/** 67108864 → "64 MiB", 1073741824 → "1 GiB"; other sizes in bytes. */
function formatBytes(n: number): string {
  if (n % 1024 ** 3 === 0) return `${n / 1024 ** 3} GiB`;
  return n % 1024 ** 2 === 0 ? `${n / 1024 ** 2} MiB` : `${n.toLocaleString("en-US")} bytes`;
}

/**
 * Decodes a whole input: BOM dropped, then strict UTF-8 (or U+FFFD
 * replacement). Strict mode never yields lone surrogates or U+FFFD for bad input.
 * @throws CachetError naming the label and the offset of the first invalid byte.
 */
export function decodeInput(bytes: Uint8Array, source: InputSource): string {
  if (!isUtf8(bytes) && (source.encoding ?? "strict") === "strict") throw invalidUtf8(bytes, 0, source);
  return new TextDecoder("utf-8", { ignoreBOM: false }).decode(bytes);
}

/**
 * The most bytes a {@link Utf8Collector} holds, 4 GiB: the largest buffer the
 * runtime grows in place (no JavaScript string of more can be made anyway).
 */
const COLLECT_MAX_BYTES = 2 ** 32;

/**
 * An input's bytes, collected chunk by chunk and checked as they come (the
 * offset of the first invalid byte is exact across chunk boundaries, and the
 * read stops there), then decoded once at the end. A huge input is never held
 * as decoded chunks plus their joined copy: text beyond Latin-1 takes two bytes
 * a character in memory, so those two would each be up to twice the input's
 * size, where its bytes are once its size. The buffer grows in place (a
 * resizable ArrayBuffer reserves its most and takes memory as it is written).
 * The byte-order mark is dropped only at the very start of the input.
 */
export class Utf8Collector {
  private readonly source: InputSource;
  private readonly buffer: ArrayBuffer;
  private readonly view: Uint8Array;
  /** Bytes up to here are checked valid and end on a character boundary. */
  private checked = 0;
  /** Invalid bytes were seen (`replace` mode): they are substituted when decoding. */
  private lossy = false;

  /** @param mostBytes the most bytes this input may hold (the caller's cap); memory is taken only as bytes come */
  constructor(source: InputSource, mostBytes: number) {
    this.source = source;
    this.buffer = new ArrayBuffer(0, { maxByteLength: Math.min(mostBytes, COLLECT_MAX_BYTES) });
    this.view = new Uint8Array(this.buffer);
  }

  /** Bytes pushed so far. */
  get bytes(): number {
    return this.buffer.byteLength;
  }

  /**
   * Appends the next chunk and checks every character it completes.
   * @throws CachetError on invalid UTF-8 (strict), or past the most bytes given to the constructor (or 4 GiB).
   */
  push(chunk: Uint8Array): void {
    const at = this.buffer.byteLength;
    if (at + chunk.byteLength > this.buffer.maxByteLength) {
      throw new CachetError(this.source.code ?? "INPUT_INVALID", `${this.source.label}: larger than ${formatBytes(this.buffer.maxByteLength)}, the most cachet can hold`, {
        hint: "send a smaller input",
      });
    }
    this.buffer.resize(at + chunk.byteLength);
    this.view.set(chunk, at);
    if (this.lossy) return;
    // An unfinished sequence (at most 3 bytes) is checked once the chunk that completes it came.
    const end = Math.max(this.checked, this.view.byteLength - incompleteTail(this.view.subarray(Math.max(this.checked, this.view.byteLength - 3))));
    this.check(end);
  }

  /**
   * The whole input's text. @throws CachetError when the input ends inside a sequence (strict).
   */
  end(): string {
    if (!this.lossy) this.check(this.view.byteLength);
    return new TextDecoder("utf-8", { ignoreBOM: false }).decode(this.view);
  }

  private check(end: number): void {
    const bytes = this.view.subarray(this.checked, end);
    if (isUtf8(bytes)) {
      this.checked = end;
      return;
    }
    if ((this.source.encoding ?? "strict") === "strict") throw invalidUtf8(bytes, this.checked, this.source);
    this.lossy = true;
  }
}

/** Offset of the first byte that starts an invalid (or truncated) UTF-8 sequence; -1 when valid. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) [need, min] = [1, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [need, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [need, min] = [3, 0x10000];
    else return i;
    let cp = b & (need === 1 ? 0x1f : need === 2 ? 0x0f : 0x07);
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}

/** The error for invalid UTF-8 in `bytes`, which start at byte `base` of the input. */
function invalidUtf8(bytes: Uint8Array, base: number, source: InputSource): CachetError {
  const at = Math.max(0, firstInvalidUtf8(bytes));
  const hint = source.label === "stdin" ? "convert the input to UTF-8 (e.g. iconv), or pass --stdin-encoding replace to substitute U+FFFD" : "convert the file to UTF-8 (e.g. iconv)";
  return new CachetError(source.code ?? "INPUT_INVALID", `${source.label} is not valid UTF-8: invalid byte 0x${bytes[at]?.toString(16).padStart(2, "0") ?? "??"} at offset ${base + at}`, { hint });
}

/** The error for a path that cannot be opened or read; `path` (when given) is the one opened, so a relative one in a removed working directory is named as such. */
function unreadable(error: unknown, source: InputSource, directory: boolean, path?: string): CachetError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT" && path !== undefined && !process.getBuiltinModule("node:path").isAbsolute(path) && !workingDirectoryExists()) {
    return new CachetError(source.code ?? "INPUT_INVALID", `${source.label}: a relative path, and the current working directory no longer exists`, {
      hint: "cd into an existing directory and run the command again, or give an absolute path",
      cause: error,
    });
  }
  const what = directory || code === "EISDIR" ? "is a directory, not a file" : code === "ENOENT" ? "no such file" : code === "EACCES" || code === "EPERM" ? "permission denied" : `cannot be read (${code ?? (error as Error).message})`;
  return new CachetError(source.code ?? "INPUT_INVALID", `${source.label}: ${what}`, { hint: source.hint ?? "give the path of a readable file", cause: error });
}

async function isDirectory(path: string): Promise<boolean> {
  const { stat } = await import("node:fs/promises");
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** How many bytes at the end of `bytes` begin a UTF-8 sequence that continues in the next chunk (0–3). */
function incompleteTail(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0x80) continue;
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}
