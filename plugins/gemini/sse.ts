import { createParser } from "eventsource-parser";

/**
 * The `data` of each server-sent event in a response body, parsed by
 * eventsource-parser by the EventSource rules: CRLF, LF or CR line ends (one
 * may be split between two reads, as may a UTF-8 character), `data:` lines of
 * one event joined with LF, comments and other fields skipped, and an event
 * still open when the body ends dropped (the caller notices what it lacks).
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const ready: string[] = [];
  const parser = createParser({ onEvent: (event) => ready.push(event.data) });
  for await (const bytes of body) {
    parser.feed(decoder.decode(bytes, { stream: true }));
    yield* ready.splice(0);
  }
}
