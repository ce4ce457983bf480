/**
 * A request the emulator refuses, as the provider would: HTTP status, the
 * provider's error type and message, and (OpenAI) the `param` and `code`
 * fields. Protocols render it in their own error body shape.
 */
export class EmulatorRequestError extends Error {
  override readonly name = "EmulatorRequestError";
  constructor(
    /** HTTP status (400 for invalid requests). */
    readonly status: number,
    /** Error type in Anthropic terms (`invalid_request_error`, `overloaded_error`…); protocols map it. */
    readonly type: string,
    message: string,
    /** What the provider names as the offending parameter (OpenAI `param`), when it names one. */
    readonly param: string | null = null,
    /** The provider's machine-readable code (OpenAI `code`), when it gives one. */
    readonly code: string | null = null,
    /** Each wrong field with why (Gemini's `google.rpc.BadRequest` details), when the provider lists them. */
    readonly violations: readonly FieldViolation[] = [],
  ) {
    super(message);
  }
}

/** One wrong field of a request: its path when the provider names one, and the provider's description. */
export interface FieldViolation {
  field?: string;
  description: string;
}

/** Shorthand for a 400 invalid_request_error, with the provider's `param` and `code` when it gives them. */
export function invalidRequest(message: string, param: string | null = null, code: string | null = null): EmulatorRequestError {
  return new EmulatorRequestError(400, "invalid_request_error", message, param, code);
}
