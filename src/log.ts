/**
 * Diagnostics on stderr, never stdout. consola is imported on first use only:
 * importing it eagerly costs about 10 ms of start-up, paid by every `--version`.
 */
import type { ConsolaInstance } from "consola";
import { printable } from "./printable.ts";

/** Verbosity chosen by the global flags: quiet < normal < verbose < debug. */
export type LogLevel = "quiet" | "normal" | "verbose" | "debug";

let level: LogLevel = "normal";
let instance: ConsolaInstance | undefined;

/** Sets the verbosity for the rest of the process (from `--quiet`, `--verbose`, `--debug`). */
export function setLogLevel(next: LogLevel): void {
  level = next;
  if (instance) instance.level = consolaLevel(next);
}

/** The current verbosity. */
export function getLogLevel(): LogLevel {
  return level;
}

/**
 * The shared consola instance writing to stderr. Loaded lazily; NO_COLOR is
 * honoured by consola itself.
 */
export async function logger(): Promise<ConsolaInstance> {
  if (instance) return instance;
  // The basic reporter: one plain line per diagnostic, whatever the terminal (scripts read stderr too).
  const { createConsola } = await import("consola/basic");
  instance = createConsola({
    level: consolaLevel(level),
    stdout: process.stderr,
    stderr: process.stderr,
    formatOptions: { date: false, colors: !process.env.NO_COLOR && process.stderr.isTTY === true },
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
