/**
 * Writes a rendered stream (or a JSON body) to the wire, applying a fault.
 * Every long wait is bounded (10 minutes) and ends when the client goes away.
 */
import type { FaultName } from "./faults.ts";
import type { ProtocolHandler, StreamPlan } from "./protocols/protocol.ts";

const LONG_WAIT_MS = 10 * 60_000;
const CHATTER_INTERVAL_MS = 250;
/** How long `thinking-pings` keeps a thinking block open with only pings. */
const HIDDEN_THINKING_MS = 2_000;
const encoder = new TextEncoder();

/** Response headers of an SSE stream. */
export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" };

/** A ReadableStream body for `plan`, with `fault` applied (undefined: all events at once). */
export function streamBody(plan: StreamPlan, protocol: ProtocolHandler, fault: FaultName | undefined): ReadableStream<Uint8Array> | string {
  const { events, contentStart, contentEnd } = plan;
  if (fault === undefined) return events.join("");
  if (fault === "error-before") return [...events.slice(0, contentStart), protocol.streamError("Overloaded")].join("");
  if (fault === "error-after") return [...events.slice(0, contentEnd), protocol.streamError("Overloaded")].join("");
  // Cut and stall stop after the first half of the content, so text (not just a block start) has arrived.
  const middle = Math.max(contentStart + 1, Math.floor((contentStart + contentEnd) / 2));
  let cancelled = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      try {
        if (fault === "split-utf8") {
          for (const event of events) {
            const bytes = encoder.encode(event);
            const at = splitPoint(bytes);
            controller.enqueue(bytes.subarray(0, at));
            await wait(2);
            if (cancelled) return;
            controller.enqueue(bytes.subarray(at));
            await wait(1);
            if (cancelled) return;
          }
          controller.close();
        } else if (fault === "cut") {
          send(events.slice(0, middle).join(""));
          const next = events[middle] ?? "";
          send(next.slice(0, Math.floor(next.length / 2)));
          // The body ends here, inside an event: the client gets every byte sent so far, then the end. Resetting
          // the connection instead makes the client's kernel drop bytes it has not read yet, so under load a
          // client sometimes saw no content at all and retried (the fault tests depended on timing).
          controller.close();
        } else if (fault === "stall") {
          send(events.slice(0, middle).join(""));
          await wait(LONG_WAIT_MS);
          if (!cancelled) controller.close();
        } else if (fault === "chatter") {
          send(events.slice(0, contentStart).join(""));
          const until = Date.now() + LONG_WAIT_MS;
          for (let i = 0; !cancelled && Date.now() < until; i++) {
            send(protocol.chatter[i % protocol.chatter.length]!);
            await wait(CHATTER_INTERVAL_MS);
          }
          if (!cancelled) controller.close();
        } else if (fault === "thinking-pings") {
          send(events.slice(0, contentStart + 1).join(""));
          for (let waited = 0; !cancelled && waited < HIDDEN_THINKING_MS; waited += CHATTER_INTERVAL_MS) {
            await wait(CHATTER_INTERVAL_MS);
            if (!cancelled) send(protocol.ping);
          }
          if (cancelled) return;
          send(events.slice(contentStart + 1).join(""));
          controller.close();
        } else {
          send(events.join(""));
          controller.close();
        }
      } catch {
        // The client went away while we wrote: nothing to do.
      }
    },
    cancel() {
      cancelled = true;
      clearTimeout(timer);
    },
  });
}

/** A JSON body with a fault applied (`cut`, `stall`, `chatter`, `split-utf8`). */
export function jsonBody(json: string, fault: FaultName | undefined): ReadableStream<Uint8Array> | string {
  if (fault === "cut" || fault === "split-utf8") {
    const events = fault === "cut" ? [json.slice(0, json.length >> 1), json.slice(json.length >> 1)] : [json];
    return streamBody({ events, contentStart: 0, contentEnd: events.length }, NO_CHATTER, fault);
  }
  if (fault === "stall" || fault === "chatter" || fault === "thinking-pings") {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return new ReadableStream<Uint8Array>({
      start(controller) {
        timer = setTimeout(() => {
          controller.enqueue(encoder.encode(json));
          controller.close();
        }, fault === "thinking-pings" ? HIDDEN_THINKING_MS : LONG_WAIT_MS);
      },
      cancel() {
        clearTimeout(timer);
      },
    });
  }
  return json;
}

const NO_CHATTER = { chatter: [] } as unknown as ProtocolHandler;

/** Byte offset inside the first multi-byte UTF-8 character, else the middle. */
function splitPoint(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! >= 0xc0) return i + 1;
  return Math.max(1, Math.floor(bytes.length / 2));
}
