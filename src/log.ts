/**
 * Diagnostics on stderr, never stdout. consola is imported on first use only:
 * importing it eagerly costs about 10 ms of start-up, paid by every `--version`.
 * Lines go to the stderr of the command now running (src/edges.ts).
 */
import type { ConsolaInstance } from "consola";
import { edges } from "./edges.ts";
import { printable } from "./printable.ts";

/** Verbosity chosen by the global flags: quiet < normal < verbose < debug. */
export type LogLevel = "quiet" | "normal" | "verbose" | "debug";

let level: LogLevel = "normal";
let instance: ConsolaInstance | undefined;

/**
 * Back to the normal verbosity and a new consola instance (whose colours
 * follow the next command's stderr): called as a command starts, as a
 * resident process runs many.
 */
export function resetLog(): void {
  level = "normal";
  instance = undefined;
}

/** Sets the verbosity for the rest of the command (from `--quiet`, `--verbose`, `--debug`). */
export function setLogLevel(next: LogLevel): void {
  level = next;
  if (instance) instance.level = consolaLevel(next);
}

/** The current verbosity. */
export function getLogLevel(): LogLevel {
  return level;
}

/**
 * The command's consola instance writing to its stderr. Loaded lazily;
 * coloured only when stderr is a terminal and NO_COLOR is unset.
 */
export async function logger(): Promise<ConsolaInstance> {
  if (instance) return instance;
  // The basic reporter: one plain line per diagnostic, whatever the terminal (scripts read stderr too).
  const { createConsola } = await import("consola/basic");
  // consola writes lines with `write` (and reads `columns`, which stays unset: no wrapping).
  const stderr = { write: (text: string) => (edges().writeStderr(text), true) } as unknown as NodeJS.WriteStream;
  instance = createConsola({
    level: consolaLevel(level),
    stdout: stderr,
    stderr,
    formatOptions: { date: false, colors: !process.env.NO_COLOR && edges().isTerminal(2) },
  });
  return instance;
}

/** Prints a warning on stderr unless `--quiet`. */
export async function warn(message: string): Promise<void> {
  if (level === "quiet") return;
  (await logger()).warn(printable(message));
}

/** Prints an informational line on stderr unless `--quiet`. */
export async function info(message: string): Promise<void> {
  if (level === "quiet") return;
  (await logger()).info(printable(message));
}

/** Prints a line on stderr only with `--verbose` or `--debug`. */
export async function verbose(message: string): Promise<void> {
  if (level !== "verbose" && level !== "debug") return;
  (await logger()).log(message);
}

/** Prints a line on stderr only with `--debug`. */
export async function debug(message: string): Promise<void> {
  if (level !== "debug") return;
  (await logger()).debug(message);
}

function consolaLevel(l: LogLevel): number {
  return l === "quiet" ? 0 : l === "normal" ? 3 : l === "verbose" ? 4 : 5;
}
