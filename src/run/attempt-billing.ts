/**
 * Whether a failed attempt can have been billed. A provider bills a request it
 * answered with HTTP 200 (even when the stream is cut later); it bills nothing
 * for a request it refused with an error status, nor for one that got no
 * response at all (the connection refused or dropped before any byte of a
 * response). Anything else (an answered stream cut or failed, an abort or a
 * stall while the provider may be working) may have been billed.
 */
import { ProviderError } from "../errors.ts";
import type { ConsumeResult } from "./consume.ts";

/** The HTTP responses a fetch has received so far (status line and headers). */
export interface ResponsesSeen {
  count: number;
  /** HTTP status of the latest one; undefined before any. */
  status: number | undefined;
}

/**
 * Watches the fetch the provider adapters are given (ProviderConfig.fetch,
 * which adapters must pass to their SDK): an attempt during which the count
 * did not move got no response; otherwise the latest status says whether the
 * provider answered (200) or refused.
 */
export interface ResponseWatch {
  /** The fetch to give the adapters. */
  readonly fetch: typeof fetch;
  /** The responses received so far. */
  seen(): ResponsesSeen;
  /** Resolves once {@link fetch} has handed its next request to the inner fetch (it is on its way; no response yet). */
  nextRequest(): Promise<void>;
}

/** Wraps `inner` so that the responses it resolves with are counted. */
export function watchResponses(inner: typeof fetch): ResponseWatch {
  const seen: ResponsesSeen = { count: 0, status: undefined };
  const waiting: (() => void)[] = [];
  const watched = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    let pending: Promise<Response>;
    try {
      pending = inner(input, init);
    } finally {
      for (const resolve of waiting.splice(0)) resolve();
    }
    const response = await pending;
    seen.count++;
    seen.status = response.status;
    return response;
  }) as typeof fetch;
  return { fetch: watched, seen: () => ({ ...seen }), nextRequest: () => new Promise<void>((resolve) => waiting.push(resolve)) };
}

/** The status of the latest response received since `before` was taken, or undefined when none was. */
export function responseSince(before: ResponsesSeen, now: ResponsesSeen): number | undefined {
  return now.count > before.count ? now.status : undefined;
}

/**
 * True when `status` (of {@link responseSince}) says the provider accepted the request: a 2xx status line and
 * headers arrived. For a non-streamed answer that means the whole answer was generated, and may be billed whatever
 * happens to its body, so cachet never sends such a request again on its own (src/run/stages/send.ts).
 */
export function acceptedStatus(status: number | undefined): status is number {
  return status !== undefined && status >= 200 && status < 300;
}

/** What decides whether a failed exchange with a provider can have been billed ({@link unbilledExchange}). */
export interface FailedExchange {
  /** Something of an answer arrived: content, usage or a finish (a provider's error body is no answer). */
  answered: boolean;
  /** HTTP status of the response; undefined when no response (status line) arrived. */
  status: number | undefined;
  /** The connection failed (refused, reset, dropped) rather than an answer being judged bad. */
  connectionFailed: boolean;
  /** The caller aborted the request (cachet's signal, the proxy's client going away): the provider may have been working on it. */
  aborted: boolean;
}

/**
 * True when the exchange was provably not billed: nothing of an answer arrived and either the provider refused it
 * with an HTTP error status (>= 400), or no response came because the connection failed without the caller
 * aborting it. The one decision behind a run's attempts ({@link unbilledFailure}) and `cachet proxy`'s exchanges
 * (src/proxy/recorder.ts): both record such a request at exactly $0 ({@link UNBILLED_COST}).
 */
export function unbilledExchange(e: FailedExchange): boolean {
  if (e.answered) return false;
  if (e.status !== undefined) return e.status >= 400;
  return e.connectionFailed && !e.aborted;
}

/** The cost of a provably unbilled request ({@link unbilledExchange}), USD: exactly $0, uncached too. */
export const UNBILLED_COST = { costUsd: 0, noCacheCostUsd: 0 } as const;

/**
 * True when the failed attempt was provably not billed ({@link unbilledExchange}): the adapter failed with a
 * ProviderError and the response had an HTTP error status (an error event inside a 200 stream does not count, even
 * when the SDK gives it a status), or no response arrived and the adapter reports an HTTP status itself, or the
 * connection failed (PROVIDER_STREAM) without cachet aborting it.
 * @param error the attempt's own failure (not a later interruption)
 * @param responseStatus HTTP status of the response the attempt got ({@link responseSince}), undefined when none came
 * @param aborted whether cachet aborted the attempt (a signal): the provider may have been working on it
 */
export function unbilledFailure(error: unknown, partial: ConsumeResult, responseStatus: number | undefined, aborted: boolean): boolean {
  if (!(error instanceof ProviderError)) return false;
  return unbilledExchange({
    answered: partial.content.length > 0 || partial.partialUsage !== undefined || partial.finish !== undefined,
    status: responseStatus ?? error.status,
    connectionFailed: error.code === "PROVIDER_STREAM",
    aborted,
  });
}
