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
 * True when the failed attempt was provably not billed: nothing of an answer
 * arrived (no content, usage or finish), the adapter failed with a
 * ProviderError, and either the response had an HTTP error status (an error
 * event inside a 200 stream does not count, even when the SDK gives it a
 * status), or no response arrived: the connection failed (PROVIDER_STREAM)
 * without cachet aborting it, or the adapter reports an HTTP status itself.
 * @param error the attempt's own failure (not a later interruption)
 * @param responseStatus HTTP status of the response the attempt got ({@link responseSince}), undefined when none came
 * @param aborted whether cachet aborted the attempt (a signal): the provider may have been working on it
 */
export function unbilledFailure(error: unknown, partial: ConsumeResult, responseStatus: number | undefined, aborted: boolean): boolean {
  if (partial.content.length > 0 || partial.partialUsage !== undefined || partial.finish !== undefined) return false;
  if (!(error instanceof ProviderError)) return false;
  if (responseStatus !== undefined) return responseStatus >= 400;
  return error.status !== undefined || (!aborted && error.code === "PROVIDER_STREAM");
}
