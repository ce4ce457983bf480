/**
 * Fault injection, chosen per request by the `x-emulator-fault` header, else
 * the `CACHET_EMULATOR_FAULT` environment variable.
 *
 * Syntax: `NAME` (every request) or `NAME:N` with N from 1 (only the first N
 * requests that carry this value, counted per emulator instance, so `429:1`
 * fails once and lets the retry through); surrounding blanks are ignored and
 * a blank value is no fault (src/emulator/control-value.ts). Names:
 * - `429`: HTTP 429 rate limit, `retry-after: 1` and `retry-after-ms: 200`.
 * - `500`: HTTP 500 internal error (`api_error`, as Anthropic documents at
 *   https://docs.anthropic.com/en/api/errors; OpenAI documents 500 as "the
 *   server had an error while processing your request",
 *   https://platform.openai.com/docs/guides/error-codes).
 * - `503`: HTTP 503 unavailable.
 * - `529`: HTTP 529 overloaded (`overloaded_error`).
 * - `error-before`: a 200 stream whose first event after the start is an
 *   `overloaded_error` error event, before any content.
 * - `error-after`: the same error event after all content, before the final
 *   usage/stop events.
 * - `reset`: the connection is closed before any byte of the response (no
 *   status line, no headers): the client sees a connection reset, as when a
 *   load balancer drops the connection.
 * - `hold`: the response does not start (no byte, not even headers) until
 *   `POST /_emulator/release` or until the client goes away; then it is
 *   answered normally. A test holds a request "sent, no byte back yet" this
 *   way instead of racing a clock; never released, it is a provider that
 *   never answers.
 * - `cut`: the stream (or JSON body) stops mid-way, inside an event, and
 *   the response ends there: every byte sent arrives, the answer never
 *   finishes. (A reset connection would make the client's kernel drop bytes
 *   it had not read yet, so what arrived would depend on timing.)
 * - `stall`: the stream sends its start and the first half of the content
 *   (text deltas included), then nothing for 10 minutes (a JSON body:
 *   nothing at all).
 * - `chatter`: the stream sends its start, then only keep-alive pings and
 *   error chatter comments every 250 ms for 10 minutes, no content.
 * - `split-utf8`: every SSE event (or the JSON body) is written in two TCP
 *   writes, split inside a multi-byte UTF-8 character when the event has one,
 *   else in the middle of the JSON.
 * - `thinking-pings`: hidden reasoning (CASES.md case 42): after the first
 *   content event (the opening of a thinking block when the answer thinks),
 *   only keep-alive pings every 250 ms for 2 s, then the rest of the stream.
 *   A JSON body arrives whole after 2 s.
 * On a non-streaming request `error-before`/`error-after` answer HTTP 529
 * (Anthropic) or 503 (others) and `chatter` behaves as `stall`.
 */
import { CachetError } from "../errors.ts";
import { envControl, requestControl } from "./control-value.ts";
import { EmulatorRequestError } from "./request-error.ts";

/** Request header naming a fault. */
export const FAULT_HEADER = "x-emulator-fault";
/** Environment variable naming a fault. */
export const FAULT_ENV = "CACHET_EMULATOR_FAULT";

/** Every fault name. */
export const FAULT_NAMES = ["429", "500", "503", "529", "error-before", "error-after", "cut", "stall", "chatter", "split-utf8", "thinking-pings", "reset", "hold"] as const;

/** A fault name. */
export type FaultName = (typeof FAULT_NAMES)[number];

/**
 * Refuses a `CACHET_EMULATOR_FAULT` that is not `NAME` or `NAME:N` (N from 1:
 * `:0` would never fire), when the emulator starts: otherwise every request
 * would be refused with a 400 that reads as the provider's refusal.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable, its value and the accepted names
 */
export function checkFaultEnv(env: Record<string, string | undefined>): void {
  const value = envControl(env, FAULT_ENV);
  if (value === undefined || parseFault(value)) return;
  throw new CachetError("BAD_FLAG", `${FAULT_ENV}=${JSON.stringify(env[FAULT_ENV])}: expected one of ${FAULT_NAMES.join(", ")}, optionally :N for the first N requests (e.g. 429:1)`, {
    hint: `unset ${FAULT_ENV} for no fault`,
  });
}

/** A fault value's name and count (`NAME:N`, N from 1), or undefined when it is neither `NAME` nor `NAME:N`; `value` is read by {@link envControl}. */
function parseFault(value: string): { name: FaultName; count: number | undefined } | undefined {
  const match = /^([a-z0-9-]+)(?::([1-9]\d*))?$/.exec(value);
  const name = match?.[1] as FaultName | undefined;
  if (!match || !name || !FAULT_NAMES.includes(name)) return undefined;
  return { name, count: match[2] === undefined ? undefined : Number(match[2]) };
}

/** Counts how often each `NAME:N` value has fired, and keeps the responses `hold` holds. */
export class FaultPlan {
  private readonly fired = new Map<string, number>();
  private readonly waiting = new Set<() => void>();

  /**
   * The fault to apply to this request, or undefined.
   * @throws EmulatorRequestError 400 on a value that is not `NAME` or `NAME:N`.
   */
  pick(headers: Headers, env: Record<string, string | undefined>): FaultName | undefined {
    const value = requestControl(headers, FAULT_HEADER, env, FAULT_ENV);
    if (value === undefined) return undefined;
    const parsed = parseFault(value);
    if (!parsed) throw new EmulatorRequestError(400, "invalid_request_error", `emulator fault "${value}" is not one of ${FAULT_NAMES.join(", ")} (optionally NAME:COUNT, COUNT from 1)`);
    if (parsed.count === undefined) return parsed.name;
    const count = (this.fired.get(value) ?? 0) + 1;
    this.fired.set(value, count);
    return count <= parsed.count ? parsed.name : undefined;
  }

  /** Resolves on {@link release}, or when `signal` aborts (the client went away). */
  hold(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiting.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiting.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Lets every held response start. @returns how many were held */
  release(): number {
    const held = [...this.waiting];
    for (const done of held) done();
    return held.length;
  }

  /** Forgets the counts and lets held responses start. */
  reset(): void {
    this.fired.clear();
    this.release();
  }
}
