/**
 * The `--tool-result` flags that answer a turn's pending tool calls, in the
 * forms README documents (src/cli/tool-results.ts reads them): the turn is
 * sent only when every pending call has its result, so a hint names them all.
 */

/**
 * The command answering every call of `ids` (pending tool call ids, in call
 * order, at least one) of session `session` in one turn: one call is
 * `--tool-result ID` with the result on stdin; several are
 * `--tool-result ID=@FILE` each, or `--tool-result -` with a JSON object
 * `{ID: result}` on stdin. It names the session: another session may have run
 * since, and `--tool-result` alone continues the latest.
 */
export function toolResultFlags(ids: readonly string[], session: string): string {
  const cachet = `cachet --session ${session}`;
  if (ids.length === 1) return `${cachet} --tool-result ${ids[0]} with the result on stdin`;
  const files = ids.map((id) => `--tool-result ${id}=@FILE`).join(" ");
  const object = ids.map((id) => `${JSON.stringify(id)}: RESULT`).join(", ");
  return `${cachet} ${files} (a file per result), or ${cachet} --tool-result - with {${object}} on stdin`;
}
