/**
 * Contract tests: the official SDKs talk to the emulator unchanged, streaming
 * and not, and read the same answer and usage both ways.
 */
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { emulator, tokens } from "./_helpers.ts";

let emu: EmulatorHandle;
const script = join(tmpdir(), `cachet-contract-${process.pid}.json`);
// Answer 0: a tool call with thinking; answer 1 (after one assistant turn): text.
writeFileSync(script, JSON.stringify([{ thinking: "Need the weather.", tool_calls: [{ name: "get_weather", arguments: '{"city":"Paris","unit":"c"}' }] }, { text: "It is 21 °C in Paris, café weather." }]));
const scripted = { "x-emulator-script": script };

beforeAll(async () => {
  emu = await emulator();
});
afterAll(() => emu.stop());

describe("@anthropic-ai/sdk", () => {
  const client = () => new Anthropic({ apiKey: "test-key", baseURL: `${emu.url}/anthropic`, maxRetries: 0 });
  const request = { model: "claude-sonnet-4-6", max_tokens: 200, system: [{ type: "text" as const, text: tokens(1500), cache_control: { type: "ephemeral" as const } }], messages: [{ role: "user" as const, content: "hello" }] };

  test("create and stream return the same text; stream usage is the cumulative message_delta", async () => {
    const made = await client().messages.create(request);
    expect(made.content[0]?.type).toBe("text");
    expect(made.usage).toMatchObject({ input_tokens: 1, cache_creation_input_tokens: 1500, cache_read_input_tokens: 0 });
    const stream = client().messages.stream(request);
    let streamed = "";
    stream.on("text", (delta) => (streamed += delta));
    const final = await stream.finalMessage();
    expect(streamed).toBe((made.content[0] as { text: string }).text);
    expect(final.usage).toMatchObject({ input_tokens: 1, cache_read_input_tokens: 1500, cache_creation_input_tokens: 0, output_tokens: made.usage.output_tokens });
    expect(final.stop_reason).toBe("end_turn");
  });

  test("scripted thinking + tool_use, streamed through input_json_delta, then a text turn", async () => {
    const tools = [{ name: "get_weather", description: "weather", input_schema: { type: "object" as const, properties: { city: { type: "string" } } } }];
    const final = await client()
      .messages.stream({ ...request, tools, thinking: { type: "enabled", budget_tokens: 1024 } }, { headers: scripted })
      .finalMessage();
    expect(final.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(final.content[1]).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris", unit: "c" } });
    expect(final.stop_reason).toBe("tool_use");
    const toolUse = final.content[1] as { id: string };
    const next = await client().messages.create(
      {
        ...request,
        tools,
        messages: [...request.messages, { role: "assistant", content: final.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: toolUse.id, content: "21" }] }],
      },
      { headers: scripted },
    );
    expect(next.content as unknown[]).toEqual([{ type: "text", text: "It is 21 °C in Paris, café weather." }]);
  });

  test("429:1 is retried by the SDK and then succeeds; a 529 surfaces as overloaded_error", async () => {
    const retrying = new Anthropic({ apiKey: "k", baseURL: `${emu.url}/anthropic`, maxRetries: 1 });
    const ok = await retrying.messages.create(request, { headers: { "x-emulator-fault": "429:1" } });
    expect(ok.type).toBe("message");
    expect(emu.counters()["status.429"]).toBeGreaterThanOrEqual(1);
    const error = await client().messages.create(request, { headers: { "x-emulator-fault": "529" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as { status: number }).status).toBe(529);
    expect(JSON.stringify((error as { error: unknown }).error)).toContain("overloaded_error");
  });

  test("an overloaded_error event inside a 200 stream makes the SDK throw", async () => {
    const error = await client().messages.stream(request, { headers: { "x-emulator-fault": "error-before" } }).finalMessage().catch((e: unknown) => e);
    expect(String(error)).toContain("Overloaded");
  });
});

describe("openai chat completions", () => {
  const client = () => new OpenAI({ apiKey: "test-key", baseURL: `${emu.url}/openai/v1`, maxRetries: 0 });
  const messages = [{ role: "system" as const, content: tokens(1100) }, { role: "user" as const, content: "hello" }];

  test("create and stream (include_usage): same text, final chunk has choices [] and usage", async () => {
    const made = await client().chat.completions.create({ model: "gpt-5", messages });
    const stream = await client().chat.completions.create({ model: "gpt-5", messages, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    let lastChoices = -1;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
      lastChoices = chunk.choices.length;
    }
    expect(text).toBe(made.choices[0]!.message.content!);
    expect(lastChoices).toBe(0);
    expect(usage).toMatchObject({ prompt_tokens: 1101, prompt_tokens_details: { cached_tokens: 1024 } });
  });

  test("scripted tool_calls arrive as deltas the stream helper assembles", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: {} } } }];
    const final = await client().chat.completions.stream({ model: "gpt-5", messages, tools }, { headers: scripted }).finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(final.choices[0]!.message.tool_calls?.[0]).toMatchObject({ type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","unit":"c"}' } });
  });

  test("split-utf8: events split inside a UTF-8 character still parse to the same text", async () => {
    const plain = await client().chat.completions.create({ model: "gpt-5", messages: [{ role: "user", content: "split me" }] });
    const stream = await client().chat.completions.create({ model: "gpt-5", messages: [{ role: "user", content: "split me" }], stream: true }, { headers: { "x-emulator-fault": "split-utf8" } });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe(plain.choices[0]!.message.content!);
    expect(text).toMatch(/[^\x00-\x7f]/);
  });

  test("a cut stream ends inside the content: some chunks parse, none finishes (no finish_reason, no usage), every time", async () => {
    for (let i = 0; i < 5; i++) {
      const stream = await client().chat.completions.create({ model: "gpt-5", messages, stream: true }, { headers: { "x-emulator-fault": "cut" } });
      const chunks: { choices: { finish_reason: string | null }[] }[] = [];
      const error = await (async () => {
        for await (const chunk of stream) chunks.push(chunk);
      })().catch((e: unknown) => e);
      // The SDK may throw on the half event or just end: either way the answer never finishes.
      expect(error === undefined || error instanceof Error).toBe(true);
      expect(chunks.length).toBeGreaterThan(0);
      expect(chunks.some((c) => c.choices.some((choice) => choice.finish_reason !== null))).toBe(false);
    }
  });
});

describe("openai responses", () => {
  const client = () => new OpenAI({ apiKey: "test-key", baseURL: `${emu.url}/openai/v1`, maxRetries: 0 });

  test("create and stream: same output_text; response.completed carries usage", async () => {
    const made = await client().responses.create({ model: "gpt-5", instructions: tokens(1200), input: "hello" });
    expect(made.output_text.length).toBeGreaterThan(0);
    const stream = client().responses.stream({ model: "gpt-5", instructions: tokens(1200), input: "hello" });
    let deltas = "";
    stream.on("response.output_text.delta", (event) => (deltas += event.delta));
    const final = await stream.finalResponse();
    expect(deltas).toBe(made.output_text);
    expect(final.output_text).toBe(made.output_text);
    expect(final.usage).toMatchObject({ input_tokens: 1201, input_tokens_details: { cached_tokens: 1152 } });
  });

  test("function_call items stream and parse", async () => {
    const final = await client()
      .responses.stream({ model: "gpt-5", input: "weather?", tools: [{ type: "function", name: "get_weather", parameters: { type: "object", properties: {} }, strict: false }] }, { headers: scripted })
      .finalResponse();
    const call = final.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ name: "get_weather", arguments: '{"city":"Paris","unit":"c"}' });
  });
});

describe("@google/genai", () => {
  const client = () => new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: `${emu.url}/google` } });
  const contents = [{ role: "user", parts: [{ text: tokens(2100) }] }];

  test("generateContent and generateContentStream: same text, usageMetadata includes cached tokens", async () => {
    const made = await client().models.generateContent({ model: "gemini-2.5-flash", contents });
    expect(made.usageMetadata?.promptTokenCount).toBe(2100);
    let text = "";
    let usage: Record<string, unknown> | undefined;
    for await (const chunk of await client().models.generateContentStream({ model: "gemini-2.5-flash", contents })) {
      text += chunk.text ?? "";
      usage = chunk.usageMetadata as Record<string, unknown> | undefined;
    }
    expect(text).toBe(made.text!);
    expect(usage).toMatchObject({ promptTokenCount: 2100, cachedContentTokenCount: 2100 });
  });

  test("scripted function calls come back as functionCalls", async () => {
    const made = await client().models.generateContent({ model: "gemini-2.5-flash", contents: "weather?", config: { httpOptions: { headers: scripted } } });
    expect(made.functionCalls?.[0]).toMatchObject({ name: "get_weather", args: { city: "Paris", unit: "c" } });
  });

  test("gemini 3 text answers are signed (last text part; streamed, a last signature-only chunk) and the SDK's chat sends each signature back on the part it came on", async () => {
    const model = "gemini-3-pro-preview";
    const since = emu.requests().length;
    const made = await client().models.generateContent({ model, contents: "hello" });
    const parts = made.candidates?.[0]?.content?.parts ?? [];
    expect(parts).toHaveLength(1);
    expect(parts[0]!.text!.length).toBeGreaterThan(0);
    const [issued] = emu.requests().at(-1)!.signatures!;
    expect(issued).toStartWith("emu-thought-signature-");
    expect(parts[0]!.thoughtSignature).toBe(issued!);
    const chunks = [];
    for await (const chunk of await client().models.generateContentStream({ model, contents: "hello" })) chunks.push(chunk.candidates?.[0]?.content?.parts ?? []);
    const streamedIssued = emu.requests().at(-1)!.signatures!;
    expect(chunks.slice(0, -1).flat().every((part) => part.thoughtSignature === undefined && (part.text ?? "").length > 0)).toBe(true);
    expect(chunks.at(-1)).toEqual([{ text: "", thoughtSignature: streamedIssued[0] }]);
    // A 2.5 model signs nothing.
    const older = await client().models.generateContent({ model: "gemini-2.5-flash", contents: "hello" });
    expect(older.candidates?.[0]?.content?.parts?.some((part) => part.thoughtSignature !== undefined)).toBe(false);
    expect(emu.requests().at(-1)!.signatures).toEqual([]);

    const chat = client().chats.create({ model });
    await chat.sendMessage({ message: "first" });
    const first = emu.requests().at(-1)!.signatures![0]!;
    await chat.sendMessage({ message: "second" });
    const second = emu.requests().at(-1)!;
    expect(second.status).toBe(200);
    const contents = (second.body as { contents: { role: string; parts: { text?: string; thoughtSignature?: string }[] }[] }).contents;
    expect(contents.map((c) => c.role)).toEqual(["user", "model", "user"]);
    expect(contents[1]!.parts).toHaveLength(1);
    expect(contents[1]!.parts[0]!.thoughtSignature).toBe(first);
    expect(emu.requests().length - since).toBe(5);
  });
});
