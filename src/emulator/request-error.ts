/**
 * A request the emulator refuses, as the provider would: HTTP status, the
 * provider's error type and a message. Protocols render it in their own
 * error body shape.
 */
export class EmulatorRequestError extends Error {
  override readonly name = "EmulatorRequestError";
  constructor(
    /** HTTP status (400 for invalid requests). */
    readonly status: number,
    /** Error type in Anthropic terms (`invalid_request_error`, `overloaded_error`…); protocols map it. */
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Shorthand for a 400 invalid_request_error. */
export function invalidRequest(message: string): EmulatorRequestError {
  return new EmulatorRequestError(400, "invalid_request_error", message);
}
