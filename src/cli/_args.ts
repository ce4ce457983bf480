/**
 * Argument groups shared by several commands (src/cli/argv.ts checks every
 * command line against them).
 */
import type { ArgsDef } from "citty";
import { CachetError } from "../errors.ts";

/** Flags every command accepts. */
export const globalArgs = {
  quiet: { type: "boolean", alias: "q", description: "Only the answer or data; no diagnostics on stderr" },
  verbose: { type: "boolean", description: "More diagnostics on stderr" },
  debug: { type: "boolean", description: "Everything, with stacks for errors" },
} as const satisfies ArgsDef;

/**
 * The global flags as typed (`--quiet`, `-q`, …) and their letters. Plain loops and comparisons, here and below, not
 * flatMap, a Set or a regular expression: every command line reads these first (a turn handed to the resident daemon
 * included), and the first of each in a process costs compiling its builtin or starting the regex engine (measured on
 * the daemon's client: 0.19 ms down to 0.06 ms).
 */
const globalWords: string[] = [];
const globalLetters: string[] = [];
for (const name in globalArgs) {
  const def = globalArgs[name as keyof typeof globalArgs];
  globalWords.push(`--${name}`);
  if ("alias" in def) {
    globalWords.push(`-${def.alias}`);
    globalLetters.push(def.alias);
  }
}

/**
 * Index of the first argument after the leading global flags (`cachet -q
 * sessions` runs `sessions`); none of them takes a value.
 */
export function globalFlagsEnd(args: readonly string[]): number {
  let i = 0;
  while (i < args.length && globalWords.indexOf(args[i]!) !== -1) i++;
  return i;
}

/**
 * Whether `word` is a group of letters (`-qv`) holding a global flag's
 * letter: before a command word it belongs to that command, as `-q` alone
 * does (the command accepts or refuses its other letters).
 */
export function isGlobalLetterGroup(word: string | undefined): boolean {
  // A dash, then two or more ASCII letters.
  if (word === undefined || word.length < 3 || word.charCodeAt(0) !== 45) return false;
  for (let i = 1; i < word.length; i++) {
    // Setting bit 5 lowercases an ASCII capital and keeps a lowercase letter: both, and only they, land in a–z.
    const lower = word.charCodeAt(i) | 0x20;
    if (lower < 97 || lower > 122) return false;
  }
  for (const letter of globalLetters) if (word.includes(letter)) return true;
  return false;
}

/** `--json` for commands that print data. */
export const jsonArg = {
  json: { type: "boolean", description: "Print JSON (lines) on stdout" },
} as const satisfies ArgsDef;

/** `--emulate` for commands that reach a provider. */
export const emulateArg = {
  emulate: { type: "boolean", description: "Use the built-in provider emulator instead of the network (no API key)" },
} as const satisfies ArgsDef;

/**
 * Refuses a flag given where it does nothing: `sessions show --force` (only
 * `rm` takes it), `prices reset --from X`, which would otherwise be ignored.
 * @param use the command with its action or mode as the user wrote it, e.g. "sessions show"
 * @param args the parsed flags (a flag not given is undefined)
 * @param owners each flag that only some uses take (its name without dashes) → those uses, as written in help ("sessions rm")
 * @param inUse the uses this command line is ("sessions show"); a flag whose owners include one of them is fine
 * @throws CachetError BAD_FLAG (exit 2) naming the flag, where it was given and what takes it.
 */
export function refuseMisplacedFlags(use: string, args: Record<string, unknown>, owners: Record<string, readonly string[]>, inUse: readonly string[] = [use]): void {
  for (const [flag, takers] of Object.entries(owners)) {
    if (args[flag] === undefined || takers.some((t) => inUse.includes(t))) continue;
    const command = use.split(" ")[0]!;
    throw new CachetError("BAD_FLAG", `\`cachet ${use}\` takes no --${flag} (it is for \`cachet ${takers.join("` and `cachet ")}\`)`, {
      hint: `leave --${flag} out, or run \`cachet ${command} --help\` for what each takes`,
    });
  }
}
