import { expect, test } from "bun:test";
import { pluginServices } from "../../src/plugin/services.ts";
import type { ProviderConfig, RequestContext } from "../../src/plugin/index.ts";
import { byteReads, collect, fixture, jsonResponse, replayFetch, streamResponse } from "../../test/fixtures/wire/replay.ts";
import { renderGemini } from "./render.ts";
import { sendGemini } from "./send.ts";
import { geminiUsage } from "./usage.ts";
import { consume } from "../../src/run/consume.ts";
import type { Message } from "../../src/plugin/index.ts";

function context(stream: boolean): RequestContext {
  return {
    model: "gemini-2.5-flash",
    provider: "google",
    prefix: { system: [{ id: "sys", text: "Be brief." }], tools: [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }], fingerprint: "0000000000000000" },
    summary: [],
    messages: [
      { id: "u1", role: "user", content: [{ type: "text", text: "Weather?" }] },
      { id: "a1", role: "assistant", content: [{ type: "thinking", text: "", signature: "sig-A" }, { type: "tool_use", id: "c1", name: "get_weather", arguments: '{"city":"Tokyo"}' }] },
      { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "c1", content: "sunny" }] },
    ],
    overlay: "now: morning",
    generation: { maxTokens: 64, temperature: 0.2, stream, providerOptions: { generationConfig: { thinkingConfig: { thinkingBudget: 0 } } } },
    cache: { mode: "auto", ttl: "5m" },
  };
}

function config(fetch: typeof globalThis.fetch): ProviderConfig {
  return { providerId: "google", apiKey: "AIza-KEY-123456", baseUrl: "http://127.0.0.1:1/google", fetch, options: {} };
}

function send(fetch: typeof globalThis.fetch, stream: boolean) {
  return collect(sendGemini(renderGemini(context(stream), pluginServices), { signal: new AbortController().signal }, pluginServices, config(fetch)));
}

test("gemini render: systemInstruction parts, functionDeclarations, model/user roles, signature on the call part, functionResponse by name, overlay part", () => {
  const wire = renderGemini(context(true), pluginServices);
  expect(wire.body.systemInstruction).toEqual({ parts: [{ text: "Be brief." }] });
  expect(wire.body.tools).toEqual([{ functionDeclarations: [{ name: "get_weather", parametersJsonSchema: { properties: { city: { type: "string" } }, type: "object" } }] }]);
  expect(wire.body.contents).toEqual([
    { role: "user", parts: [{ text: "Weather?" }] },
    { role: "model", parts: [{ functionCall: { id: "c1", name: "get_weather", args: { city: "Tokyo" } }, thoughtSignature: "sig-A" }] },
    { role: "user", parts: [{ functionResponse: { id: "c1", name: "get_weather", response: { output: "sunny" } } }, { text: "now: morning" }] },
  ]);
  // Provider options merge one level deep: the rendered maxOutputTokens stays.
  expect(wire.body.generationConfig).toEqual({ maxOutputTokens: 64, temperature: 0.2, thinkingConfig: { thinkingBudget: 0 } });
});

test("gemini streaming: endpoint from model, the rendered body without model/stream as sent, key header, last usageMetadata wins, split mid-character", async () => {
  const sse = fixture("gemini-stream.sse");
  const split = new TextEncoder().encode(sse).indexOf(0xc3) + 1;
  const { fetch, requests } = replayFetch([streamResponse(byteReads(sse, { at: [split], every: 64 }))]);
  const events = await send(fetch, true);
  expect(requests[0]!.url).toBe("http://127.0.0.1:1/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  expect(requests[0]!.method).toBe("POST");
  expect(requests[0]!.headers.get("x-goog-api-key")).toBe("AIza-KEY-123456");
  expect(requests[0]!.headers.get("content-type")).toBe("application/json");
  const { model, stream, ...rendered } = renderGemini(context(true), pluginServices).body;
  expect([model, stream]).toEqual(["gemini-2.5-flash", true]);
  expect(requests[0]!.body).toBe(JSON.stringify(rendered));
  expect(JSON.parse(requests[0]!.body).generationConfig).toEqual({ maxOutputTokens: 64, temperature: 0.2, thinkingConfig: { thinkingBudget: 0 } });
  expect(events.map((e) => (e.type === "text" ? e.delta : "")).join("")).toBe("Hello café");
  expect(events.filter((e) => e.type === "thinking")).toEqual([]);
  expect(events.find((e) => e.type === "tool_call")).toMatchObject({ name: "get_weather", signature: "CiQB0e2Kb3dRh" });
  const finish = events.at(-1)!;
  if (finish.type !== "finish") throw new Error("no finish");
  expect(finish.reason).toBe("tool_calls");
  expect(geminiUsage(finish.rawUsage).usage).toMatchObject({ input: 30, cacheRead: 20, output: 10, reasoning: 3 });
});

test("gemini non-streaming: thoughts count as output (case 6 shape) and generated call ids are stable", async () => {
  const { fetch, requests } = replayFetch([jsonResponse(fixture("gemini-response.json"))]);
  const events = await send(fetch, false);
  expect(requests[0]!.url).toBe("http://127.0.0.1:1/google/v1beta/models/gemini-2.5-flash:generateContent");
  expect(events.slice(0, 2)).toEqual([
    { type: "text", delta: "Hello café" },
    { type: "tool_call", id: "call_resp-gemini-1_0", name: "get_weather", arguments: '{"unit":"celsius","city":"Tokyo"}' },
  ]);
  const finish = events[2]!;
  if (finish.type !== "finish") throw new Error("no finish");
  expect(geminiUsage(finish.rawUsage).usage).toMatchObject({ input: 8, output: 930 });
});

test("gemini 429: retryDelay in the error body becomes retryAfterMs", async () => {
  const body = { error: { code: 429, message: "Resource exhausted", status: "RESOURCE_EXHAUSTED", details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }] } };
  const error = await send(replayFetch([jsonResponse(body, { status: 429 })]).fetch, true).catch((e: unknown) => e);
  expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 429, retryable: true, retryAfterMs: 7000 });
});

test("gemini image output: an inlineData part is an image event; a stored image renders back as inlineData; a server tool is refused", async () => {
  const data = "iVBORw0KGgo=";
  const response = { responseId: "r-img", candidates: [{ content: { role: "model", parts: [{ text: "A cat." }, { inlineData: { mimeType: "image/png", data } }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1293, candidatesTokensDetails: [{ modality: "TEXT", tokenCount: 3 }, { modality: "IMAGE", tokenCount: 1290 }] } };
  const events = await send(replayFetch([jsonResponse(response)]).fetch, false);
  expect(events.slice(0, 2)).toEqual([
    { type: "text", delta: "A cat." },
    { type: "image", mediaType: "image/png", data },
  ]);
  const ctx = context(false);
  ctx.prefix.tools = [];
  ctx.messages = [
    { id: "u1", role: "user", content: [{ type: "text", text: "draw" }] },
    { id: "a1", role: "assistant", content: [{ type: "text", text: "A cat." }, { type: "image", mediaType: "image/png", data }] },
    { id: "u2", role: "user", content: [{ type: "text", text: "again" }] },
  ];
  expect((renderGemini(ctx, pluginServices).body.contents as unknown[])[1]).toEqual({ role: "model", parts: [{ text: "A cat." }, { inlineData: { mimeType: "image/png", data } }] });
  ctx.prefix.tools = [{ name: "web_search", parameters: { type: "object", properties: {} }, server: { type: "web_search_20250305", name: "web_search" } }];
  expect(() => renderGemini(ctx, pluginServices)).toThrow('tool "web_search" is a server tool (type "web_search_20250305") that provider "google" does not run');
});

test("gemini stream error object: a PROVIDER_STREAM error named by its status, retryable for 503; keep-alive comments are skipped", async () => {
  const sse = `: keep-alive\r\n\r\ndata: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}]}\r\n\r\ndata: {"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}\r\n\r\n`;
  const reads = byteReads(sse, { every: 7 });
  const events: unknown[] = [];
  const error = await (async () => {
    for await (const event of sendGemini(renderGemini(context(true), pluginServices), { signal: new AbortController().signal }, pluginServices, config(replayFetch([streamResponse(reads)]).fetch))) events.push(event);
  })().catch((e: unknown) => e);
  expect(events).toEqual([{ type: "text", delta: "Hi" }]);
  expect(error).toMatchObject({ code: "PROVIDER_STREAM", status: 503, retryable: true, message: "google: error event in stream: UNAVAILABLE (503): Overloaded" });
});

test("gemini HTTP error with a text body: PROVIDER_HTTP with the text, the key never in the message", async () => {
  const answer = new Response("upstream said no to AIza-KEY-123456", { status: 502, statusText: "Bad Gateway", headers: { "content-type": "text/plain", "retry-after": "3" } });
  const error = await send(replayFetch([answer]).fetch, false).catch((e: unknown) => e);
  expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 502, retryable: true, retryAfterMs: 3000, message: "google: HTTP 502: Bad Gateway: upstream said no to [redacted]" });
});

test("gemini stream without a finishReason: a retryable PROVIDER_STREAM error; an event cut by the end of the body is dropped", async () => {
  const sse = 'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}]}\n\ndata: {"candidates":[{"content":{"parts":[{"text":" there"}]},"finishReason":"ST';
  const error = await send(replayFetch([streamResponse(byteReads(sse, { every: 16 }))]).fetch, true).catch((e: unknown) => e);
  expect(error).toMatchObject({ code: "PROVIDER_STREAM", retryable: true, message: "google: stream ended before a finishReason" });
});

test("gemini body with a huge string: sent as a byte stream with its length announced, the same JSON as the rendered body", async () => {
  const ctx = context(false);
  const big = "é".repeat(1 << 20) + "x";
  ctx.messages = [{ id: "u1", role: "user", content: [{ type: "text", text: big }] }];
  ctx.prefix.tools = [];
  const wire = renderGemini(ctx, pluginServices);
  let sent: { body: string; length: string | null; streamed: boolean } | undefined;
  const fetch = (async (_input: Parameters<typeof globalThis.fetch>[0], init?: Parameters<typeof globalThis.fetch>[1]) => {
    const bytes = new Uint8Array(await new Response(init!.body).arrayBuffer());
    sent = { body: new TextDecoder().decode(bytes), length: new Headers(init!.headers).get("content-length"), streamed: init!.body instanceof ReadableStream };
    expect(Number(sent.length)).toBe(bytes.length);
    return jsonResponse(fixture("gemini-response.json"));
  }) as typeof globalThis.fetch;
  const events = await collect(sendGemini(wire, { signal: new AbortController().signal }, pluginServices, config(fetch)));
  expect(events.at(-1)).toMatchObject({ type: "finish" });
  const { model: _model, stream: _stream, ...rendered } = wire.body;
  expect(sent!.streamed).toBe(true);
  expect(sent!.body).toBe(JSON.stringify(rendered));
});

/** A Gemini 3 step with visible thoughts and two parallel calls: only the first call is signed (thought-signatures docs). */
const SIGNED_STEP = [
  { text: "hmm", thought: true },
  { functionCall: { name: "get_weather", args: { city: "Tokyo" } }, thoughtSignature: "sig-step-1" },
  { functionCall: { name: "get_weather", args: { city: "Osaka" } } },
];

function withLog(messages: Message[], stream = false): RequestContext {
  const ctx = context(stream);
  ctx.model = "gemini-3-pro-preview";
  ctx.overlay = undefined;
  ctx.messages = messages;
  return ctx;
}

for (const stream of [true, false]) {
  test(`gemini thoughts + tool calls round trip (${stream ? "streamed" : "non-streamed"}): each signature replayed byte for byte on the part it came on`, async () => {
    const chunk = (parts: unknown[], finishReason?: string) => ({ responseId: "r-3", candidates: [{ content: { role: "model", parts }, ...(finishReason ? { finishReason } : {}) }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 4 } });
    const answer = stream
      ? streamResponse(byteReads(SIGNED_STEP.map((part, i) => `data: ${JSON.stringify(chunk([part], i === SIGNED_STEP.length - 1 ? "STOP" : undefined))}\r\n\r\n`).join(""), { every: 11 }))
      : jsonResponse(chunk(SIGNED_STEP, "STOP"));
    const request = renderGemini(withLog([{ id: "u1", role: "user", content: [{ type: "text", text: "weather?" }] }], stream), pluginServices);
    const { content } = await consume(sendGemini(request, { signal: new AbortController().signal }, pluginServices, config(replayFetch([answer]).fetch)), { idleMs: 0, stream, abort: new AbortController() });
    expect(content).toEqual([
      { type: "thinking", text: "hmm" },
      { type: "tool_use", id: "call_r-3_0", name: "get_weather", arguments: '{"city":"Tokyo"}', signature: "sig-step-1" },
      { type: "tool_use", id: "call_r-3_1", name: "get_weather", arguments: '{"city":"Osaka"}' },
    ]);
    const replay = renderGemini(
      withLog([
        { id: "u1", role: "user", content: [{ type: "text", text: "weather?" }] },
        { id: "a1", role: "assistant", content },
        { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "call_r-3_0", content: "18" }, { type: "tool_result", toolUseId: "call_r-3_1", content: "20" }] },
      ]),
      pluginServices,
    );
    const model = (replay.body.contents as { parts: unknown[] }[])[1]!;
    expect(JSON.stringify(model.parts)).toBe(
      '[{"text":"hmm","thought":true},{"functionCall":{"id":"call_r-3_0","name":"get_weather","args":{"city":"Tokyo"}},"thoughtSignature":"sig-step-1"},{"functionCall":{"id":"call_r-3_1","name":"get_weather","args":{"city":"Osaka"}}}]',
    );
  });
}

test("gemini sequential steps: every step's first call keeps its own signature; a signed thought keeps its own", () => {
  const replay = renderGemini(
    withLog([
      { id: "u1", role: "user", content: [{ type: "text", text: "plan" }] },
      { id: "a1", role: "assistant", content: [{ type: "thinking", text: "first", signature: "sig-thought" }, { type: "tool_use", id: "c1", name: "get_weather", arguments: "{}", signature: "sig-1" }] },
      { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "c1", content: "ok" }] },
      { id: "a2", role: "assistant", content: [{ type: "tool_use", id: "c2", name: "get_weather", arguments: "{}", signature: "sig-2" }] },
      { id: "u3", role: "user", content: [{ type: "tool_result", toolUseId: "c2", content: "ok" }] },
    ]),
    pluginServices,
  );
  const contents = replay.body.contents as { parts: unknown[] }[];
  expect(JSON.stringify(contents[1]!.parts)).toBe('[{"text":"first","thought":true,"thoughtSignature":"sig-thought"},{"functionCall":{"id":"c1","name":"get_weather","args":{}},"thoughtSignature":"sig-1"}]');
  expect(JSON.stringify(contents[3]!.parts)).toBe('[{"functionCall":{"id":"c2","name":"get_weather","args":{}},"thoughtSignature":"sig-2"}]');
});

test("gemini sessions stored before the fix: a signature kept on the thinking block before an unsigned call is replayed on the call, not on the thought", () => {
  const replay = renderGemini(
    withLog([
      { id: "u1", role: "user", content: [{ type: "text", text: "weather?" }] },
      { id: "a1", role: "assistant", content: [{ type: "thinking", text: "hmm", signature: "sig-old" }, { type: "tool_use", id: "c1", name: "get_weather", arguments: '{"city":"Tokyo"}' }, { type: "tool_use", id: "c2", name: "get_weather", arguments: '{"city":"Osaka"}' }] },
      { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "c1", content: "18" }, { type: "tool_result", toolUseId: "c2", content: "20" }] },
    ]),
    pluginServices,
  );
  expect(JSON.stringify((replay.body.contents as { parts: unknown[] }[])[1]!.parts)).toBe(
    '[{"text":"hmm","thought":true},{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Tokyo"}},"thoughtSignature":"sig-old"},{"functionCall":{"id":"c2","name":"get_weather","args":{"city":"Osaka"}}}]',
  );
});

/** Gemini 3's text answer: its last part signed; streamed, the signature alone on a last part with empty (or no) text. */
const TEXT_ANSWER = ["It is ", "18 °C in Tokyo."];
for (const [name, stream, last] of [
  ["streamed, the signature alone on a last part with empty text", true, { text: "", thoughtSignature: "sig-text-1" }],
  ["streamed, the signature alone on a last part with no text", true, { thoughtSignature: "sig-text-1" }],
  ["non-streamed, the signature on the last text part", false, undefined],
] as const) {
  test(`gemini 3 text answer (${name}): the signature is stored on the text block, no empty block, and replayed on that text part next turn`, async () => {
    const chunk = (parts: unknown[], finishReason?: string) => ({ responseId: "r-t", candidates: [{ content: { role: "model", parts }, ...(finishReason ? { finishReason } : {}) }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 6 } });
    const streamed = [...TEXT_ANSWER.map((text) => [{ text }]), [last]];
    const answer = stream
      ? streamResponse(byteReads(streamed.map((parts, i) => `data: ${JSON.stringify(chunk(parts, i === streamed.length - 1 ? "STOP" : undefined))}\r\n\r\n`).join(""), { every: 13 }))
      : jsonResponse(chunk([{ text: TEXT_ANSWER[0] }, { text: TEXT_ANSWER[1], thoughtSignature: "sig-text-1" }], "STOP"));
    const request = renderGemini(withLog([{ id: "u1", role: "user", content: [{ type: "text", text: "weather?" }] }], stream), pluginServices);
    const events = await collect(sendGemini(request, { signal: new AbortController().signal }, pluginServices, config(replayFetch([answer]).fetch)));
    expect(events.filter((e) => e.type === "text")).toEqual(
      stream
        ? [{ type: "text", delta: "It is " }, { type: "text", delta: "18 °C in Tokyo." }, { type: "text", delta: "", signature: "sig-text-1" }]
        : [{ type: "text", delta: "It is " }, { type: "text", delta: "18 °C in Tokyo.", signature: "sig-text-1" }],
    );
    async function* again() {
      yield* events;
    }
    const { content, finish } = await consume(again(), { idleMs: 0, stream, abort: new AbortController() });
    expect(finish?.reason).toBe("stop");
    expect(content).toEqual([{ type: "text", text: "It is 18 °C in Tokyo.", signature: "sig-text-1" }]);
    const replay = renderGemini(
      withLog([
        { id: "u1", role: "user", content: [{ type: "text", text: "weather?" }] },
        { id: "a1", role: "assistant", content },
        { id: "u2", role: "user", content: [{ type: "text", text: "and tomorrow?" }] },
      ]),
      pluginServices,
    );
    expect(JSON.stringify(replay.body.contents)).toBe(
      '[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[{"text":"It is 18 °C in Tokyo.","thoughtSignature":"sig-text-1"}]},{"role":"user","parts":[{"text":"and tomorrow?"}]}]',
    );
  });
}

test("gemini text blocks stored without a signature (older sessions, other providers' answers) render as before: a bare text part", () => {
  const replay = renderGemini(
    withLog([
      { id: "u1", role: "user", content: [{ type: "text", text: "hi" }] },
      { id: "a1", role: "assistant", content: [{ type: "text", text: "Hello." }, { type: "text", text: "Signed.", signature: "sig-x" }] },
      { id: "u2", role: "user", content: [{ type: "text", text: "next" }] },
    ]),
    pluginServices,
  );
  expect(JSON.stringify((replay.body.contents as { parts: unknown[] }[])[1]!.parts)).toBe('[{"text":"Hello."},{"text":"Signed.","thoughtSignature":"sig-x"}]');
});
