/**
 * What the emulator saw: the last requests (wire bodies, headers minus
 * secrets, usage returned) and counters. Served over HTTP under `/_emulator/`.
 */
import type { ReceivedRequest } from "./types.ts";

/** Requests kept in memory; older ones are dropped first. */
export const REQUEST_LOG_LIMIT = 1_000;

const SECRET_HEADERS = new Set(["authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "proxy-authorization"]);

/** Request headers without credentials. */
export function publicHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (!SECRET_HEADERS.has(name)) out[name] = value;
  });
  return out;
}

/** The request log and counters of one emulator. */
export class Inspection {
  private log: ReceivedRequest[] = [];
  private readonly counts = new Map<string, number>();

  /** Appends a request (the same object is updated when the response is known). */
  record(request: ReceivedRequest): void {
    this.log.push(request);
    if (this.log.length > REQUEST_LOG_LIMIT * 2) this.log = this.log.slice(-REQUEST_LOG_LIMIT);
  }

  /** Adds `by` to counter `name`. */
  count(name: string, by = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + by);
  }

  /** The last {@link REQUEST_LOG_LIMIT} requests, newest last. */
  requests(): ReceivedRequest[] {
    return this.log.slice(-REQUEST_LOG_LIMIT);
  }

  /** Every counter by name: `requests`, `requests.<provider>`, `status.<code>`, `faults.<name>`, `tokens.<kind>`, `cache.hits`. */
  counters(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  /** Forgets requests and counters. */
  reset(): void {
    this.log = [];
    this.counts.clear();
  }
}
