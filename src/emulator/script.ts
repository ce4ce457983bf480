/**
 * Scripted answers: a JSON file holding a list of answers, picked per request
 * by the number of assistant turns already in the request (so the choice is
 * the same in every process). Named by the `x-emulator-script` header or the
 * `CACHET_EMULATOR_SCRIPT` environment variable.
 *
 * File shape: `[{ "text"?: string, "thinking"?: string,
 *   "tool_calls"?: [{ "name": string, "arguments": "<JSON object as a string>" }],
 *   "refusal"?: true, "images"?: number, "web_search"?: [query, ...] }]`
 *   (`refusal`: the answer ends as a refusal: Anthropic
 *   `stop_reason: "refusal"`, OpenAI Chat `content_filter`, the Responses API a
 *   `refusal` content part, Gemini `SAFETY`;
 *   `images`: the number of images an image-output model returns, Gemini
 *   protocol only; `web_search`: the queries the model runs with Anthropic's
 *   server web search tool, which the request must declare).
 */
import { isUtf8 } from "node:buffer";
import { readFileSync, type Stats, statSync } from "node:fs";
import * as v from "valibot";
import { CachetError } from "../errors.ts";
import { EmulatorRequestError } from "./request-error.ts";

/** Request header naming a script file. */
export const SCRIPT_HEADER = "x-emulator-script";
/** Environment variable naming a script file. */
export const SCRIPT_ENV = "CACHET_EMULATOR_SCRIPT";

const jsonObjectString = v.pipe(
  v.string(),
  v.check((s) => {
    try {
      const value: unknown = JSON.parse(s);
      return typeof value === "object" && value !== null && !Array.isArray(value);
    } catch {
      return false;
    }
  }, "arguments must be a JSON object written as a string"),
);

const ScriptedAnswerSchema = v.strictObject({
  text: v.optional(v.string()),
  thinking: v.optional(v.string()),
  refusal: v.optional(v.literal(true)),
  images: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  web_search: v.optional(v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.minLength(1))),
  tool_calls: v.optional(v.array(v.strictObject({ name: v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]{1,64}$/)), arguments: jsonObjectString }))),
});

const ScriptSchema = v.pipe(v.array(ScriptedAnswerSchema), v.minLength(1, "the script must hold at least one answer"));

/** One scripted answer. */
export type ScriptedAnswer = v.InferOutput<typeof ScriptedAnswerSchema>;

const loaded = new Map<string, { mtimeMs: number; answers: ScriptedAnswer[] }>();

const EXPECTED = "expected a JSON list of {text?, thinking?, tool_calls?: [{name, arguments}], refusal?, images?, web_search?: [query]}";

/**
 * The answers of a script file, validated; re-read when the file changes.
 * @throws EmulatorRequestError 400 naming the file and the first problem
 *   (missing, a directory, unreadable, not JSON, or not the documented shape).
 */
export function loadScript(path: string): ScriptedAnswer[] {
  const read = readScript(path);
  if ("problem" in read) throw new EmulatorRequestError(400, "invalid_request_error", `emulator script ${path}: ${read.problem}; ${EXPECTED}`);
  return read.answers;
}

/**
 * Refuses a `CACHET_EMULATOR_SCRIPT` naming a file the emulator could not
 * answer from, when the emulator starts: otherwise every request would be
 * refused with a 400 that reads as the provider's refusal.
 * @throws CachetError INPUT_INVALID (exit 3) naming the variable, the file and what is wrong with it
 */
export function checkScriptEnv(env: Record<string, string | undefined>): void {
  const path = env[SCRIPT_ENV];
  if (path === undefined || path === "") return;
  const read = readScript(path);
  if ("problem" in read) throw new CachetError("INPUT_INVALID", `${SCRIPT_ENV} ${path}: ${read.problem}`, { hint: `${EXPECTED}; fix the file, or unset ${SCRIPT_ENV} for unscripted answers` });
}

/** The file's answers, or the first thing wrong with it. */
function readScript(path: string): { answers: ScriptedAnswer[] } | { problem: string } {
  let stat: Stats;
  try {
    stat = statSync(path);
  } catch (error) {
    return { problem: unreadable(error) };
  }
  if (stat.isDirectory()) return { problem: "is a directory, not a file" };
  const known = loaded.get(path);
  if (known && known.mtimeMs === stat.mtimeMs) return known;
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    return { problem: unreadable(error) };
  }
  // Decoding would put U+FFFD in place of a bad byte: the answers would not be the file's.
  if (!isUtf8(bytes)) return { problem: "not valid UTF-8" };
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString("utf8"));
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message})` };
  }
  const result = v.safeParse(ScriptSchema, raw);
  if (!result.success) {
    const issue = result.issues[0]!;
    const where = v.getDotPath(issue) ?? "(root)";
    // A strict object's stray key reads "Expected never" in valibot's words.
    const what = issue.expected === "never" ? "unknown key" : issue.message;
    return { problem: `invalid at ${where}: ${what}` };
  }
  const answers = { mtimeMs: stat.mtimeMs, answers: result.output };
  loaded.set(path, answers);
  return answers;
}

function unreadable(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" ? "no such file" : code === "EACCES" || code === "EPERM" ? "permission denied" : code === "EISDIR" ? "is a directory, not a file" : `cannot be read (${code ?? (error as Error).message})`;
}
