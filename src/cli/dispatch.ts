/**
 * Every command line the entry (src/cli/main.ts) does not answer itself: the
 * typo guard, flag checks, the command's lazy module (citty renders its help),
 * and the one place errors become a message, a hint and an exit code.
 */
import { CachetError, EXIT, isCachetError } from "../errors.ts";
import { edges } from "../edges.ts";
import { noteStdoutFailure, resetStdout, settleStdout, stdout } from "../stdout.ts";
import type { ArgvWord } from "./argv.ts";
import { commands } from "./index.ts";
import { moduleOnce } from "../module-once.ts";
import { nearName } from "./near-name.ts";

// The command's state, reset as each command starts (a resident process runs many, one at a time).
/** A run (the default command) given --json: its failures also print an `error` line on stdout. */
let jsonRun = false;
/** The command line runs a turn (not its help): what it writes on stdout is the answer. */
let turnRun = false;
/** `--debug` among the flags: errors print their stacks. */
let debugMode = false;

/**
 * Runs the command line `args` (process.argv without the runtime and script)
 * against the edges now bound (src/edges.ts). Never throws: an error is
 * printed as `cachet: message` plus a hint, and the command ends with the
 * error's exit code (README.md, "Exit codes"): in a process of its own the
 * process exits there; a resident process's command returns with the code in
 * its edges' `finished` (or, for an error that may leave work running, exits).
 * A resident process calls it once per command, after the previous one ended.
 */
export async function dispatch(args: string[]): Promise<void> {
  // The daemon's own command (`daemon run`) is still running when it dispatches a turn: its state is put back after.
  const outer = { jsonRun, turnRun, debugMode };
  jsonRun = turnRun = debugMode = false;
  resetStdout();
  try {
    await main(args);
    // Ended with its code (report(), or the run's own): its process of its own exited there, saying nothing more.
    if (edges().finished !== undefined) return;
    // Past main, the command succeeded: a failed write to stdout is the one failure left.
    await settleStdout(turnRun ? "answer" : "output").catch((error: unknown) => report(error, debugMode));
  } finally {
    ({ jsonRun, turnRun, debugMode } = outer);
  }
}

/**
 * Reports a failed write of the entry's own output (`--version`, the root
 * `--help`), as {@link dispatch} reports a command's: EPIPE exits 0, any
 * other error ends the command with exit 1 and one line.
 */
export async function reportStdoutFailure(error: unknown): Promise<void> {
  noteStdoutFailure(error);
  await settleStdout("output").catch((failure: unknown) => report(failure, false));
}

type LogLevel = "debug" | "verbose" | "quiet" | "normal";

// Loaded on every command line; a resident process runs one after another (src/module-once.ts).
const logModule = moduleOnce(() => import("../log.ts"));
const commandLineModule = moduleOnce(() => import("./command-line.ts"));
const argvModule = moduleOnce(() => import("./argv.ts"));

async function main(args: string[]): Promise<void> {
  const { resetLog, setLogLevel } = await logModule();
  resetLog();
  try {
    const { readCommandLine } = await commandLineModule();
    const line = readCommandLine(args, edges().isTerminal(0));
    if (line.kind === "help") return await rootHelp(line.rest);
    if (line.kind === "version-misuse") {
      throw Object.assign(new Error(`${line.flag} takes no other arguments`), { code: "BAD_FLAG", exitCode: EXIT.usage, hint: "run `cachet --version` alone" });
    }
    await execute(line.name, line.rest, line.implicit, setLogLevel);
  } catch (error) {
    await report(error, debugMode);
  }
}

/**
 * Runs command `name`: its command line is parsed once (src/cli/argv.ts) and
 * every reader (log level, --json, --help, the command's `args`) takes that
 * view, so a word after `--` is an argument and never a flag. The command's
 * `run` is called directly: cachet's commands define no citty setup, cleanup,
 * plugins or subcommands, and citty's own parser would read the line again.
 */
async function execute(name: string, rest: string[], implicit: boolean, setLogLevel: (level: LogLevel) => void): Promise<void> {
  // A run colours nothing through citty but its help (showUsage strips its help's colour off a terminal): asking
  // whether stdout is a terminal would build process.stdout, or load node:tty (3-8 ms measured: Node's stream
  // modules), before its request. The other commands write at once.
  if (name !== "run") plainUnlessTerminal();
  const { default: cmd, actions } = await commands[name]!.load();
  const defs = typeof cmd.args === "function" ? await cmd.args() : await cmd.args;
  const { commandArgs, lastFlag, parseCommandArgv } = await argvModule();
  const view = parseCommandArgv(name, rest, defs ?? {});
  const on = (flag: string) => lastFlag(view, flag)?.value === true;
  debugMode = on("debug");
  jsonRun = name === "run" && on("json");
  // A JSON run loads the module anyway, to write its lines.
  if (jsonRun) (await import("../run/output.ts")).resetJsonErrorLine();
  setLogLevel(debugMode ? "debug" : on("verbose") ? "verbose" : on("quiet") ? "quiet" : "normal");
  // Bytes that were not UTF-8 reach argv as U+FFFD: checked only then (argv-encoding.ts reads the raw words back),
  // once --json is known, so a JSON run's refusal is a JSON line too.
  for (const word of rest) {
    if (!word.includes("\ufffd")) continue;
    const { refuseInvalidUtf8, wordRole } = await import("./argv-encoding.ts");
    await refuseInvalidUtf8(process.argv.slice(2), (bad) => wordRole(bad, name, rest, view, defs ?? {}));
    break;
  }
  if (on("help")) {
    // `CMD --help` takes what `cachet help CMD` takes: a word more (a prompt, a session, a second action) is refused, not dropped.
    if (view.error) throw view.error;
    refuseHelpWords(name, view.words, actions);
    return await showUsage(cmd);
  }
  if (view.error) throw view.error;
  if (implicit) guardTypo(view.words, rest);
  const args = commandArgs(view, defs ?? {}, name, actions);
  turnRun = name === "run";
  await cmd.run?.({ rawArgs: rest, args, cmd, data: view });
}

/** `cachet help [COMMAND]` (or `--help`): global flags may sit anywhere; `help help` is the root help. */
async function rootHelp(rest: readonly string[]): Promise<void> {
  const [{ parseArgv }, { globalArgs }] = await Promise.all([import("./argv.ts"), import("./_args.ts")]);
  // Every word is read here: `help sessions show` asks for a command's action, `help me write a poem` is a prompt.
  const view = parseArgv(rest, { command: { type: "positional", required: false }, ...globalArgs }, { command: "help", restWords: true });
  if (view.error) throw view.error;
  const words = view.words.map((w) => w.text);
  const command = words[0];
  const asPrompt = words.length > 1 && view.flags.length === 0 && !view.words.some((w) => w.literal);
  if (command !== undefined && command !== "help") {
    if (!Object.hasOwn(commands, command)) {
      const { promptReading } = await import("./argv.ts");
      throw new CachetError("UNKNOWN_COMMAND", `unknown command "${command}"`, { hint: `run \`cachet --help\` for the commands${asPrompt ? `; ${promptReading(["help", ...words])}` : ""}` });
    }
    const { default: cmd, actions } = await commands[command]!.load();
    // A command with actions (sessions, plugins, prices, schema) shows its help for `help COMMAND ACTION`, one of its actions.
    if (words.length > (actions ? 2 : 1)) {
      const { promptReading } = await import("./argv.ts");
      const help = "run `cachet help COMMAND` for one command's help";
      const takes = actions ? "a command and one of its actions" : "one command";
      throw new CachetError("EXTRA_WORD", `cachet help takes ${takes}; "${words[actions ? 2 : 1]}" is one too many`, {
        hint: asPrompt ? `${promptReading(["help", ...words])}; ${help}` : help,
      });
    }
    if (actions && words.length === 2 && !actions.includes(words[1]!)) {
      const { promptReading } = await import("./argv.ts");
      const help = `its actions: ${actions.join(", ")}; run \`cachet help ${command}\``;
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${words[1]}" for \`cachet ${command}\``, { hint: asPrompt ? `${help}; ${promptReading(["help", ...words])}` : help });
    }
    plainUnlessTerminal();
    await showUsage(cmd);
    return;
  }
  const { rootHelpText } = await import("./root-help.ts");
  stdout().write(`${rootHelpText()}\n`);
}

/**
 * The words `cachet NAME --help` may hold, as `cachet help NAME` takes them:
 * none, or one of the command's `actions` when it has some (`sessions show --help`).
 * @throws CachetError EXTRA_WORD (a word too many) or UNKNOWN_COMMAND (not one of its actions), exit 2
 */
function refuseHelpWords(name: string, words: readonly ArgvWord[], actions: readonly string[] | undefined): void {
  const extra = words[actions ? 1 : 0];
  const alone = `run \`cachet ${name} --help\` alone${actions ? " or with one of its actions" : ""} for its help`;
  const prompt = name === "run" ? `; to send a prompt, leave out --help (or put "--help" after \`--\`)` : "";
  if (extra !== undefined) {
    const takes = actions ? "at most one of its actions" : "no other words";
    throw new CachetError("EXTRA_WORD", `\`cachet ${name} --help\` takes ${takes}; "${extra.text}" is one too many`, { hint: `${alone}${prompt}` });
  }
  const action = words[0]?.text;
  if (actions && action !== undefined && !actions.includes(action)) {
    throw new CachetError("UNKNOWN_COMMAND", `unknown action "${action}" for \`cachet ${name}\``, { hint: `its actions: ${actions.join(", ")}; run \`cachet help ${name}\`` });
  }
}

/**
 * citty's help of `cmd` through src/stdout.ts (console.log drops a failed
 * write), without the spaces citty pads each line to its longest with, and
 * without colour unless stdout is a terminal (citty decides colour when it
 * loads, before a run knows it is asked for help).
 */
async function showUsage(cmd: Parameters<typeof import("citty").renderUsage>[0]): Promise<void> {
  const { renderUsage } = await import("citty");
  const text = (await renderUsage(cmd)).replace(/[ \t]+$/gm, "");
  stdout().write(`${!edges().isTerminal(1) || process.env.NO_COLOR ? text.replace(/\x1b\[[0-9;]*m/g, "") : text}\n\n`);
}

/**
 * citty decides on colour once, when loaded, from NO_COLOR only: help piped to
 * a file must be plain text. Call it before citty is imported. Asked without
 * building `process.stdout` (src/edges.ts): that Node stream shares the
 * native writer src/stdout.ts writes through, and a failed write (a reader
 * that closed the pipe) would reach it as an 'error' event nobody handles,
 * a crash with a stack trace instead of the quiet EPIPE exit.
 */
function plainUnlessTerminal(): void {
  if (!edges().isTerminal(1) || process.env.NO_COLOR) process.env.NO_COLOR = "1";
}

/**
 * An implicit run whose prompt is one lone word equal or close to a command
 * name (or `help`, or `version` of `--version`) is a misplaced or mistyped
 * command, not a prompt. Words after `--` are the prompt as written, and
 * `cachet run WORD` always sends WORD.
 */
function guardTypo(words: readonly ArgvWord[], args: string[]): void {
  if (words.length !== 1 || words[0]!.literal) return;
  const word = words[0]!.text;
  if (!/^[a-z]+$/.test(word)) return;
  const near = nearName(word, [...Object.keys(commands), "help", "version"]);
  if (!near) return;
  // The same command line with `run` in front, when it can be shown without shell quoting.
  const asPrompt = args.every((a) => /^[\w@%+=:,./-]+$/.test(a)) ? `cachet run ${args.join(" ")}` : `cachet run ${word}`;
  const shown = near === "version" ? "--version" : near;
  const exact = near === word && near !== "version";
  throw Object.assign(new Error(exact ? `"${word}" is a command: it must come first, before other flags` : `unknown command "${word}"`), {
    code: "UNKNOWN_COMMAND",
    exitCode: EXIT.usage,
    hint: `${exact ? `\`cachet ${near}\` runs the command.` : `did you mean \`cachet ${shown}\`?`} To send "${word}" as a prompt, use \`${asPrompt}\` or put it after \`--\``,
  });
}

/**
 * Errors after which a resident process does not serve on, though their command unwound: a bug (INTERNAL, an error
 * not cachet's own), the store failing (its connection is kept from turn to turn, src/session/database.ts), a plugin
 * call that failed or was left running past its time limit (src/plugin/guard.ts), an interruption (its signal's
 * handlers ran). Their command ends by exit(); every other reported error by finish() (src/edges.ts).
 */
const ENDS_PROCESS: ReadonlySet<string> = new Set(["INTERNAL", "STORE", "PLUGIN_HOOK", "INTERRUPTED"]);

/**
 * Prints `error` (one line and its hint; a --json run's `error` line on stdout) and ends the command with its exit
 * code (src/edges.ts finish; exit for an EPIPE or one of {@link ENDS_PROCESS}). Returns only in a resident process,
 * where the caller returns at once.
 */
async function report(error: unknown, debugMode: boolean): Promise<void> {
  const e = error as { message?: string; hint?: string; exitCode?: number; code?: string; stack?: string; cause?: unknown };
  // The reader closed stdout (`cachet export | head`): what it wanted was written; nothing to report.
  if (e?.code === "EPIPE") return edges().exit(EXIT.ok);
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
  const message = known ? e.message! : `internal error: ${e?.message ?? String(error)}`;
  // Messages quote user text (a session name, a file name): one line, no escape sequence reaches the terminal.
  const { printable } = await import("../printable.ts");
  const exitCode = known ? e.exitCode! : EXIT.failure;
  const code = known ? e.code! : "INTERNAL";
  if (jsonRun) {
    // A --json run's stdout says how it ended too (an error line, as the turn's own failures write), unless the turn wrote one.
    const { jsonErrorLineWritten } = await import("../run/output.ts");
    if (!jsonErrorLineWritten()) {
      stdout().write(`${JSON.stringify({ type: "error", code, message, ...(e?.hint ? { hint: e.hint } : {}), incomplete: false })}\n`);
    }
  }
  edges().writeStderr(`cachet: ${printable(message)}\n`);
  if (e?.hint) edges().writeStderr(`  hint: ${printable(e.hint)}\n`);
  else if (!known) edges().writeStderr("  hint: this is a bug; run again with --debug and report the output\n");
  if (debugMode && e?.stack) edges().writeStderr(`${e.stack}\n`);
  if (debugMode && e?.cause instanceof Error && e.cause.stack) edges().writeStderr(`cause: ${e.cause.stack}\n`);
  if (ENDS_PROCESS.has(code)) return edges().exit(exitCode);
  edges().finish(exitCode);
}
