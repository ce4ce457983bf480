/**
 * Command-line words that were not UTF-8. The runtime decodes argv with
 * replacement, so such bytes reach cachet as U+FFFD and a prompt would be
 * sent and stored with them silently replaced; stdin and files with the same
 * bytes are refused instead (src/input/read-input.ts). Where the raw bytes
 * can be read back (Linux: /proc/self/cmdline), a word holding U+FFFD is
 * checked against them, so one typed as U+FFFD on purpose still passes.
 */
import type { ArgsDef } from "citty";
import { CachetError } from "../errors.ts";
import { printable } from "../printable.ts";
import type { ArgvView } from "./argv.ts";

/**
 * What a command-line word is to its command, for the hint of one that is not UTF-8:
 * `prompt` (a run's prompt words: stdin takes the same text), `path` (a file or
 * directory to open), `text` (a flag's or positional's value: a name, an id, TEXT).
 */
export type WordRole = "prompt" | "path" | "text";

/** Flags whose value is a file path (a value starting with `@` is one for any flag: `-s @FILE`). */
const PATH_FLAGS = new Set(["tools", "usage", "prices", "from"]);
/** Positionals that name a file (`schema check FILE`, `probe FILE`, `plugins add|test|new PATH`; `plugins remove|update NAME` names a plugin). */
const PATH_POSITIONALS = new Set(["file", "target"]);
const NAME_ACTIONS = new Set(["remove", "update"]);

/**
 * The role of `word` (one of the command line's words, as decoded) in `view`,
 * the command line `rest` of `command` parsed against `defs`: the flag whose
 * value it is or holds (`--tools F`, `-s@F`, `--system=@F`), else the
 * positional it fills.
 */
export function wordRole(word: string, command: string, rest: readonly string[], view: ArgvView, defs: ArgsDef): WordRole {
  const flag = view.flags.find((f) => typeof f.value === "string" && (rest[f.index] === word || (rest[f.index + 1] === word && f.value === word)));
  if (flag !== undefined) {
    const value = flag.value as string;
    const inlineJson = flag.name === "schema" && value.trimStart().startsWith("{");
    return value.startsWith("@") || /^[^=]*=@/.test(value) || PATH_FLAGS.has(flag.name) || (flag.name === "schema" && !inlineJson) ? "path" : "text";
  }
  const at = view.words.findIndex((w) => rest[w.index] === word);
  if (at < 0) return "text";
  if (command === "run") return "prompt";
  const positionals = Object.entries(defs).filter(([, def]) => def.type === "positional");
  const name = positionals[at]?.[0];
  const names = name === "target" && NAME_ACTIONS.has(view.words[0]?.text ?? "");
  return name !== undefined && PATH_POSITIONALS.has(name) && !names && !word.trimStart().startsWith("{") ? "path" : "text";
}

/** What to do about a word of `role` whose bytes are not UTF-8. */
function invalidWordHint(role: WordRole): string {
  if (role === "prompt") return "pass text in UTF-8 (e.g. convert it with iconv), or send it on stdin with --stdin-encoding replace to substitute U+FFFD";
  if (role === "path") return "a path that is not UTF-8 cannot be named on cachet's command line: rename the file or directory to a UTF-8 name, or link it from one (ln -s)";
  return "type it in UTF-8 (e.g. convert it with iconv)";
}

/**
 * Refuses the first of `args` (process.argv without the runtime and script)
 * whose bytes were not UTF-8 (call it when a word holds U+FFFD), with the hint
 * for what the word is ({@link invalidWordHint}).
 * @param roleOf what a word (as decoded) is to the command ({@link wordRole})
 * @throws CachetError naming the word's position (1-based, after `cachet`) and its first invalid byte and offset:
 *   ARGV_INVALID_UTF8 (exit 3) for a prompt word, which is input data as the same bytes on stdin are
 *   (STDIN_INVALID_UTF8); BAD_FLAG (exit 2) for any other word, a flag's value (`-s TEXT` too), a path, a session
 *   or plugin name: the command line itself is wrong, as with any other bad flag value.
 */
export async function refuseInvalidUtf8(args: readonly string[], roleOf: (word: string) => WordRole): Promise<void> {
  const raw = rawArgs(args.length);
  if (raw === undefined) return;
  const { firstInvalidUtf8 } = await import("../input/read-input.ts");
  for (let i = 0; i < args.length; i++) {
    if (!args[i]!.includes("\ufffd")) continue;
    const bytes = raw[i]!;
    const at = firstInvalidUtf8(bytes);
    if (at >= 0) {
      const role = roleOf(args[i]!);
      throw new CachetError(role === "prompt" ? "ARGV_INVALID_UTF8" : "BAD_FLAG", `command-line word ${i + 1} ("${printable(args[i]!)}") is not valid UTF-8: invalid byte 0x${bytes[at]!.toString(16).padStart(2, "0")} at offset ${at}`, {
        hint: invalidWordHint(role),
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
