import { expect, test } from "bun:test";
import { byteReads, collect, streamResponse } from "../../test/fixtures/wire/replay.ts";
import { sseData } from "./sse.ts";

function events(reads: Uint8Array[]): Promise<string[]> {
  return collect(sseData(streamResponse(reads).body!));
}

test("sseData: CRLF, LF and CR line ends, a CRLF and a UTF-8 character split between reads", async () => {
  const text = 'data: {"a":"é"}\r\n\r\ndata: {"b":2}\n\ndata: {"c":3}\r\rdata:{"d":4}\r\n\r\n';
  const bytes = new TextEncoder().encode(text);
  const cuts = [bytes.indexOf(0xc3) + 1, bytes.indexOf(13) + 1];
  const expected = ['{"a":"é"}', '{"b":2}', '{"c":3}', '{"d":4}'];
  expect(await events(byteReads(text, { at: cuts }))).toEqual(expected);
  // Every cut at once: one byte per read.
  expect(await events(byteReads(text, { every: 1 }))).toEqual(expected);
});

test("sseData: comments and other fields are skipped, data lines of one event are joined with LF, an event cut by the end is dropped", async () => {
  const text = ": keep-alive\n\nevent: chunk\nid: 7\ndata: first\ndata\ndata: third\n\n: backend error, retrying\n\ndata: cut";
  expect(await events(byteReads(text, { every: 5 }))).toEqual(["first\n\nthird"]);
});
