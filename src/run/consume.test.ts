/**
 * How consume() assembles text blocks from text events that carry a
 * provider signature (Gemini 3 `thoughtSignature` on a text part).
 */
import { expect, test } from "bun:test";
import type { StreamEvent } from "../plugin/stream.ts";
import { consume } from "./consume.ts";

const FINISH: StreamEvent = { type: "finish", reason: "stop", rawUsage: undefined };

async function assemble(events: StreamEvent[]) {
  async function* stream() {
    yield* events;
  }
  return (await consume(stream(), { idleMs: 0, abort: new AbortController() })).content;
}

test("a signature-only final event (empty delta) lands on the text block it follows, without a block of its own", async () => {
  const content = await assemble([{ type: "text", delta: "Hello " }, { type: "text", delta: "world." }, { type: "text", delta: "", signature: "sig-1" }, FINISH]);
  expect(content).toEqual([{ type: "text", text: "Hello world.", signature: "sig-1" }]);
});

test("a signature on a text delta stays on that text; text after it starts a new block, so each signature keeps its own part", async () => {
  const content = await assemble([{ type: "text", delta: "One.", signature: "sig-a" }, { type: "text", delta: " Two." }, { type: "text", delta: " Three." }, FINISH]);
  expect(content).toEqual([
    { type: "text", text: "One.", signature: "sig-a" },
    { type: "text", text: " Two. Three." },
  ]);
});

test("a signature-only event after other blocks lands on the answer's last text block", async () => {
  const content = await assemble([
    { type: "thinking", delta: "hmm" },
    { type: "text", delta: "Here it is:" },
    { type: "image", mediaType: "image/png", data: "iVBORw0KGgo=" },
    { type: "text", delta: "", signature: "sig-2" },
    FINISH,
  ]);
  expect(content).toEqual([
    { type: "thinking", text: "hmm" },
    { type: "text", text: "Here it is:", signature: "sig-2" },
    { type: "image", mediaType: "image/png", data: "iVBORw0KGgo=" },
  ]);
});

test("a signature before any text is kept for the next text block; with no text at all it makes no empty block", async () => {
  const early = await assemble([{ type: "thinking", delta: "hmm" }, { type: "text", delta: "", signature: "sig-3" }, { type: "text", delta: "Answer." }, FINISH]);
  expect(early).toEqual([
    { type: "thinking", text: "hmm" },
    { type: "text", text: "Answer.", signature: "sig-3" },
  ]);
  const none = await assemble([{ type: "tool_call", id: "c1", name: "f", arguments: "{}" }, { type: "text", delta: "", signature: "sig-4" }, FINISH]);
  expect(none).toEqual([{ type: "tool_use", id: "c1", name: "f", arguments: "{}" }]);
  expect(await assemble([{ type: "text", delta: "", signature: "sig-5" }, FINISH])).toEqual([]);
});

test("a second signature-only event does not overwrite a signed block: it waits for the next text", async () => {
  const content = await assemble([{ type: "text", delta: "A", signature: "sig-a" }, { type: "text", delta: "", signature: "sig-b" }, { type: "text", delta: "B" }, FINISH]);
  expect(content).toEqual([
    { type: "text", text: "A", signature: "sig-a" },
    { type: "text", text: "B", signature: "sig-b" },
  ]);
});

test("unsigned text assembles as before: deltas join in one block, no signature key", async () => {
  const content = await assemble([{ type: "text", delta: "Hel" }, { type: "text", delta: "" }, { type: "text", delta: "lo" }, FINISH]);
  expect(content).toEqual([{ type: "text", text: "Hello" }]);
  expect(Object.keys(content[0]!)).toEqual(["type", "text"]);
});
