/**
 * `--tool-result` values: `ID` (the result is stdin), `ID=@FILE` (the result
 * is the file; repeatable, one per parallel tool call), or `-` (stdin is a
 * JSON object `{ID: result}` answering several calls at once; a result that
 * is not a string is sent as its JSON text).
 */
import { CachetError } from "../errors.ts";

/** One resolved tool result. */
export interface ToolResultValue {
  id: string;
  content: string;
}

/** True when one of the values takes stdin (`ID` alone, or `-`). */
export function readsStdin(values: readonly string[]): boolean {
  return values.some((v) => v === "-" || !v.includes("=@"));
}

/**
 * The results named by `values`, reading files and stdin.
 * @throws CachetError BAD_FLAG for two values reading stdin, a repeated id,
 *   a stdin that is not a JSON object of results; INPUT_INVALID for an unreadable file;
 *   MISSING_ARGUMENT when a value needs stdin and there is none.
 */
export async function resolveToolResults(values: readonly string[], stdinText: string | undefined, readText: (path: string, flag: string) => Promise<string>): Promise<ToolResultValue[]> {
  const fromStdin = values.filter((v) => v === "-" || !v.includes("=@"));
  if (fromStdin.length > 1) {
    throw new CachetError("BAD_FLAG", `--tool-result: ${fromStdin.join(" and ")} both read stdin`, { hint: "give each result as --tool-result ID=@FILE, or all of them as a JSON object {ID: result} on stdin with --tool-result -" });
  }
  const out: ToolResultValue[] = [];
  for (const value of values) {
    if (value === "-") out.push(...objectOfResults(stdinOrFail(stdinText, "-")));
    else if (value.includes("=@")) {
      const at = value.indexOf("=@");
      out.push({ id: value.slice(0, at), content: await readText(value.slice(at + 2), `--tool-result ${value}`) });
    } else out.push({ id: value, content: stdinOrFail(stdinText, value) });
  }
  const seen = new Set<string>();
  for (const { id } of out) {
    if (id === "") throw new CachetError("BAD_FLAG", "--tool-result: a result without a tool call id", { hint: "e.g. --tool-result toolu_01=@out.txt" });
    if (seen.has(id)) throw new CachetError("BAD_FLAG", `--tool-result ${id} is given twice`, { hint: "give each tool call's result once" });
    seen.add(id);
  }
  return out;
}

function stdinOrFail(text: string | undefined, value: string): string {
  if (text === undefined) {
    throw new CachetError("MISSING_ARGUMENT", `--tool-result ${value} needs the tool's result on stdin`, {
      hint: value === "-" ? `e.g. echo '{"toolu_01":"42"}' | cachet --tool-result -` : `e.g. ./tool | cachet --tool-result ${value}`,
    });
  }
  return text;
}

function objectOfResults(text: string): ToolResultValue[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    throw new CachetError("INPUT_INVALID", "--tool-result -: stdin is not a JSON object of results {ID: result}", { hint: `e.g. echo '{"toolu_01":"42","toolu_02":"7"}' | cachet --tool-result -` });
  }
  return Object.entries(parsed as Record<string, unknown>).map(([id, result]) => ({ id, content: typeof result === "string" ? result : JSON.stringify(result) }));
}
