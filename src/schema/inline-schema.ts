/**
 * Whether `--schema ARG` is inline JSON (it starts with `{`, after blanks) rather than a file path: a module of its
 * own, so a turn can tell which it is before it loads the schema code (src/cli/run-files.ts).
 */
export function isInlineSchema(arg: string): boolean {
  return arg.trimStart().startsWith("{");
}
