/**
 * OpenAI Responses API conversation state, as documented:
 * - a response is stored unless the request says `store: false` (the
 *   parameter defaults to true);
 * - a request with `previous_response_id` continues that response: the model
 *   sees the stored response's input and output items, then the new `input`
 *   (the previous `instructions` are not carried over; tools and the output
 *   format are the new request's own);
 *   the whole context is billed as input, cached reads reported as usual;
 * - an id that is unknown, expired or deleted is refused with HTTP 400,
 *   `invalid_request_error`, code `previous_response_not_found`, param
 *   `previous_response_id`, message "Previous response with id '…' not found.".
 *
 * The emulator answers a continued request exactly as it would answer the same
 * conversation sent whole. A test makes it forget stored responses with the
 * `x-emulator-forget-responses` header or `CACHET_EMULATOR_FORGET_RESPONSES`
 * (`all`, or ids separated by commas), applied before the request is served.
 * @see https://developers.openai.com/api/docs/guides/conversation-state
 * @see https://platform.openai.com/docs/api-reference/responses/create (store, previous_response_id)
 * @see https://github.com/maximhq/bifrost/issues/2441 (the error as the API returns it)
 */
import type { CacheStore } from "./cache-store.ts";
import { requestControl } from "./control-value.ts";
import { EmulatorRequestError } from "./request-error.ts";

/** Header naming the stored responses to forget before serving a request. */
export const FORGET_HEADER = "x-emulator-forget-responses";
/** Environment variable doing the same (the header wins). */
export const FORGET_ENV = "CACHET_EMULATOR_FORGET_RESPONSES";

/**
 * The request as the model sees it: with `previous_response_id`, the stored
 * conversation followed by the new input (and no `previous_response_id`);
 * otherwise the body itself. Forgets what the forget control names first.
 * @throws EmulatorRequestError 400 previous_response_not_found for an id that is not stored.
 */
export function resolvePrevious(body: Record<string, unknown>, headers: Headers, env: Record<string, string | undefined>, store: CacheStore): Record<string, unknown> {
  const forget = requestControl(headers, FORGET_HEADER, env, FORGET_ENV);
  if (forget) store.forgetResponses(forget === "all" ? "all" : forget.split(",").map((id) => id.trim()).filter(Boolean));
  const previous = body.previous_response_id;
  if (previous === undefined || previous === null) return body;
  if (typeof previous !== "string") throw new EmulatorRequestError(400, "invalid_request_error", "Invalid type for 'previous_response_id': expected a string.", "previous_response_id", "invalid_type");
  const stored = store.response(previous);
  if (!stored) throw new EmulatorRequestError(400, "invalid_request_error", `Previous response with id '${previous}' not found.`, "previous_response_id", "previous_response_not_found");
  const { previous_response_id: _, ...rest } = body;
  return { ...rest, input: [...stored, ...inputItems(body.input)] };
}

/** True when the response to `body` is stored (`store` defaults to true). */
export function isStored(body: Record<string, unknown>): boolean {
  return body.store !== false;
}

/**
 * Stores a response: the input items the model saw (`resolved`, the stored
 * conversation included) and its output items, under the response's id.
 */
export function keepResponse(store: CacheStore, id: string, resolved: Record<string, unknown>, output: readonly Record<string, unknown>[]): void {
  store.putResponse(id, [...inputItems(resolved.input), ...output]);
}

/** `input` as a list of items (a string is one user message). */
function inputItems(input: unknown): unknown[] {
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  return Array.isArray(input) ? input : [];
}
