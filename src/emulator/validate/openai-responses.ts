/**
 * What the Responses API refuses before generating, with its message,
 * `param` and `code`: message roles, every `function_call` answered by a
 * `function_call_output` with its `call_id` and no output without its call,
 * temperature/top_p on models that accept only the default, and
 * `max_output_tokens` below 16 or above the model's output limit.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */
import type { ModelFacts } from "../facts/model-facts.ts";
import { invalidRequest } from "../request-error.ts";
import { checkDefaultOnly } from "./openai-chat.ts";

const ROLES = new Set(["assistant", "system", "developer", "user"]);

/**
 * Checks a Responses body.
 * @throws EmulatorRequestError 400 invalid_request_error with the API's param and code.
 */
export function validateResponses(body: Record<string, unknown>, facts: ModelFacts): void {
  checkDefaultOnly(body, facts);
  const max = body.max_output_tokens;
  if (typeof max === "number" && max < 16) {
    throw invalidRequest(`Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${max} instead.`, "max_output_tokens", "integer_below_min_value");
  }
  if (typeof max === "number" && facts.output !== undefined && max > facts.output) {
    throw invalidRequest(`Invalid 'max_output_tokens': integer above maximum value. Expected a value <= ${facts.output}, but got ${max} instead.`, "max_output_tokens", "integer_above_max_value");
  }
  if (!Array.isArray(body.input)) return;
  const items = body.input as Record<string, unknown>[];
  const calls = new Set<string>();
  const outputs = new Set<string>();
  items.forEach((item, i) => {
    const type = typeof item.type === "string" ? item.type : "message";
    if (type === "message" && !ROLES.has(String(item.role))) {
      throw invalidRequest(`Invalid value: '${String(item.role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`, `input[${i}].role`, "invalid_value");
    }
    if (type === "function_call") calls.add(String(item.call_id));
    if (type === "function_call_output") {
      const id = String(item.call_id);
      if (!calls.has(id)) throw invalidRequest(`No tool call found for function call output with call_id ${id}.`, "input", null);
      outputs.add(id);
    }
  });
  for (const id of calls) if (!outputs.has(id)) throw invalidRequest(`No tool output found for function call ${id}.`, "input", null);
}
