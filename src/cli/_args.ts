/**
 * Argument groups shared by several commands (src/cli/argv.ts checks every
 * command line against them).
 */
import type { ArgsDef } from "citty";

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

/** `--json` for commands that print data. */
export const jsonArg = {
  json: { type: "boolean", description: "Print JSON (lines) on stdout" },
} as const satisfies ArgsDef;

/** `--emulate` for commands that reach a provider. */
export const emulateArg = {
  emulate: { type: "boolean", description: "Use the built-in provider emulator instead of the network (no API key)" },
} as const satisfies ArgsDef;
