import { expect, test } from "bun:test";
import { pluginServices } from "../../src/plugin/services.ts";
import type { ProviderConfig, RequestContext } from "../../src/plugin/index.ts";
import { byteReads, collect, fixture, jsonResponse, replayFetch, streamResponse } from "../../test/fixtures/wire/replay.ts";
import { renderGemini } from "./render.ts";
import { geminiClient, sendGemini } from "./send.ts";
import { geminiUsage } from "./usage.ts";

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

function send(fetch: typeof globalThis.fetch, stream: boolean) {
  const config: ProviderConfig = { providerId: "google", apiKey: "AIza-KEY-123456", baseUrl: "http://127.0.0.1:1/google", fetch, options: {} };
  return collect(sendGemini(geminiClient(config), renderGemini(context(stream), pluginServices), { signal: new AbortController().signal }, pluginServices, config));
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

test("gemini streaming through the SDK: endpoint from model, body without model/stream, last usageMetadata wins, split mid-character", async () => {
  const sse = fixture("gemini-stream.sse");
  const split = new TextEncoder().encode(sse).indexOf(0xc3) + 1;
  const { fetch, requests } = replayFetch([streamResponse(byteReads(sse, { at: [split], every: 64 }))]);
  const events = await send(fetch, true);
  expect(requests[0]!.url).toBe("http://127.0.0.1:1/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  const sent = JSON.parse(requests[0]!.body);
  expect(sent.model).toBeUndefined();
  expect(sent.stream).toBeUndefined();
  expect(sent.contents).toEqual(renderGemini(context(true), pluginServices).body.contents);
  expect(sent.generationConfig).toMatchObject({ maxOutputTokens: 64, thinkingConfig: { thinkingBudget: 0 } });
  expect(events.map((e) => (e.type === "text" ? e.delta : "")).join("")).toBe("Hello café");
  expect(events.filter((e) => e.type === "thinking")).toEqual([{ type: "thinking", delta: "", signature: "CiQB0e2Kb3dRh" }]);
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
