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
import { readFileSync, statSync } from "node:fs";
import * as v from "valibot";
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

/**
 * The answers of a script file, validated; re-read when the file changes.
 * @throws EmulatorRequestError 400 naming the file and the first problem
 *   (unreadable, not JSON, or not the documented shape).
 */
export function loadScript(path: string): ScriptedAnswer[] {
  let mtimeMs: number;
  try {
    mtimeMs = statSync(path).mtimeMs;
  } catch {
    throw scriptError(path, "cannot be read");
  }
  const known = loaded.get(path);
  if (known && known.mtimeMs === mtimeMs) return known.answers;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw scriptError(path, `is not valid JSON (${(error as Error).message})`);
  }
  const result = v.safeParse(ScriptSchema, raw);
  if (!result.success) {
    const issue = result.issues[0]!;
    const where = v.getDotPath(issue) ?? "(root)";
    throw scriptError(path, `is invalid at ${where}: ${issue.message}`);
  }
  loaded.set(path, { mtimeMs, answers: result.output });
  return result.output;
}

function scriptError(path: string, problem: string): EmulatorRequestError {
  return new EmulatorRequestError(
    400,
    "invalid_request_error",
    `emulator script ${path} ${problem}; expected a JSON list of {text?, thinking?, tool_calls?: [{name, arguments}], refusal?, images?, web_search?: [query]}`,
  );
}
