/**
 * Every command line the entry (src/cli/main.ts) does not answer itself: the
 * typo guard, flag checks, citty and the command's lazy module, and the one
 * place errors become a message, a hint and an exit code.
 */
import { CachetError, EXIT, isCachetError } from "../errors.ts";
import { commands } from "./index.ts";

let commandName: string | undefined;

/**
 * Runs the command line `args` (process.argv without the runtime and script).
 * Never throws: an error is printed as `cachet: message` plus a hint, and the
 * process exits with the error's exit code (README.md, "Exit codes").
 */
export async function dispatch(args: string[]): Promise<void> {
  // A reader that closes the pipe early (`| head`) is not a failure. The writers stop (src/run/output.ts)
  // and the run goes on to store the turn and its ledger row: exiting here would lose them.
  process.stdout.on("error", () => {});
  await main(args);
}

async function main(args: string[]): Promise<void> {
  const { setLogLevel } = await import("../log.ts");
  setLogLevel(args.includes("--debug") ? "debug" : args.includes("--verbose") ? "verbose" : args.includes("--quiet") || args.includes("-q") ? "quiet" : "normal");
  try {
    if (args.length === 0 && process.stdin.isTTY) return await rootHelp();
    if (args[0] === "--help" || args[0] === "-h" || args[0] === "help") return await rootHelp(args[1]);
    const first = args[0];
    const named = first !== undefined && Object.hasOwn(commands, first);
    if (!named && first !== undefined && !first.startsWith("-")) guardTypo(first, args);
    if (args[0] === "--version" || args[0] === "-v") {
      throw Object.assign(new Error(`${args[0]} takes no other arguments`), { code: "BAD_FLAG", exitCode: EXIT.usage, hint: "run `cachet --version` alone" });
    }
    const name = named ? first! : "run";
    commandName = name === "run" && !named ? undefined : name;
    const rest = named ? args.slice(1) : args;
    // citty decides on colour once, when loaded, from NO_COLOR only: help piped to a file must be plain text.
    if (!process.stdout.isTTY || process.env.NO_COLOR) process.env.NO_COLOR = "1";
    const { runCommand, showUsage } = await import("citty");
    const cmd = (await commands[name]!.load()).default;
    if (rest.includes("--help") || rest.includes("-h")) {
      await showUsage(cmd);
      return;
    }
    const { assertKnownFlags } = await import("./_args.ts");
    const defs = typeof cmd.args === "function" ? await cmd.args() : await cmd.args;
    if (defs) assertKnownFlags(rest, defs, name);
    await runCommand(cmd, { rawArgs: rest });
  } catch (error) {
    await report(error, args.includes("--debug"));
  }
}

async function rootHelp(command?: string): Promise<void> {
  if (command && Object.hasOwn(commands, command)) {
    if (!process.stdout.isTTY || process.env.NO_COLOR) process.env.NO_COLOR = "1";
    const { showUsage } = await import("citty");
    await showUsage((await commands[command]!.load()).default);
    return;
  }
  const { rootHelpText } = await import("./root-help.ts");
  console.log(rootHelpText());
}

/** A lone word one or two edits from a command name is a typo, not a prompt. */
function guardTypo(word: string, args: string[]): void {
  if (args.some((a, i) => i > 0 && !a.startsWith("-"))) return;
  if (!/^[a-z]+$/.test(word)) return;
  const near = Object.keys(commands).find((name) => distance(name, word) <= (name.length > 5 ? 2 : 1));
  if (near) {
    throw Object.assign(new Error(`unknown command "${word}"`), {
      code: "UNKNOWN_COMMAND",
      exitCode: EXIT.usage,
      hint: `did you mean \`cachet ${near}\`? To send "${word}" as a prompt, use \`cachet run ${word}\``,
    });
  }
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

async function report(error: unknown, debugMode: boolean): Promise<never> {
  const e = error as { message?: string; hint?: string; exitCode?: number; code?: string; stack?: string; cause?: unknown };
  // The reader closed stdout (`cachet export | head`): what it wanted was written; nothing to report.
  if (e?.code === "EPIPE") process.exit(EXIT.ok);
  // SQLite failing on a read (a damaged page in an otherwise valid file) is the store's error, not a bug.
  if (typeof e?.code === "string" && e.code.startsWith("SQLITE_")) {
    const { storeFile } = await import("../paths.ts");
    return report(
      new CachetError("STORE", `the session store ${storeFile()} failed (${e.code}): ${e.message}`, {
        hint: "the file may be damaged: move it away (cachet starts a new one), or set CACHET_HOME to another directory",
        cause: error,
      }),
      debugMode,
    );
  }
  const known = isCachetError(error) || (typeof e?.code === "string" && typeof e?.exitCode === "number");
  // citty's own parse errors (missing positional, bad enum) are usage errors.
  const cittyUsage = !known && error instanceof Error && error.name === "CLIError";
  // citty colours its parse errors whatever stderr is; a script's log must not get escape codes.
  const raw = known || cittyUsage ? e.message! : `internal error: ${e?.message ?? String(error)}`;
  const message = cittyUsage ? raw.replace(/\x1b\[[0-9;]*m/g, "") : raw;
  // Messages quote user text (a session name, a file name): one line, no escape sequence reaches the terminal.
  const { printable } = await import("../printable.ts");
  process.stderr.write(`cachet: ${printable(message)}\n`);
  if (e?.hint) process.stderr.write(`  hint: ${printable(e.hint)}\n`);
  else if (cittyUsage) process.stderr.write(`  hint: run \`cachet ${commandName ?? ""}${commandName ? " " : ""}--help\` for the flags and their values\n`);
  else if (!known) process.stderr.write("  hint: this is a bug; run again with --debug and report the output\n");
  if (debugMode && e?.stack) process.stderr.write(`${e.stack}\n`);
  if (debugMode && e?.cause instanceof Error && e.cause.stack) process.stderr.write(`cause: ${e.cause.stack}\n`);
  process.exit(known ? e.exitCode! : cittyUsage ? EXIT.usage : EXIT.failure);
}
