/**
 * The root help (`cachet --help`, `cachet help`, `cachet` alone at a terminal):
 * usage, the command table and examples. Plain text, no colour; a command's
 * own flags are citty's (`cachet <command> --help`).
 */
import { version } from "../../package.json";
import { commands } from "./index.ts";

/** The root help text, lines joined by "\n", without a final newline. */
export function rootHelpText(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  const lines = Object.entries(commands).map(([n, c]) => `  ${n.padEnd(width)}  ${c.description}`);
  return [
    `cachet ${version}: an LLM client that keeps every turn on the prompt cache and prices every request`,
    "",
    "Usage: cachet [PROMPT] [flags]        (same as: cachet run [PROMPT])",
    "       cachet <command> [flags]",
    "",
    "Commands:",
    ...lines,
    "",
    "Global flags (any command, also before it): --quiet, --verbose, --debug, --help. NO_COLOR is honoured.",
    "`cachet --version` prints the version; it takes no other arguments.",
    "`--` ends the flags: `cachet -- explain the -c flag` sends every word after it as the prompt.",
    "Examples:",
    '  git diff | cachet "write the commit message"',
    '  cachet --emulate "hello"                 (no API key: the built-in emulator)',
    "Run `cachet <command> --help` for a command's flags.",
  ].join("\n");
}
