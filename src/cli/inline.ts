/**
 * Bun macros for the entry (src/cli/main.ts imports them `with { type: "macro" }`):
 * they run when the entry is bundled (or transpiled from source), so their
 * results are string literals in the entry chunk and `--version` / `--help`
 * evaluate no other module. See https://bun.sh/docs/bundler/macros.
 */
import { version } from "../../package.json";
import { rootHelpText } from "./root-help.ts";

/** The package version, e.g. "0.1.0". */
export function packageVersion(): string {
  return version;
}

/** The root help as rootHelpText() renders it (no final newline). */
export function renderedRootHelp(): string {
  return rootHelpText();
}
