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
 * Index of the first argument after the leading global flags (`cachet -q
 * sessions` runs `sessions`); none of them takes a value.
 */
export function globalFlagsEnd(args: readonly string[]): number {
  // A plain loop: flatMap's first call alone costs about 0.3 ms of compiling, on every command line.
  const names = new Set<string>();
  for (const [name, def] of Object.entries(globalArgs)) {
    names.add(`--${name}`);
    if ("alias" in def) names.add(`-${def.alias}`);
  }
  let i = 0;
  while (i < args.length && names.has(args[i]!)) i++;
  return i;
}

/**
 * Whether `word` is a group of letters (`-qv`) holding a global flag's
 * letter: before a command word it belongs to that command, as `-q` alone
 * does (the command accepts or refuses its other letters).
 */
export function isGlobalLetterGroup(word: string | undefined): boolean {
  if (word === undefined || !/^-[A-Za-z]{2,}$/.test(word)) return false;
  for (const def of Object.values(globalArgs)) if ("alias" in def && word.includes(def.alias)) return true;
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
