/**
 * One parsed view of a command line: the flags before `--` and the words
 * (a run's prompt). Every reader of a command line (log level, `--json`,
 * `--help`, a run's `-o`, `--fork`, `--tool-result` and `-` for stdin, probe's
 * `-m`, every command's `args`) takes it from here, so a word after `--` is
 * never read as a flag and an unknown flag is a usage error. Node's
 * `util.parseArgs` is the tokenizer; this module only decides what each token
 * means.
 */
import { parseArgs } from "node:util";
import type { ArgsDef, ParsedArgs } from "citty";
import { CachetError } from "../errors.ts";
import { shellWord } from "../shell-word.ts";

/** One flag as given, under its declared (long) name. */
export interface ArgvFlag {
  name: string;
  /** true/false for a boolean (`--no-NAME` is false); the text for a flag that takes a value. */
  value: string | boolean;
  /** Position of the flag's word in the command line. */
  index: number;
}

/** One prompt word. */
export interface ArgvWord {
  text: string;
  /** After `--`: prompt text as written, never a flag and never `-` for stdin. */
  literal: boolean;
  /** Position of the word in the command line. */
  index: number;
}

/** A command line parsed against a command's flag definitions. */
export interface ArgvView {
  /** Every flag before `--`, in command-line order (`--help`/`-h` included as `help`). */
  flags: ArgvFlag[];
  words: ArgvWord[];
  /** The first usage error found, if any: the caller throws it once it has read what it needs (log level, --json). */
  error?: CachetError;
}

/** Which flags the view treats specially. */
export interface ArgvOptions {
  /** The command's name, for messages (`cachet run --help`). */
  command: string;
  /** Boolean flags that also take `=VALUE` (`--fork=ID`): the value is kept as text. */
  inlineValue?: readonly string[];
  /** The last positional takes every word left (a run's prompt); otherwise a word past the declared positionals is an error. */
  restWords?: boolean;
}

/** What {@link parseArgv} reads a command's flag definitions as: long names, letters, positionals and util.parseArgs's options. */
interface FlagTables {
  kinds: ReadonlyMap<string, "boolean" | "value">;
  shorts: ReadonlyMap<string, string>;
  positionals: number;
  config: Readonly<Record<string, { type: "boolean" | "string"; short?: string }>>;
}

/** Tables by definitions object: a command's are built once per process (a resident one parses a command line per turn). */
const tablesByDefs = new WeakMap<ArgsDef, FlagTables>();

function flagTables(defs: ArgsDef): FlagTables {
  const known = tablesByDefs.get(defs);
  if (known !== undefined) return known;
  // Plain loops, here and below: this runs before every request, and an array builtin's first call costs about
  // 0.2 ms of compiling in a fresh process (map, filter, Object.fromEntries: 1 ms together, measured).
  const kinds = new Map<string, "boolean" | "value">([["help", "boolean"]]);
  const shorts = new Map<string, string>([["h", "help"]]);
  let positionals = 0;
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") {
      positionals++;
      continue;
    }
    kinds.set(name, def.type === "boolean" ? "boolean" : "value");
    const alias = (def as { alias?: string | string[] }).alias;
    for (const a of alias === undefined ? [] : Array.isArray(alias) ? alias : [alias]) if (a.length === 1) shorts.set(a, name);
  }
  const config: Record<string, { type: "boolean" | "string"; short?: string }> = {};
  for (const [name, kind] of kinds) config[name] = { type: kind === "boolean" ? "boolean" : "string" };
  // A flag's letter is the first one naming it (a letter given to two flags names the later one).
  for (const [letter, name] of shorts) config[name]!.short ??= letter;
  const tables = { kinds, shorts, positionals, config };
  tablesByDefs.set(defs, tables);
  return tables;
}

/**
 * Parses `args` against `defs`. Short flags: `-mVALUE`, `-m VALUE` and
 * `-m=VALUE` all mean VALUE (one `=` after the letter is dropped); a group
 * `-cq` is each letter; a boolean letter followed by `=` (`-c=false`) is an
 * error. A long boolean takes `--NAME=true|false`. Never throws: the first
 * problem is `error` (UNKNOWN_FLAG or BAD_FLAG, exit 2).
 */
export function parseArgv(args: readonly string[], defs: ArgsDef, options: ArgvOptions): ArgvView {
  const { kinds, shorts, positionals, config } = flagTables(defs);
  const { tokens } = parseArgs({ args: [...args], options: config, strict: false, allowPositionals: true, tokens: true });
  const view: ArgvView = { flags: [], words: [] };
  const fail = (error: CachetError) => {
    view.error ??= error;
  };
  const inlineValue = new Set(options.inlineValue ?? []);
  let literal = false;
  // Letters already read from each short group (`-cq`), to find the character after the current one.
  const groupAt = new Map<number, number>();
  // Words refused whole (`-c=false`): the tokenizer's reading of their rest (`-=`, `-f`, ... `-s e`) is no flag.
  const refused = new Set<number>();
  for (const token of tokens) {
    if (refused.has(token.index)) continue;
    if (token.kind === "option-terminator") {
      literal = true;
      continue;
    }
    if (token.kind === "positional") {
      view.words.push({ text: token.value, literal, index: token.index });
      continue;
    }
    const short = !token.rawName.startsWith("--");
    const at = groupAt.get(token.index) ?? 1;
    if (short) groupAt.set(token.index, at + 1);
    const negated = !short && !kinds.has(token.name) && token.name.startsWith("no-") && kinds.get(token.name.slice(3)) === "boolean";
    const name = negated ? token.name.slice(3) : token.name;
    const kind = kinds.get(name);
    if (kind === undefined) {
      fail(unknownFlag(token.rawName, options.command));
      continue;
    }
    if (kind === "value") {
      let value = token.value;
      if (short && token.inlineValue && value?.startsWith("=")) value = value.slice(1);
      const looksLikeFlag = !token.inlineValue && value !== undefined && value.startsWith("-") && value !== "-" && !/^-\d/.test(value);
      if (value === undefined || value === "" || looksLikeFlag) {
        // A value that starts with `-` (`-s "-be terse"`) reads as a flag, as util.parseArgs reads it; the `=` form takes it.
        const dashValue = looksLikeFlag && !isDeclaredFlag(value!, kinds, shorts);
        const hint = dashValue ? `for a value that starts with -, write it with =: --${name}=${shellWord(value!)}` : `run \`cachet ${options.command} --help\` for what it takes`;
        fail(new CachetError("BAD_FLAG", `flag ${token.rawName} needs a value${dashValue ? ` ("${value}" starts with - so it reads as a flag)` : ""}`, { hint }));
        continue;
      }
      view.flags.push({ name, value, index: token.index });
      continue;
    }
    if (short && args[token.index]![at + 1] === "=") {
      fail(new CachetError("BAD_FLAG", `flag ${token.rawName} takes no value (${args[token.index]})`, { hint: `write ${token.rawName} alone, or --no-${name} for false` }));
      refused.add(token.index);
      continue;
    }
    if (token.value === undefined) view.flags.push({ name, value: !negated, index: token.index });
    else if (inlineValue.has(name) && !negated) view.flags.push({ name, value: token.value, index: token.index });
    else if (!negated && (token.value === "true" || token.value === "false")) view.flags.push({ name, value: token.value === "true", index: token.index });
    else fail(new CachetError("BAD_FLAG", `flag ${token.rawName}=${token.value}: --${name} takes no value`, { hint: `write --${name} or --no-${name}` }));
  }
  const extra = view.words[positionals];
  if (extra !== undefined && !(options.restWords && positionals > 0)) {
    const sessionWord = defs.session?.type === "string" && !lastFlag(view, "session") && view.words.length === 1;
    fail(extraWord(extra.text, positionals, sessionWord, options.command, view));
  }
  return view;
}

/**
 * Parses command `name`'s words (`rest` of src/cli/command-line.ts readCommandLine) against its flag definitions as
 * every reader of that command line does: a run takes `--fork=ID` and every word left as its prompt.
 */
export function parseCommandArgv(name: string, rest: readonly string[], defs: ArgsDef): ArgvView {
  return parseArgv(rest, defs, { command: name, inlineValue: name === "run" ? ["fork"] : [], restWords: name === "run" });
}

/** The last value of flag `name` (later flags override earlier ones), or undefined. */
export function lastFlag(view: ArgvView, name: string): ArgvFlag | undefined {
  return view.flags.findLast((f) => f.name === name);
}

/** Every text value of flag `name`, in order: the repeatable flags (`-o`, `--tool-result`). */
export function flagValues(view: ArgvView, name: string): string[] {
  return view.flags.filter((f) => f.name === name && typeof f.value === "string").map((f) => f.value as string);
}

/**
 * What a command's `run` reads as `args`, built from the view (the command
 * line is parsed once, here): each declared flag under its name with its last
 * value, else its default (a boolean given a value through `inlineValue`,
 * `--fork=ID`, is true: the value is read from the view); each positional, in
 * declaration order, the next word; `_` every word. The same object citty's
 * parser gave for the same command line.
 * @param actions the words the command's ACTION positional takes, named when it is missing
 * @throws CachetError BAD_FLAG (exit 2): a required positional or flag is missing, or an enum flag's value is not one of its options
 */
export function commandArgs<T extends ArgsDef>(view: ArgvView, defs: T, command: string, actions?: readonly string[]): ParsedArgs<T> {
  const words = view.words.map((w) => w.text);
  const args: Record<string, unknown> = { _: words };
  const given = new Map<string, string | boolean>();
  for (const f of view.flags) given.set(f.name, f.value);
  const refuse = (message: string) => new CachetError("BAD_FLAG", message, { hint: `run \`cachet ${command} --help\` for the flags and their values` });
  let next = 0;
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") {
      const word = words[next++];
      if (word === undefined && def.default === undefined && def.required !== false) {
        // An ACTION is one of a few words: they are said at once, not behind --help.
        if (name === "action" && actions?.length) {
          throw new CachetError("BAD_FLAG", `cachet ${command} needs ACTION: ${actions.join(", ")}`, { hint: `e.g. cachet ${command} ${actions[0]}; run \`cachet ${command} --help\` for what each does` });
        }
        // A mistyped action took the action's place: that is what is wrong, not the word missing after it.
        const action = args.action;
        if (actions?.length && typeof action === "string" && !actions.includes(action)) {
          throw new CachetError("UNKNOWN_COMMAND", `unknown action "${action}" for \`cachet ${command}\``, { hint: `use ${actions.join(", ")}` });
        }
        throw refuse(`cachet ${command} needs ${name.toUpperCase()}`);
      }
      args[name] = word ?? def.default;
      continue;
    }
    const value = given.get(name);
    args[name] = value === undefined ? def.default : def.type === "boolean" ? value !== false : value;
    if (def.type === "enum") {
      const options = def.options ?? [];
      if (args[name] !== undefined && options.length > 0 && !options.includes(args[name] as string)) {
        throw refuse(`--${name} ${String(args[name])}: expected one of ${options.join(", ")}`);
      }
    } else if (def.required && args[name] === undefined) throw refuse(`cachet ${command} needs --${name}`);
  }
  return args as ParsedArgs<T>;
}

/** `word` is exactly one of the command's flags (`--json`, `--no-stream`, `-q`): a missing value, not a value with a dash. */
function isDeclaredFlag(word: string, kinds: ReadonlyMap<string, string>, shorts: ReadonlyMap<string, string>): boolean {
  if (/^-[^-]$/.test(word)) return shorts.has(word[1]!);
  const long = word.startsWith("--") ? word.slice(2).split("=")[0]! : undefined;
  return long !== undefined && (kinds.has(long) || (long.startsWith("no-") && kinds.get(long.slice(3)) === "boolean"));
}

/**
 * A word past the command's positionals. A single word where the command
 * takes none but reads `--session` most likely names a session; several words
 * (`cachet why is the sky blue`) most likely are a prompt that starts with a
 * command word, so the hint gives the prompt reading. Flags or words after
 * `--` were given to the command on purpose: the hint points at its help.
 */
function extraWord(word: string, positionals: number, sessionWord: boolean, command: string, { words, flags }: ArgvView): CachetError {
  const what = positionals === 0 ? `takes no word "${word}"` : `takes at most ${positionals === 1 ? "one word" : `${positionals} words`}; "${word}" is one too many`;
  const help = `run \`cachet ${command} --help\` for what it takes`;
  const hint = sessionWord ? `to name a session use --session ${word}` : flags.length > 0 || words.some((w) => w.literal) ? help : `${promptReading([command, ...words.map((w) => w.text)])}; ${help}`;
  return new CachetError("EXTRA_WORD", `cachet ${command} ${what}`, { hint });
}

/** The hint that sends `words` (a command word first) as a prompt: `cachet run WORDS` or `cachet -- WORDS`. */
export function promptReading(words: readonly string[]): string {
  const line = words.map(shellWord).join(" ");
  return `to send it as a prompt: cachet run ${line} (or cachet -- ${line})`;
}

/**
 * An undeclared flag: a typo, or prompt text that starts with `-` (`what is -1 plus 2`) that belongs after `--`.
 * `--version` is no command's flag: `cachet --version` alone prints the version (README, root help).
 */
function unknownFlag(rawName: string, command: string): CachetError {
  const version = rawName === "--version" || rawName === "-v" ? "`cachet --version` alone prints the version; " : "";
  return new CachetError("UNKNOWN_FLAG", `unknown flag ${rawName} for \`cachet ${command}\``, {
    hint: `${version}run \`cachet ${command} --help\` for the flags it accepts${command === "run" ? `; to send "${rawName}" as prompt text, put the prompt words after \`--\`` : ""}`,
  });
}
