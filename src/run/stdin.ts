/**
 * Reading stdin for the run command: raw bytes, strict UTF-8, and no hang on
 * a pipe that stays open without data.
 */
import { CachetError } from "../errors.ts";

/** How stdin is read. */
export interface StdinOptions {
  /** `-` as PROMPT: read to the end however long the first byte takes. */
  force: boolean;
  /** How long to wait for the first byte before going on without stdin, ms (≤ 2,000). */
  firstByteWaitMs: number;
  /** `strict` fails on invalid UTF-8 naming the byte offset; `replace` substitutes U+FFFD. */
  encoding: "strict" | "replace";
  /** Largest accepted input, bytes. */
  maxBytes: number;
}

/** What was read. `text` is undefined when stdin was a terminal, empty, or silent past the wait. */
export interface StdinResult {
  text: string | undefined;
  /** Bytes read. */
  bytes: number;
  /** True when cachet stopped waiting for a silent pipe. */
  timedOut: boolean;
}

/**
 * Reads stdin when it is not a terminal.
 * @throws CachetError STDIN_INVALID_UTF8 naming the byte offset of the first
 *   invalid sequence (strict mode); STDIN_TOO_LARGE past `maxBytes`.
 */
export async function readStdin(options: StdinOptions, stream: NodeJS.ReadStream = process.stdin): Promise<StdinResult> {
  if (stream.isTTY && !options.force) return { text: undefined, bytes: 0, timedOut: false };
  // Decoded chunk by chunk as it arrives: a large input is never held as bytes and text at once.
  const decoder = new TextDecoder("utf-8", { fatal: options.encoding === "strict", ignoreBOM: true });
  let text = "";
  let total = 0;
  let pending: Uint8Array = new Uint8Array(0);
  const reader = (Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader();
  try {
    const first = options.force ? await reader.read() : await withDeadline(reader.read(), options.firstByteWaitMs);
    if (first === "timeout") {
      // The pipe may stay open forever (e.g. an inherited stdin in a script); go on without it.
      void reader.cancel().catch(() => {});
      return { text: undefined, bytes: 0, timedOut: true };
    }
    let next = first;
    while (!next.done) {
      total += next.value.byteLength;
      if (total > options.maxBytes) {
        throw new CachetError("STDIN_TOO_LARGE", `stdin is larger than ${formatBytes(options.maxBytes)}`, {
          hint: "send a smaller input, or raise the limit with CACHET_MAX_STDIN_BYTES",
        });
      }
      const chunk = next.value;
      try {
        text += decoder.decode(chunk, { stream: true });
      } catch {
        throw invalidUtf8(concatBytes(pending, chunk), total - chunk.byteLength - pending.byteLength);
      }
      pending = chunk.subarray(chunk.byteLength - incompleteTail(chunk));
      next = await reader.read();
    }
    try {
      text += decoder.decode();
    } catch {
      throw invalidUtf8(pending, total - pending.byteLength);
    }
  } finally {
    reader.releaseLock();
  }
  if (total === 0) return { text: undefined, bytes: 0, timedOut: false };
  return { text, bytes: total, timedOut: false };
}

/**
 * Decodes UTF-8. Strict mode never yields lone surrogates or U+FFFD for bad
 * input: it throws naming the offset of the first invalid byte.
 * @throws CachetError STDIN_INVALID_UTF8
 */
export function decodeUtf8(bytes: Uint8Array, encoding: "strict" | "replace"): string {
  // TextDecoder never emits lone surrogates: invalid input becomes U+FFFD (replace) or throws (fatal).
  if (encoding === "replace") return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw invalidUtf8(bytes, 0);
  }
}

/** The error for invalid UTF-8 in `bytes`, which start at byte `base` of the input. */
function invalidUtf8(bytes: Uint8Array, base: number): CachetError {
  const at = Math.max(0, firstInvalidUtf8(bytes));
  return new CachetError("STDIN_INVALID_UTF8", `stdin is not valid UTF-8: invalid byte 0x${bytes[at]?.toString(16).padStart(2, "0") ?? "??"} at offset ${base + at}`, {
    hint: "convert the input to UTF-8 (e.g. iconv), or pass --stdin-encoding replace to substitute U+FFFD",
  });
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

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b;
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
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

/**
 * Joins stdin and the PROMPT argument: stdin first, then the prompt, separated
 * by a blank line (documented in README.md). Either may be absent.
 */
export function mergeInput(stdin: string | undefined, prompt: string | undefined): string | undefined {
  if (stdin !== undefined && prompt !== undefined && prompt !== "") {
    return `${stdin}${stdin.endsWith("\n") ? "" : "\n"}\n${prompt}`;
  }
  return stdin ?? (prompt === "" ? undefined : prompt);
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
