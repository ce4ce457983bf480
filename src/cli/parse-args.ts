/**
 * The run command's flags parsed as citty parses them, without loading citty
 * or node:util (whose parseArgs citty wraps): together 7-10 ms of CPU before
 * the run's request, measured on the 2-core bench machine. Other commands and
 * every `--help` still go through citty.
 *
 * Same result as citty 0.2's `parseArgs(rawArgs, defs)` for the argument
 * kinds cachet declares (positional, string, boolean, enum) on a command line
 * that assertKnownFlags (src/cli/_args.ts) accepted: Node's `util.parseArgs`
 * rules with `strict: false` (short option groups, `-xVALUE`, `--name=value`,
 * a string flag takes the next word whatever it is, the last of a repeated
 * flag wins, `--` ends the flags), citty's `--no-NAME` negation and
 * `--bool=value` coercion (anything but "false" is true), defaults, aliases
 * filled both ways, the first positional word under the positional
 * argument's name, and its error for an enum value it does not list
 * (src/cli/parse-args.test.ts compares the two).
 */
import type { ArgsDef } from "citty";
import { CachetError } from "../errors.ts";

/** Parsed flags by name (and alias); `_` holds the positional words. */
export type ParsedArgs = Record<string, unknown> & { _: string[] };

type Kind = "string" | "boolean";

/**
 * Parses `rawArgs` against `defs` as citty does.
 * @param usageHint the hint of a usage error (which command's `--help` to run)
 * @throws CachetError BAD_FLAG (exit 2) for a value an enum flag does not list, in citty's words
 */
export function parseArgs(rawArgs: readonly string[], defs: ArgsDef, usageHint: string): ParsedArgs {
  const kinds = new Map<string, Kind>();
  const shorts = new Map<string, string>();
  const aliasesOf = new Map<string, string[]>();
  const defaults: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") continue;
    const kind: Kind = def.type === "boolean" ? "boolean" : "string";
    kinds.set(name, kind);
    if (def.default !== undefined) defaults[name] = def.default;
    const alias = (def as { alias?: string | string[] }).alias;
    const aliases = alias === undefined ? [] : Array.isArray(alias) ? alias : [alias];
    for (const a of aliases) {
      kinds.set(a, kind);
      if (a.length === 1 && !shorts.has(a)) shorts.set(a, name);
    }
    aliasesOf.set(name, aliases);
  }
  const long = (short: string) => shorts.get(short) ?? short;

  const out: ParsedArgs = { _: [] };
  const negated: string[] = [];
  const queue: string[] = [];
  // citty takes `--no-NAME` out before Node's parser sees the words.
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]!;
    if (arg === "--") {
      queue.push(...rawArgs.slice(i));
      break;
    }
    if (arg.startsWith("--no-")) negated.push(arg.slice(5));
    else queue.push(arg);
  }
  const store = (name: string, value: string | undefined) => {
    if (name !== "__proto__") out[name] = value ?? true;
  };
  while (queue.length > 0) {
    const arg = queue.shift()!;
    if (arg === "--") {
      out._.push(...queue);
      break;
    }
    const short = arg.length >= 2 && arg[0] === "-" && arg[1] !== "-";
    if (short && arg.length === 2) {
      const name = long(arg[1]!);
      store(name, kinds.get(name) === "string" && queue.length > 0 ? queue.shift() : undefined);
    } else if (short && kinds.get(long(arg[1]!)) !== "string") {
      // A group (`-cq`): each letter a flag; a string flag inside it takes the rest of the group as its value.
      const expanded: string[] = [];
      for (let j = 1; j < arg.length; j++) {
        if (kinds.get(long(arg[j]!)) !== "string" || j === arg.length - 1) expanded.push(`-${arg[j]}`);
        else {
          expanded.push(`-${arg[j]}${arg.slice(j + 1)}`);
          break;
        }
      }
      queue.unshift(...expanded);
    } else if (short) {
      store(long(arg[1]!), arg.slice(2));
    } else if (arg.startsWith("--") && arg.length > 2) {
      // As Node: `--=x` is a flag named "=x", but in `--a=b=c` the first `=` ends the name.
      if (arg.indexOf("=", 3) < 0) {
        const name = arg.slice(2);
        store(name, kinds.get(name) === "string" && queue.length > 0 ? queue.shift() : undefined);
      } else store(arg.slice(2, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1));
    } else out._.push(arg);
  }
  for (const [name, value] of Object.entries(defaults)) if (out[name] === undefined) out[name] = value;

  for (const [name, value] of Object.entries(out)) {
    if (name === "_") continue;
    if (kinds.get(name) === "boolean" && typeof value === "string") out[name] = value !== "false";
    else if (kinds.get(name) === "string" && typeof value === "boolean") out[name] = "";
  }
  for (const name of negated) {
    out[name] = false;
    for (const alias of aliasesOf.get(name) ?? []) out[alias] = false;
    const main = [...aliasesOf].find(([, aliases]) => aliases.includes(name))?.[0];
    if (main !== undefined) out[main] = false;
  }
  // Aliases and names hold the same value; given under an alias, it replaces the name's default.
  for (const [name, aliases] of aliasesOf) {
    for (const alias of aliases) {
      if (out[alias] !== undefined && out[name] === undefined) out[name] = out[alias];
      if (out[name] !== undefined && out[alias] === undefined) out[alias] = out[name];
      if (out[alias] !== out[name] && defaults[name] === out[name]) out[name] = out[alias];
    }
  }

  const words = [...out._];
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") {
      const word = words.shift();
      if (word !== undefined) out[name] = word;
      else if (def.default === undefined && def.required !== false) throw new CachetError("BAD_FLAG", `Missing required positional argument: ${name.toUpperCase()}`, { hint: usageHint });
      else out[name] = def.default;
    } else if (def.type === "enum") {
      const value = out[name];
      const options = (def.options ?? []) as string[];
      if (value !== undefined && options.length > 0 && !options.includes(value as string)) {
        throw new CachetError("BAD_FLAG", `Invalid value for argument: --${name} (${String(value)}). Expected one of: ${options.join(", ")}.`, { hint: usageHint });
      }
    } else if (def.required && out[name] === undefined) {
      throw new CachetError("BAD_FLAG", `Missing required argument: --${name}`, { hint: usageHint });
    }
  }
  return out;
}
