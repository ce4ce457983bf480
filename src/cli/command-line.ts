/**
 * Which command a command line runs, decided as src/cli/dispatch.ts's main()
 * decides it: leading global flags, then a command name from the table, else
 * the default `run`. The daemon client and server ask it before any command
 * module is loaded.
 */
import { globalFlagsEnd } from "./_args.ts";
import { commands } from "./index.ts";

/**
 * The command `args` (process.argv without the runtime and script) runs, or
 * undefined when it shows help or misuses `--version` (no command runs).
 * @param stdinIsTerminal whether fd 0 is a terminal: a bare `cachet` on a terminal shows the root help
 */
export function commandOf(args: readonly string[], stdinIsTerminal: boolean): string | undefined {
  if (args.length === 0 && stdinIsTerminal) return undefined;
  const first = args[globalFlagsEnd(args)];
  if (first === "--help" || first === "-h" || first === "help" || first === "--version" || first === "-v") return undefined;
  return first !== undefined && Object.hasOwn(commands, first) ? first : "run";
}
