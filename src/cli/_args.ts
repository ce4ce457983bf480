/**
 * Argument groups shared by several commands, and the strict check that
 * turns an unknown flag into a one-line usage error.
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
  const names = new Set(Object.entries(globalArgs).flatMap(([name, def]) => [`--${name}`, ...("alias" in def ? [`-${def.alias}`] : [])]));
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

/**
 * Rejects flags that `defs` does not declare, and values for flags that take
 * none. citty itself accepts anything, which turns typos into silent defaults.
 * @throws CachetError UNKNOWN_FLAG naming the flag.
 */
export function assertKnownFlags(rawArgs: readonly string[], defs: ArgsDef, command: string): void {
  const known = flagKinds(defs);
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]!;
    if (arg === "--") return;
    if (!arg.startsWith("-") || arg === "-") continue;
    const body = arg.replace(/^--?/, "");
    const name = body.split("=")[0]!;
    const names = arg.startsWith("--") || name.length === 1 ? [name] : [...name];
    for (const n of names) {
      const kind = known.get(n);
      if (kind === undefined) {
        throw new CachetError("UNKNOWN_FLAG", `unknown flag ${arg.startsWith("--") ? "--" : "-"}${n} for \`cachet ${command}\``, {
          hint: `run \`cachet ${command} --help\` for the flags it accepts`,
        });
      }
      if (kind === "value") {
        const value = body.includes("=") ? body.slice(body.indexOf("=") + 1) : rawArgs[i + 1];
        const missing = value === undefined || value === "" || (!body.includes("=") && value.startsWith("-") && value !== "-" && !/^-\d/.test(value));
        if (missing) {
          throw new CachetError("BAD_FLAG", `flag ${arg.split("=")[0]} needs a value`, {
            hint: `run \`cachet ${command} --help\` for what it takes`,
          });
        }
        if (!body.includes("=")) i++;
      }
    }
  }
}

/** Each flag name, alias and `no-` form `defs` declares: whether it takes a value. */
function flagKinds(defs: ArgsDef): Map<string, "boolean" | "value"> {
  const known = new Map<string, "boolean" | "value">();
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") continue;
    const kind = def.type === "boolean" ? "boolean" : "value";
    const alias = (def as { alias?: string | string[] }).alias;
    const names = [name, ...(alias === undefined ? [] : Array.isArray(alias) ? alias : [alias])];
    for (const n of names) {
      known.set(n, kind);
      known.set(kebab(n), kind);
      if (kind === "boolean") known.set(`no-${kebab(n)}`, kind);
    }
  }
  return known;
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
