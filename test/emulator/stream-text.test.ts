/**
 * A streamed answer carries the same text as the same answer not streamed,
 * byte for byte, on every protocol: the deltas joined keep the scripted text's
 * leading, inner and trailing whitespace (the stored answer must not depend
 * on `--no-stream`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { textPieces } from "../../src/emulator/protocols/protocol.ts";
import { emulator } from "./_helpers.ts";

const TEXTS = ["a  b \n", "  lead and trail  ", "one two three four five six seven\n\n", " \n ", "x"];

let emu: EmulatorHandle;
let script: string;
beforeAll(async () => {
  script = join(mkdtempSync(join(tmpdir(), "cachet-stream-text-")), "script.json");
  emu = await emulator();
});
afterAll(() => emu.stop());

/** The text of a response, streamed (SSE, or Gemini's JSON array) or not. */
async function answer(path: string, body: Record<string, unknown>, text: string, read: (events: any[]) => string): Promise<string> {
  writeFileSync(script, JSON.stringify([{ text }]));
  const response = await fetch(`${emu.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-emulator-script": script }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  const raw = await response.text();
  if (raw.startsWith("[")) return read(JSON.parse(raw));
  if (raw.startsWith("{")) return read([JSON.parse(raw)]);
  const events = raw
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)));
  return read(events);
}

const user = "Say it.";
const PROTOCOLS: { name: string; path: string; body: (stream: boolean) => Record<string, unknown>; read: (events: any[]) => string }[] = [
  {
    name: "anthropic messages",
    path: "/anthropic/v1/messages",
    body: (stream) => ({ model: "claude-sonnet-4-6", max_tokens: 100, stream, messages: [{ role: "user", content: user }] }),
    read: (events) => events.map((e) => (e.type === "content_block_delta" ? e.delta.text : e.type === "message" ? e.content.map((b: any) => b.text).join("") : "")).join(""),
  },
  {
    name: "openai chat",
    path: "/openai/v1/chat/completions",
    body: (stream) => ({ model: "gpt-4o", stream, messages: [{ role: "user", content: user }] }),
    read: (events) => events.map((e) => (e.object === "chat.completion" ? e.choices[0].message.content : (e.choices[0]?.delta?.content ?? ""))).join(""),
  },
  {
    name: "openai responses",
    path: "/openai/v1/responses",
    body: (stream) => ({ model: "gpt-4o", stream, input: user }),
    read: (events) =>
      events
        .map((e) => (e.type === "response.output_text.delta" ? e.delta : e.object === "response" ? e.output.flatMap((o: any) => o.content ?? []).map((c: any) => c.text).join("") : ""))
        .join(""),
  },
  {
    name: "gemini",
    path: "/google/v1beta/models/gemini-2.5-flash:generateContent",
    body: () => ({ contents: [{ role: "user", parts: [{ text: user }] }] }),
    read: (events) => events.map((e) => e.candidates[0].content.parts.map((p: any) => p.text ?? "").join("")).join(""),
  },
];

describe("streamed and non-streamed answers carry the same text", () => {
  test("the deltas of a text joined are the text exactly", () => {
    for (const text of [...TEXTS, ""]) expect({ text, joined: textPieces(text).join("") }).toEqual({ text, joined: text });
    expect(textPieces("a  b \n")).toEqual(["a  b \n"]);
  });

  for (const protocol of PROTOCOLS) {
    test(protocol.name, async () => {
      for (const text of TEXTS) {
        const streamed = await answer(protocol.path.replace(":generateContent", ":streamGenerateContent"), protocol.body(true), text, protocol.read);
        const whole = await answer(protocol.path, protocol.body(false), text, protocol.read);
        expect({ text, streamed, whole }).toEqual({ text, streamed: text, whole: text });
      }
    });
  }
});
