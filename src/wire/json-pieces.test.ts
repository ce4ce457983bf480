import { expect, test } from "bun:test";
import { canonicalJson } from "./canonical-json.ts";
import { hashJson, hashText } from "./hash.ts";
import { hasLongString, jsonByteLength, jsonPieces, SLICE_CHARS } from "./json-pieces.ts";
import { serializeBody } from "./request-body.ts";

// Slices of 8 code units, so short test strings take the sliced path; each has a surrogate pair, escapes or a lone surrogate at a cut.
const LONG = ["ab😀cdefg😀h", 'quote " back \\ tab \t nl \n ctl \u0001 end', "lone \ud800 high, lone \udc00 low, pair 😀 at 7:123456😀", "x".repeat(40)];
const bodies: Record<string, unknown>[] = [
  { model: "m", messages: [{ role: "user", content: [{ type: "text", text: LONG[0] }] }], stream: true, z: undefined, a: 1.5 },
  { b: LONG[1], a: [LONG[2], undefined, null, { y: LONG[3], x: [true, false] }], n: -0, e: 1e21 },
  { short: "tiny", nested: { deep: [1, 2, { d: "é" }] } },
];

test("the pieces join to exactly JSON.stringify and canonicalJson of the value, slices never splitting a surrogate pair", () => {
  for (const body of bodies) {
    expect([...jsonPieces(body, { sliceChars: 8 })].join("")).toBe(JSON.stringify(body));
    expect([...jsonPieces(body, { sliceChars: 8, canonical: true })].join("")).toBe(canonicalJson(body));
  }
  const pieces = [...jsonPieces({ t: LONG[0] }, { sliceChars: 8 })];
  expect(pieces.length).toBeGreaterThan(3);
  expect(pieces.some((p) => /\\ud8|\\ude/.test(p))).toBe(false);
});

test("jsonByteLength is the UTF-8 length of JSON.stringify, without writing it", () => {
  for (const body of [...bodies, { s: "\u007f\u0080\u07ff\u0800\uffff\ud83d\ude00\udc00\ud800", t: "\b\f\n\r\t\u0000\u001f\"\\x" }]) {
    expect(jsonByteLength(body, 8)).toBe(Buffer.byteLength(JSON.stringify(body), "utf8"));
  }
});

test("a value without a long string is one piece", () => {
  expect([...jsonPieces(bodies[2])]).toEqual([JSON.stringify(bodies[2])]);
  expect(hasLongString(bodies[2], 8)).toBe(false);
  expect(hasLongString(bodies[0], 8)).toBe(true);
});

test("hashJson: an ordinary value hashes its canonical JSON; a huge one hashes the same for the same value and differs on one changed character", () => {
  expect(hashJson(bodies[2])).toBe(hashText(canonicalJson(bodies[2])));
  const text = "word ".repeat(SLICE_CHARS / 2);
  const a = hashJson({ type: "text", text });
  expect(hashJson({ text, type: "text" })).toBe(a);
  expect(hashJson({ type: "text", text: `${text.slice(0, -1)}!` })).not.toBe(a);
  expect(a).toMatch(/^[0-9a-f]{16}$/);
});

test("serializeBody: an ordinary body is its JSON text; one with a huge string streams the same bytes with their length announced", async () => {
  expect(serializeBody(bodies[0]!)).toEqual({ body: JSON.stringify(bodies[0]), headers: { "content-type": "application/json" } });
  const huge = { model: "m", messages: [{ role: "user", content: [{ type: "text", text: `déjà 😀 "q" ${"lorem ipsum ".repeat(SLICE_CHARS / 6)}` }] }] };
  const serialized = serializeBody(huge);
  expect(serialized.body).toBeInstanceOf(ReadableStream);
  const bytes = new Uint8Array(await new Response(serialized.body).arrayBuffer());
  const expected = new TextEncoder().encode(JSON.stringify(huge));
  expect(serialized.headers["content-length"]).toBe(String(expected.byteLength));
  expect(bytes.byteLength).toBe(expected.byteLength);
  expect(Buffer.compare(bytes, expected)).toBe(0);
});

test("serializeBody: a huge string newly appearing anywhere in a conversation's next request is streamed; the same request without it is JSON text", () => {
  const messages = Array.from({ length: 50 }, (_, i) => ({ role: "user", content: [{ type: "text", text: `message ${i}` }] }));
  const huge = { role: "user", content: [{ type: "text", text: "x".repeat(SLICE_CHARS) }] };
  const text = (list: unknown[]) => typeof serializeBody({ model: "m", messages: list }).body === "string";
  expect(text(messages.slice())).toBe(true);
  expect(text(messages.map((m, i) => (i === 25 ? huge : m)))).toBe(false);
  expect(text(messages.slice())).toBe(true);
  expect(text([...messages, huge])).toBe(false);
  expect(text([...messages, { role: "assistant", content: [] }])).toBe(true);
});

test("serializeBody is JSON.stringify byte for byte over growing, edited, marked and shortened bodies of two conversations in turn", () => {
  let random = 3;
  const next = () => (random = (random * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const values: unknown[] = ["plain", 'quote " back \\ nl \n ctl \u0001', "émoji 😀 \ud800", 0, -0, 1.5e300, -7, true, null, undefined, [1, undefined, [2]], { nested: { deep: ["x", null] }, gone: undefined }];
  const pick = () => values[Math.floor(next() * values.length)];
  const element = (i: number) => ({ role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: `message ${i}`, extra: pick() }] });
  const conversations = [[element(0)], [element(1)]] as unknown[][];
  let compared = 0;
  for (let step = 0; step < 400; step++) {
    const list = conversations[step % 2]!;
    const r = next();
    if (r < 0.6) list.push(next() < 0.1 ? pick() : element(step));
    else if (r < 0.7 && list.length > 1) list.length = 1 + Math.floor(next() * (list.length - 1));
    else list[Math.floor(next() * list.length)] = { ...element(step), cache_control: { type: "ephemeral" } };
    const body: Record<string, unknown> = { model: "m", "key \"quoted\"": pick(), messages: list.slice(), tools: next() < 0.5 ? [] : [{ name: "t" }], stream: next() < 0.5, gone: undefined, fn: () => 1 };
    if (next() < 0.3) body.messages = [...list, undefined, () => 1];
    const serialized = serializeBody(body);
    expect({ step, body: serialized.body }).toEqual({ step, body: JSON.stringify(body) });
    compared++;
  }
  expect(compared).toBe(400);
});
