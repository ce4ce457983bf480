import { describe, expect, test } from "bun:test";
import { pluginServices } from "../../src/plugin/services.ts";
import type { ProviderConfig, RequestContext, StreamEvent } from "../../src/plugin/index.ts";
import { byteReads, collect, fixture, jsonResponse, replayFetch, streamResponse } from "../../test/fixtures/wire/replay.ts";
import { renderAnthropic } from "./render.ts";
import { anthropicClient, anthropicClients, mergeUsage, sendAnthropic } from "./send.ts";
import { anthropicUsage } from "./usage.ts";

function send(fetch: typeof globalThis.fetch, stream = true): Promise<StreamEvent[]> {
  const config: ProviderConfig = { providerId: "anthropic", apiKey: "sk-ant-KEY-123456", baseUrl: "http://127.0.0.1:1/anthropic", fetch, options: {} };
  const wire = renderAnthropic(context(stream), pluginServices);
  return collect(sendAnthropic(anthropicClient(config), wire, { signal: new AbortController().signal }, pluginServices, config));
}

describe("anthropic send", () => {
  test("case 19: message_delta usage is cumulative and overwrites message_start, never adds", async () => {
    const events = await send(replayFetch([streamResponse(byteReads(fixture("anthropic-stream.sse"), {}))]).fetch);
    const finish = events.at(-1)!;
    expect(finish).toMatchObject({ type: "finish", reason: "tool_calls", rawReason: "tool_use", requestId: "msg_01XFDUDYJgAACzvnptvVoYEL" });
    if (finish.type !== "finish") return;
    expect(finish.rawUsage).toEqual({ input_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 1, output_tokens: 16 });
    expect(anthropicUsage(finish.rawUsage).usage).toMatchObject({ input: 9, cacheRead: 1, output: 16 });
  });

  test("mergeUsage: later non-null fields win, nulls keep the earlier value, nested objects merge", () => {
    const start = { input_tokens: 9, cache_read_input_tokens: 1, cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 0 }, output_tokens: 1 };
    const delta = { input_tokens: null, cache_creation: { ephemeral_1h_input_tokens: 4 }, output_tokens: 16 };
    expect(mergeUsage(start, delta as Record<string, unknown>)).toEqual({
      input_tokens: 9,
      cache_read_input_tokens: 1,
      cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 4 },
      output_tokens: 16,
    });
  });

  test("pings become chatter events, which carry no content", async () => {
    const events = await send(replayFetch([streamResponse(byteReads(fixture("anthropic-stream.sse"), { every: 3 }))]).fetch);
    expect(events.filter((e) => e.type === "chatter")).toEqual([{ type: "chatter", detail: "ping" }]);
  });

  test("case 22: an event split inside a UTF-8 character decodes correctly", async () => {
    const sse = fixture("anthropic-stream.sse");
    const bytes = new TextEncoder().encode(sse);
    const e = bytes.indexOf(0xc3); // first byte of "é"
    const events = await send(replayFetch([streamResponse(byteReads(sse, { at: [e + 1] }))]).fetch);
    expect(events.map((x) => (x.type === "text" ? x.delta : "")).join("")).toBe("Hello café");
  });

  test("an overloaded_error event inside a 200 stream is a retryable ProviderError", async () => {
    const error = await send(replayFetch([streamResponse(byteReads(fixture("anthropic-overloaded.sse"), {}))]).fetch).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PROVIDER_STREAM", retryable: true });
    expect(String((error as Error).message)).toContain("overloaded_error");
  });

  test("a stream cut before message_stop is PROVIDER_STREAM", async () => {
    const sse = fixture("anthropic-stream.sse");
    const cut = sse.slice(0, sse.indexOf("event: message_delta"));
    const error = await send(replayFetch([streamResponse(byteReads(cut, {}))]).fetch).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PROVIDER_STREAM", retryable: true });
  });

  test("a 529 overload with retry-after-ms is retryable with that delay", async () => {
    const body = { type: "error", error: { type: "overloaded_error", message: "Overloaded" } };
    const error = await send(replayFetch([jsonResponse(body, { status: 529, headers: { "retry-after-ms": "1500" } })]).fetch).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 529, retryable: true, retryAfterMs: 1500 });
  });

  test("adapters of one key, base URL and fetch share one SDK client; another key, base URL or fetch gets its own, and its requests say so", async () => {
    const clients = anthropicClients();
    const answer = () => jsonResponse(fixture("anthropic-message.json"));
    const first = replayFetch([answer, answer, answer]);
    const second = replayFetch([answer]);
    const config: ProviderConfig = { providerId: "anthropic", apiKey: "sk-ant-A", baseUrl: "http://127.0.0.1:1/a", fetch: first.fetch, options: {} };
    const configs = [config, { ...config, options: { top_k: 3 } }, { ...config, apiKey: "sk-ant-B" }, { ...config, baseUrl: "http://127.0.0.1:1/b" }, { ...config, fetch: second.fetch }];
    const getters = configs.map(clients);
    expect(getters[1]).toBe(getters[0]!);
    expect(new Set(getters).size).toBe(4);
    const built = await Promise.all(getters.map((get) => get()));
    expect(built[1]).toBe(built[0]!);
    expect(await getters[0]!()).toBe(built[0]!);
    const wire = renderAnthropic(context(false), pluginServices);
    for (const [i, c] of configs.entries()) {
      if (i === 1) continue;
      await collect(sendAnthropic(getters[i]!, wire, { signal: new AbortController().signal }, pluginServices, c));
    }
    expect(first.requests.map((r) => [r.url, r.headers.get("authorization")])).toEqual([
      ["http://127.0.0.1:1/a/v1/messages", "Bearer sk-ant-A"],
      ["http://127.0.0.1:1/a/v1/messages", "Bearer sk-ant-B"],
      ["http://127.0.0.1:1/b/v1/messages", "Bearer sk-ant-A"],
    ]);
    expect(second.requests.map((r) => r.url)).toEqual(["http://127.0.0.1:1/a/v1/messages"]);
  });

  test("non-streaming: one JSON message becomes the same events", async () => {
    const { fetch, requests } = replayFetch([jsonResponse(fixture("anthropic-message.json"), { headers: { "request-id": "req_x" } })]);
    const events = await send(fetch, false);
    expect(JSON.parse(requests[0]!.body).stream).toBe(false);
    expect(events).toEqual([
      { type: "text", delta: "Hello café" },
      { type: "tool_call", id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", arguments: '{"unit":"celsius","city":"Tokyo"}' },
      {
        type: "finish",
        reason: "tool_calls",
        rawReason: "tool_use",
        rawUsage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 2000, output_tokens: 12 },
        requestId: "msg_013Zva2CMHLNnXjNJJKqJ2EF",
      },
    ]);
  });
});

describe("anthropic render", () => {
  test("order tools → system → messages; system as text blocks; thinking replayed with its signature; images as base64 sources", () => {
    const ctx = context(true);
    ctx.messages = [
      { id: "u1", role: "user", content: [{ type: "image", mediaType: "image/png", data: "iVBORw0KGgo=" }, { type: "text", text: "What is this?" }] },
      { id: "a1", role: "assistant", content: [{ type: "thinking", text: "It looks like", signature: "sig-1" }, { type: "thinking", text: "unsigned" }, { type: "text", text: "A logo." }] },
      { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "t1", content: "oops", isError: true }] },
    ];
    const wire = renderAnthropic(ctx, pluginServices);
    expect(Object.keys(wire.body)).toEqual(["model", "max_tokens", "temperature", "tools", "system", "messages", "stream"]);
    expect(wire.body.system).toEqual([{ type: "text", text: "Be brief." }]);
    expect(wire.body.messages).toEqual([
      { role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }, { type: "text", text: "What is this?" }] },
      { role: "assistant", content: [{ type: "thinking", thinking: "It looks like", signature: "sig-1" }, { type: "text", text: "A logo." }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "oops", is_error: true }] },
    ]);
    expect(wire.segments.map((s) => s.nodeId)).toEqual(["tool:get_weather", "sys", "u1#0", "u1#1", "a1#0", "a1#2", "u2#0"]);
    expect(wire.segments.find((s) => s.nodeId === "a1#2")!.path).toEqual(["messages", 1, "content", 1]);
  });

  test("tool parameters are canonicalized; provider options are merged last and may override", () => {
    const ctx = context(true);
    ctx.generation.providerOptions = { max_tokens: 99, thinking: { type: "enabled", budget_tokens: 2048 } };
    const wire = renderAnthropic(ctx, pluginServices);
    expect(wire.body.max_tokens).toBe(99);
    expect(wire.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect(JSON.stringify((wire.body.tools as Record<string, unknown>[])[0]!.input_schema)).toBe('{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}');
  });

  test("without maxTokens the required max_tokens gets the documented default", () => {
    const ctx = context(true);
    ctx.generation.maxTokens = undefined;
    expect(renderAnthropic(ctx, pluginServices).body.max_tokens).toBe(8192);
  });
});

function context(stream: boolean): RequestContext {
  return {
    model: "claude-sonnet-4-5",
    provider: "anthropic",
    prefix: {
      system: [{ id: "sys", text: "Be brief." }],
      tools: [{ name: "get_weather", parameters: { type: "object", required: ["city"], properties: { city: { type: "string" } } } }],
      fingerprint: "0000000000000000",
    },
    summary: [],
    messages: [{ id: "u1", role: "user", content: [{ type: "text", text: "Weather in Tokyo?" }] }],
    generation: { maxTokens: 100, temperature: 0, stream, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
}

describe("anthropic server tools (web search)", () => {
  const use = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "cachet" } };
  const result = { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [{ type: "web_search_result", url: "https://example.com", title: "x", encrypted_content: "e30=" }] };

  test("the server tool is sent as written; the streamed blocks come out whole as provider_block events, never as tool calls", async () => {
    const ctx = context(true);
    ctx.prefix.tools = [{ name: "web_search", parameters: { type: "object", properties: {} }, server: { type: "web_search_20250305", name: "web_search", max_uses: 3 } }];
    expect(renderAnthropic(ctx, pluginServices).body.tools).toEqual([{ max_uses: 3, name: "web_search", type: "web_search_20250305" }]);
    const sse = [
      ["message_start", { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 10, output_tokens: 1 } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { ...use, input: {} } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"query":' } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '"cachet"}' } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["content_block_start", { type: "content_block_start", index: 1, content_block: result }],
      ["content_block_stop", { type: "content_block_stop", index: 1 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { input_tokens: 90, output_tokens: 20, server_tool_use: { web_search_requests: 1 } } }],
      ["message_stop", { type: "message_stop" }],
    ].map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
    const events = await send(replayFetch([streamResponse(byteReads(sse, {}))]).fetch);
    expect(events.filter((e) => e.type === "provider_block")).toEqual([
      { type: "provider_block", protocol: "anthropic-messages", block: use },
      { type: "provider_block", protocol: "anthropic-messages", block: result },
    ]);
    expect(events.some((e) => e.type === "tool_call")).toBe(false);
    const finish = events.at(-1)!;
    expect(finish).toMatchObject({ type: "finish", reason: "stop", rawUsage: { input_tokens: 90, output_tokens: 20, server_tool_use: { web_search_requests: 1 } } });
  });

  test("non-streaming: the same blocks; stored provider blocks render back verbatim, another protocol's are left out", async () => {
    const events = await send(replayFetch([jsonResponse({ id: "msg_2", content: [use, result, { type: "text", text: "found" }], stop_reason: "end_turn", usage: { input_tokens: 5, output_tokens: 2 } })]).fetch, false);
    expect(events.slice(0, 3)).toEqual([
      { type: "provider_block", protocol: "anthropic-messages", block: use },
      { type: "provider_block", protocol: "anthropic-messages", block: result },
      { type: "text", delta: "found" },
    ]);
    const ctx = context(true);
    ctx.messages = [
      ...ctx.messages,
      { id: "a1", role: "assistant", content: [{ type: "provider", protocol: "anthropic-messages", data: use }, { type: "provider", protocol: "anthropic-messages", data: result }, { type: "provider", protocol: "gemini", data: { other: true } }, { type: "text", text: "found" }] },
      { id: "u2", role: "user", content: [{ type: "text", text: "more?" }] },
    ];
    const messages = renderAnthropic(ctx, pluginServices).body.messages as { content: unknown[] }[];
    expect(messages[1]!.content).toEqual([use, result, { type: "text", text: "found" }]);
  });
});
