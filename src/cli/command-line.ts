/**
 * Which command a command line runs: leading global flags, then a command
 * name from the table, else the default `run`. src/cli/dispatch.ts runs what
 * it says; the daemon client and server ask it before any command module is
 * loaded, so all three decide alike.
 */
import { globalFlagsEnd, isGlobalLetterGroup } from "./_args.ts";
import { commands } from "./index.ts";

/** What a command line asks for. */
export type CommandLine =
  /** The root help, or one command's (`help CMD`, `--help CMD`): `rest` are the words after the help word. */
  | { kind: "help"; rest: string[] }
  /** `--version` (or `-v`) with other words: a usage error. */
  | { kind: "version-misuse"; flag: string }
  /** Command `name` with `rest` (its words, the global flags before it included); `implicit`: the default `run`, not named. */
  | { kind: "command"; name: string; rest: string[]; implicit: boolean };

/**
 * Reads `args` (process.argv without the runtime and script).
 * @param stdinIsTerminal whether fd 0 is a terminal: a bare `cachet` on a terminal shows the root help
 */
export function readCommandLine(args: readonly string[], stdinIsTerminal: boolean): CommandLine {
  if (args.length === 0 && stdinIsTerminal) return { kind: "help", rest: [] };
  // Global flags may come before the command (`cachet -q sessions`): the command is the first word after them.
  let at = globalFlagsEnd(args);
  // Letter groups holding a global letter (`cachet -qv sessions`) count as global flags when a command word follows
  // them: that command reads (and names in an error) their letters. Before anything else they are a run's flags.
  let past = at;
  while (isGlobalLetterGroup(args[past])) past += 1 + globalFlagsEnd(args.slice(past + 1));
  if (past > at && args[past] !== undefined && Object.hasOwn(commands, args[past]!)) at = past;
  const first = args[at];
  if (first === "--help" || first === "-h" || first === "help") return { kind: "help", rest: args.slice(at + 1) };
  if (first === "--version" || first === "-v") return { kind: "version-misuse", flag: first };
  const named = first !== undefined && Object.hasOwn(commands, first);
  // Slices, not spreads: every command line passes here, and a process's first spread costs ~20 µs more (measured).
  return named ? { kind: "command", name: first!, rest: args.slice(0, at).concat(args.slice(at + 1)), implicit: false } : { kind: "command", name: "run", rest: args.slice(), implicit: true };
}

/** The command `args` runs, or undefined when it shows help or misuses `--version` (no command runs). */
export function commandOf(args: readonly string[], stdinIsTerminal: boolean): string | undefined {
  const line = readCommandLine(args, stdinIsTerminal);
  return line.kind === "command" ? line.name : undefined;
}

/**
 * Whether the command line `args` asks for its command's help (`--help` or `-h` among the words before `--`): for a
 * run, that is no turn. The daemon leaves such a line to its client (citty decides help's colour once, when it
 * loads), and a client that found no daemon starts none after it (src/daemon/autostart.ts).
 */
export function asksHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  const words = end === -1 ? args : args.slice(0, end);
  return words.includes("--help") || words.includes("-h");
}
