/**
 * Command-line words that were not UTF-8. The runtime decodes argv with
 * replacement, so such bytes reach cachet as U+FFFD and a prompt would be
 * sent and stored with them silently replaced; stdin and files with the same
 * bytes are refused instead (src/input/read-input.ts). Where the raw bytes
 * can be read back (Linux: /proc/self/cmdline), a word holding U+FFFD is
 * checked against them, so one typed as U+FFFD on purpose still passes.
 */
import { CachetError } from "../errors.ts";
import { printable } from "../printable.ts";

/**
 * Refuses the first of `args` (process.argv without the runtime and script)
 * whose bytes were not UTF-8 (call it when a word holds U+FFFD).
 * @throws CachetError BAD_FLAG (exit 2) naming the word's position and the first invalid byte
 */
export async function refuseInvalidUtf8(args: readonly string[]): Promise<void> {
  const raw = rawArgs(args.length);
  if (raw === undefined) return;
  const { firstInvalidUtf8 } = await import("../input/read-input.ts");
  for (let i = 0; i < args.length; i++) {
    if (!args[i]!.includes("\ufffd")) continue;
    const bytes = raw[i]!;
    const at = firstInvalidUtf8(bytes);
    if (at >= 0) {
      throw new CachetError("BAD_FLAG", `command-line word ${i + 1} ("${printable(args[i]!)}") is not valid UTF-8: invalid byte 0x${bytes[at]!.toString(16).padStart(2, "0")} at offset ${at}`, {
        hint: "pass text in UTF-8 (e.g. convert it with iconv), or send it on stdin with --stdin-encoding replace to substitute U+FFFD",
      });
    }
  }
}

/** The last `count` words of this process's command line as bytes, or undefined where they cannot be read. */
function rawArgs(count: number): Uint8Array[] | undefined {
  if (process.platform !== "linux") return undefined;
  let bytes: Uint8Array;
  try {
    bytes = process.getBuiltinModule("node:fs").readFileSync("/proc/self/cmdline");
  } catch {
    return undefined;
  }
  const words: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0) continue;
    words.push(bytes.subarray(start, i));
    start = i + 1;
  }
  return words.length >= count ? words.slice(words.length - count) : undefined;
}
