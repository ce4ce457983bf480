/**
 * The `data` of each server-sent event in a response body, as the
 * EventSource rules read it: lines end at CRLF, LF or CR (a CRLF may be split
 * between two network reads, as may a UTF-8 character); `data:` lines are
 * joined with LF; comment lines (`: keep-alive`) and other fields are
 * ignored; a blank line ends an event; an event still open when the body
 * ends is dropped (the caller notices what it lacks). Each read is scanned
 * once, so an event of many megabytes (an image) costs time in its size.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const lineEnd = /\r\n|\r|\n/g;
  /** The current line's text from earlier reads. */
  let pieces: string[] = [];
  let data: string[] = [];
  /** The last read ended with a CR: an LF first in the next one ends no second line. */
  let skipLf = false;
  for await (const bytes of body) {
    const text = decoder.decode(bytes, { stream: true });
    if (text === "") continue;
    let start = skipLf && text.charCodeAt(0) === 10 ? 1 : 0;
    skipLf = false;
    lineEnd.lastIndex = start;
    for (let match = lineEnd.exec(text); match; match = lineEnd.exec(text)) {
      pieces.push(text.slice(start, match.index));
      const line = pieces.length === 1 ? pieces[0]! : pieces.join("");
      pieces = [];
      start = match.index + match[0].length;
      if (match[0] === "\r" && start === text.length) skipLf = true;
      if (line === "") {
        if (data.length > 0) yield data.join("\n");
        data = [];
      } else if (line.startsWith("data:")) {
        data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
      } else if (line === "data") {
        data.push("");
      }
    }
    if (start < text.length) pieces.push(text.slice(start));
  }
}
