import { describe, expect, test } from "bun:test";
import { pluginServices } from "../../src/plugin/services.ts";
import type { ProviderConfig, RequestContext, StreamEvent } from "../../src/plugin/index.ts";
import { byteReads, collect, fixture, jsonResponse, replayFetch, streamResponse } from "../../test/fixtures/wire/replay.ts";
import { createChatAdapter, renderChat } from "./chat.ts";
import { chatUsage } from "./usage.ts";
import { moonshotUsage, openrouterUsage } from "../openai-compatible/usage.ts";

const dialect = { maxTokensField: "max_completion_tokens" as const, usage: chatUsage };

function adapter(fetch: typeof globalThis.fetch, usage = chatUsage) {
  const config: ProviderConfig = { providerId: "openai", apiKey: "sk-KEY-abcdef123", baseUrl: "http://127.0.0.1:1/openai/v1", fetch, options: {} };
  return createChatAdapter(config, pluginServices, { ...dialect, usage });
}

async function run(fetch: typeof globalThis.fetch, ctx = context(true), usage = chatUsage): Promise<StreamEvent[]> {
  const a = adapter(fetch, usage);
  return collect(a.send(a.render(ctx), { signal: new AbortController().signal }));
}

describe("openai chat streaming", () => {
  test("case 21: reads past finish_reason to [DONE] and takes usage from the chunk with empty choices", async () => {
    const events = await run(replayFetch([streamResponse(byteReads(fixture("openai-chat-stream.sse"), {}))]).fetch);
    const finish = events.at(-1)!;
    expect(finish.type).toBe("finish");
    if (finish.type !== "finish") return;
    expect(finish.rawUsage).toEqual({ prompt_tokens: 28, completion_tokens: 38, total_tokens: 66, cost: 7.1e-5, prompt_tokens_details: { cached_tokens: 0 } });
    const report = openrouterUsage(finish.rawUsage);
    expect(report.usage).toMatchObject({ input: 28, output: 38 });
    expect(report.providerCostUsd).toBe(0.000071);
  });

  test("case 21: include_usage is always requested, merged into the user's stream options", () => {
    const ctx = context(true);
    ctx.generation.providerOptions = { stream_options: { include_obfuscation: false, include_usage: false } };
    const body = renderChat(ctx, pluginServices, dialect).body;
    expect(body.stream_options).toEqual({ include_obfuscation: false, include_usage: true });
    expect(renderChat(context(true), pluginServices, dialect).body.stream_options).toEqual({ include_usage: true });
    expect(renderChat(context(false), pluginServices, dialect).body.stream_options).toBeUndefined();
  });

  test("Kimi: usage inside choices[0] is taken", async () => {
    const events = await run(replayFetch([streamResponse(byteReads(fixture("openai-chat-kimi-stream.sse"), {}))]).fetch, context(true), moonshotUsage);
    const finish = events.at(-1)!;
    if (finish.type !== "finish") throw new Error("no finish");
    expect(finish.reason).toBe("stop");
    expect(moonshotUsage(finish.rawUsage).usage).toMatchObject({ input: 176, cacheRead: 1024, output: 40 });
  });

  test("case 22: a chunk split inside 'é' decodes to café", async () => {
    const sse = 'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"café"},"finish_reason":null}]}\n\n' +
      'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    const split = new TextEncoder().encode(sse).indexOf(0xc3) + 1;
    const events = await run(replayFetch([streamResponse(byteReads(sse, { at: [split] }))]).fetch);
    expect(events.filter((e) => e.type === "text")).toEqual([{ type: "text", delta: "café" }]);
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "stop", rawUsage: undefined });
  });

  test("a stream cut before any finish_reason is a retryable PROVIDER_STREAM", async () => {
    const error = await run(replayFetch([streamResponse(byteReads(fixture("openai-chat-cut.sse"), {}))]).fetch).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PROVIDER_STREAM", retryable: true });
  });

  test("an HTTP date in retry-after becomes milliseconds", async () => {
    const when = new Date(Date.now() + 60_000).toUTCString();
    const error = await run(replayFetch([jsonResponse({ error: { message: "slow down" } }, { status: 503, headers: { "retry-after": when } })]).fetch).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 503, retryable: true });
    const ms = (error as { retryAfterMs: number }).retryAfterMs;
    expect(ms).toBeGreaterThan(55_000);
    expect(ms).toBeLessThanOrEqual(60_000);
  });

  test("non-streaming: the completion becomes text, tool calls with raw arguments, and finish", async () => {
    const { fetch, requests } = replayFetch([jsonResponse(fixture("openai-chat-completion.json"))]);
    const events = await run(fetch, context(false));
    expect(JSON.parse(requests[0]!.body).stream).toBe(false);
    expect(events.slice(0, 2)).toEqual([
      { type: "text", delta: "Hello café" },
      { type: "tool_call", id: "call_abc123", name: "get_weather", arguments: '{"unit": "celsius","city":"Tokyo"}' },
    ]);
    const finish = events[2]!;
    if (finish.type !== "finish") throw new Error("no finish");
    expect(chatUsage(finish.rawUsage).usage).toMatchObject({ input: 86, cacheRead: 1920, output: 300 });
  });
});

describe("openai chat render", () => {
  test("tool results become tool messages before the user's text; assistant tool calls keep raw arguments", () => {
    const ctx = context(true);
    ctx.messages = [
      { id: "u1", role: "user", content: [{ type: "text", text: "Weather?" }] },
      { id: "a1", role: "assistant", content: [{ type: "tool_use", id: "c1", name: "get_weather", arguments: '{"b":1, "a":2}' }] },
      { id: "u2", role: "user", content: [{ type: "text", text: "and also" }, { type: "tool_result", toolUseId: "c1", content: "sunny" }] },
    ];
    const wire = renderChat(ctx, pluginServices, dialect);
    expect(wire.body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: '{"b":1, "a":2}' } }] },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
      { role: "user", content: [{ type: "text", text: "and also" }] },
    ]);
    expect(wire.segments.map((s) => `${s.nodeId}@${s.path.join(".")}`)).toEqual([
      "sys@messages.0",
      "tool:get_weather@tools.0",
      "u1#0@messages.1.content.0",
      "a1@messages.2",
      "u2#1@messages.3",
      "u2#0@messages.4.content.0",
    ]);
    expect(wire.body.max_completion_tokens).toBe(100);
  });

  test("an output schema becomes response_format json_schema (strict, every property required)", () => {
    const ctx = context(true);
    ctx.prefix.schema = { name: "answer", schema: { type: "object", properties: { city: { type: "string" }, note: { type: "string" } }, required: ["city"] } };
    const wire = renderChat(ctx, pluginServices, dialect);
    const format = wire.body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: { required: string[]; additionalProperties: boolean } } };
    expect(format.type).toBe("json_schema");
    expect(format.json_schema.name).toBe("answer");
    expect(format.json_schema.strict).toBe(true);
    expect(format.json_schema.schema.required.sort()).toEqual(["city", "note"]);
    expect(format.json_schema.schema.additionalProperties).toBe(false);
    expect(wire.segments.find((s) => s.kind === "schema")!.path).toEqual(["response_format"]);
  });
});

function context(stream: boolean): RequestContext {
  return {
    model: "gpt-4o",
    provider: "openai",
    prefix: {
      system: [{ id: "sys", text: "Be brief." }],
      tools: [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }],
      fingerprint: "0000000000000000",
    },
    summary: [],
    messages: [{ id: "u1", role: "user", content: [{ type: "text", text: "Weather in Tokyo?" }] }],
    generation: { maxTokens: 100, stream, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
}
