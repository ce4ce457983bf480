import { expect, test } from "bun:test";
import { pluginServices } from "../../src/plugin/services.ts";
import type { ProviderConfig, RequestContext } from "../../src/plugin/index.ts";
import { collect, fixture, jsonResponse, replayFetch } from "../../test/fixtures/wire/replay.ts";
import { openaiClient } from "./client.ts";
import { continueResponses, isPreviousResponseLost, renderResponses, sendResponses } from "./responses.ts";
import { responsesUsage } from "./usage.ts";

const ctx: RequestContext = {
  model: "gpt-5",
  provider: "openai-responses",
  prefix: { system: [{ id: "sys", text: "Be brief." }], tools: [{ name: "t", parameters: { type: "object" } }], fingerprint: "0000000000000000" },
  summary: [],
  messages: [
    { id: "u1", role: "user", content: [{ type: "text", text: "Hi" }] },
    { id: "a1", role: "assistant", content: [{ type: "text", text: "Calling." }, { type: "tool_use", id: "c1", name: "t", arguments: '{"z":1,"a":2}' }] },
    { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "c1", content: "done" }] },
  ],
  overlay: "step 3 of 5",
  generation: { maxTokens: 50, stream: false, providerOptions: { store: false } },
  cache: { mode: "auto", ttl: "5m" },
};

test("responses render: system input items, function_call with raw arguments, function_call_output, overlay as its own user item, strict explicit", () => {
  const wire = renderResponses(ctx, pluginServices);
  expect(wire.body).toEqual({
    model: "gpt-5",
    input: [
      { type: "message", role: "system", content: [{ type: "input_text", text: "Be brief." }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] },
      { type: "message", role: "assistant", content: "Calling." },
      { type: "function_call", call_id: "c1", name: "t", arguments: '{"z":1,"a":2}' },
      { type: "function_call_output", call_id: "c1", output: "done" },
      { type: "message", role: "user", content: [{ type: "input_text", text: "step 3 of 5" }] },
    ],
    tools: [{ type: "function", name: "t", parameters: { type: "object" }, strict: false }],
    max_output_tokens: 50,
    stream: false,
    store: false,
  });
  expect(wire.segments.at(-1)).toEqual({ nodeId: "overlay", kind: "overlay", path: ["input", 5, "content", 0] });
});

test("responses non-streaming: the rendered body as sent; text, tool call and usage from the response object", async () => {
  const { fetch, requests } = replayFetch([jsonResponse(fixture("openai-response.json"))]);
  const config: ProviderConfig = { providerId: "openai-responses", apiKey: "k-123456", baseUrl: "http://127.0.0.1:1/openai/v1", fetch, options: {} };
  const wire = renderResponses(ctx, pluginServices);
  const events = await collect(sendResponses(openaiClient(config), wire, { signal: new AbortController().signal }, pluginServices, config));
  expect(requests[0]!.url).toBe("http://127.0.0.1:1/openai/v1/responses");
  // The rendered body, serialized once, exactly.
  expect(requests[0]!.body).toBe(JSON.stringify(wire.body));
  expect(requests[0]!.headers.get("authorization")).toBe("Bearer k-123456");
  expect(events.slice(0, 2)).toEqual([
    { type: "text", delta: "Hello café" },
    { type: "tool_call", id: "call_12345xyz", name: "get_weather", arguments: '{"unit": "celsius","city":"Tokyo"}' },
  ]);
  const finish = events[2]!;
  if (finish.type !== "finish") throw new Error("no finish");
  expect(finish).toMatchObject({ reason: "tool_calls", requestId: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b" });
  expect(responsesUsage(finish.rawUsage).usage).toMatchObject({ input: 4262, cacheRead: 4864, output: 3197, reasoning: 1024 });
});

test("responses non-streaming: a message whose content is a refusal part is the answer's text, finished as a refusal", async () => {
  const response = { id: "resp_1", status: "completed", output: [{ type: "message", role: "assistant", content: [{ type: "refusal", refusal: "I can't help with that." }] }], usage: { input_tokens: 3, output_tokens: 6 } };
  const { fetch } = replayFetch([jsonResponse(JSON.stringify(response))]);
  const config: ProviderConfig = { providerId: "openai-responses", apiKey: "k-123456", baseUrl: "http://127.0.0.1:1/openai/v1", fetch, options: {} };
  const events = await collect(sendResponses(openaiClient(config), renderResponses(ctx, pluginServices), { signal: new AbortController().signal }, pluginServices, config));
  expect(events[0]).toEqual({ type: "text", delta: "I can't help with that." });
  expect(events[1]).toMatchObject({ type: "finish", reason: "refusal", rawReason: "refusal" });
});

test("incremental form: previous_response_id and only the items after the stored conversation; refused when nothing is stored", () => {
  const context: RequestContext = {
    model: "gpt-4.1",
    provider: "openai-responses",
    prefix: { system: [{ id: "sys", text: "Be terse." }], tools: [], fingerprint: "f" },
    summary: [],
    messages: [
      { id: "u1", role: "user", content: [{ type: "text", text: "Hi" }] },
      { id: "a1", role: "assistant", content: [{ type: "text", text: "Hello" }, { type: "tool_use", id: "c1", name: "read", arguments: "{}" }] },
      { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "c1", content: "ok" }, { type: "text", text: "And?" }] },
    ],
    overlay: "now",
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
  const wire = renderResponses(context, pluginServices);
  // Stored: system, u1 (the previous request) and a1's two items (its answer): 4 segments, input items 0..3.
  const sent = continueResponses(wire, { requestId: "resp_1", sharedSegments: 4 })!;
  expect(sent.body.previous_response_id).toBe("resp_1");
  expect(sent.body.input).toEqual([
    { type: "function_call_output", call_id: "c1", output: "ok" },
    { type: "message", role: "user", content: [{ type: "input_text", text: "And?" }, { type: "input_text", text: "now" }] },
  ]);
  const { input: _sentInput, previous_response_id: _id, ...sentRest } = sent.body;
  const { input: _input, ...wholeRest } = wire.body;
  expect(sentRest).toEqual(wholeRest);
  expect(sent.segments).toBe(wire.segments);
  expect(continueResponses({ ...wire, body: { ...wire.body, store: false } }, { requestId: "resp_1", sharedSegments: 4 })).toBeUndefined();
  // A new segment inside a stored item (the overlay added to the last stored message) cannot be sent as new input.
  expect(continueResponses(wire, { requestId: "resp_1", sharedSegments: wire.segments.length - 1 })).toBeUndefined();
});

test("the API's refusal of an unknown previous response is recognised, other 400s are not", () => {
  const notFound = Object.assign(new Error("400 Previous response with id 'resp_1' not found."), { status: 400, code: "previous_response_not_found" });
  expect(isPreviousResponseLost(new pluginServices.ProviderError("PROVIDER_HTTP", "openai-responses: HTTP 400: Previous response with id 'resp_1' not found.", { status: 400, cause: notFound }))).toBe(true);
  expect(isPreviousResponseLost(Object.assign(new Error("400 Invalid 'input'"), { status: 400, code: "invalid_value" }))).toBe(false);
});
