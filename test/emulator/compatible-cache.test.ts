/**
 * Cache rules and usage shapes of DeepSeek, Gemini, Qwen, Kimi, OpenRouter
 * and xAI, with numbers (providers.md §1, §4–§8).
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { after, emulator, post, tokens } from "./_helpers.ts";

let emu: EmulatorHandle;
beforeEach(async () => {
  emu ??= await emulator();
  await fetch(`${emu.url}/_emulator/reset`, { method: "POST" });
});
afterAll(() => emu.stop());

const chat = (provider: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => post(`${emu.url}/${provider}/chat/completions`, body, headers);

describe("deepseek prefix units", () => {
  const system = { role: "system", content: tokens(100) };
  const ask = (text: string, history: unknown[] = []) => chat("deepseek", { model: "deepseek-chat", messages: [system, ...history, { role: "user", content: text }] });

  test("A+B then A+C misses, A is then persisted, A+D hits A (100 tokens); hit + miss = prompt_tokens", async () => {
    await ask(tokens(10, "river"));
    const c = await ask(tokens(10, "stone"));
    expect(c.json.usage).toMatchObject({ prompt_tokens: 110, prompt_cache_hit_tokens: 0, prompt_cache_miss_tokens: 110, prompt_tokens_details: { cached_tokens: 0 } });
    const d = await ask(tokens(10, "cloud"));
    expect(d.json.usage).toMatchObject({ prompt_tokens: 110, prompt_cache_hit_tokens: 100, prompt_cache_miss_tokens: 10 });
  });

  test("the next turn hits the unit stored at the end of the model output", async () => {
    const first = await ask(tokens(10, "river"));
    const answer = first.json.choices[0].message.content as string;
    const second = await chat("deepseek", {
      model: "deepseek-chat",
      messages: [system, { role: "user", content: tokens(10, "river") }, { role: "assistant", content: answer }, { role: "user", content: tokens(5, "green") }],
    });
    // Everything up to the end of the previous answer is a unit; only the new 5-token message misses.
    expect(second.json.usage.prompt_cache_hit_tokens).toBe(second.json.usage.prompt_tokens - 5);
    expect(second.json.usage.prompt_cache_hit_tokens).toBe(110 + first.json.usage.completion_tokens);
  });

  test("prompts under 64 tokens are never cached", async () => {
    const small = { model: "deepseek-chat", messages: [{ role: "user", content: tokens(60) }] };
    await chat("deepseek", small);
    expect((await chat("deepseek", small)).json.usage.prompt_cache_hit_tokens).toBe(0);
  });
});

describe("gemini implicit caching", () => {
  const generate = (model: string, body: Record<string, unknown>) => post(`${emu.url}/google/v1beta/models/${model}:generateContent`, body);
  const contents = (n: number) => [{ role: "user", parts: [{ text: tokens(n) }] }];

  test.each([
    ["gemini-2.5-flash", 2100, 2100],
    ["gemini-2.5-flash", 2000, 0],
    ["gemini-3-flash-preview", 1100, 1100],
    ["gemini-3.1-pro-preview", 4000, 0],
  ])("%s: %i tokens sent twice → cachedContentTokenCount %i, promptTokenCount includes it", async (model, n, cached) => {
    await generate(model, { contents: contents(n) });
    const { json } = await generate(model, { contents: contents(n) });
    expect(json.usageMetadata.promptTokenCount).toBe(n);
    expect(json.usageMetadata.cachedContentTokenCount ?? 0).toBe(cached);
  });

  test("thoughtsTokenCount sits outside candidatesTokenCount; totalTokenCount adds both", async () => {
    const script = join(tmpdir(), `cachet-script-${process.pid}-g.json`);
    writeFileSync(script, JSON.stringify([{ text: tokens(7, "music"), thinking: tokens(30, "light") }]));
    const response = await fetch(`${emu.url}/google/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: "POST",
      headers: { "x-emulator-script": script },
      body: JSON.stringify({ contents: contents(10) }),
    });
    const { usageMetadata } = (await response.json()) as { usageMetadata: Record<string, number> };
    expect(usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 7, thoughtsTokenCount: 30, totalTokenCount: 47 });
  });
});

describe("qwen (alibaba) explicit and implicit modes", () => {
  const marked = (n: number) => ({
    model: "qwen-plus",
    messages: [
      { role: "system", content: [{ type: "text", text: tokens(n), cache_control: { type: "ephemeral" } }] },
      { role: "user", content: "hi" },
    ],
  });

  test("explicit: 1,100 tokens write 1,100 (cache_creation_input_tokens, cache_type), then read 1,100; prompt_tokens includes both", async () => {
    const first = await chat("alibaba", marked(1100));
    expect(first.json.usage).toMatchObject({ prompt_tokens: 1101, prompt_tokens_details: { cached_tokens: 0, cache_creation_input_tokens: 1100, cache_type: "ephemeral" } });
    const second = await chat("alibaba", marked(1100));
    expect(second.json.usage).toMatchObject({ prompt_tokens: 1101, prompt_tokens_details: { cached_tokens: 1100, cache_creation_input_tokens: 0 } });
    const late = await chat("alibaba", marked(1100), after(6));
    expect(late.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
  });

  test("explicit below 1,024 tokens: 0 read, 0 write", async () => {
    await chat("alibaba", marked(1000));
    expect((await chat("alibaba", marked(1000))).json.usage.prompt_tokens_details).toEqual({ cached_tokens: 0, cache_creation_input_tokens: 0, cache_type: "ephemeral" });
  });

  test("implicit: 300 tokens sent twice read 300, with no creation field", async () => {
    const body = { model: "qwen-plus", messages: [{ role: "user", content: tokens(300) }] };
    await chat("alibaba", body);
    expect((await chat("alibaba", body)).json.usage.prompt_tokens_details).toEqual({ cached_tokens: 300 });
  });

  test("five cache_control markers → 400", async () => {
    const content = Array.from({ length: 5 }, () => ({ type: "text", text: "x", cache_control: { type: "ephemeral" } }));
    expect((await chat("alibaba", { model: "qwen-plus", messages: [{ role: "user", content }] })).status).toBe(400);
  });
});

describe("kimi (moonshotai)", () => {
  test("600 tokens sent twice: cached_tokens 512 (256-token chunks) top-level and in prompt_tokens_details; in choices[0] of the final stream chunk", async () => {
    const body = { model: "kimi-k2", messages: [{ role: "user", content: tokens(600) }] };
    await chat("moonshotai", body);
    const { json } = await chat("moonshotai", body);
    expect(json.usage).toMatchObject({ prompt_tokens: 600, cached_tokens: 512, prompt_tokens_details: { cached_tokens: 512 } });
    const stream = await fetch(`${emu.url}/moonshotai/v1/chat/completions`, { method: "POST", body: JSON.stringify({ ...body, stream: true }) });
    const chunks = (await stream.text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
    const final = chunks.find((c) => c.choices[0]?.finish_reason === "stop");
    expect(final.choices[0].usage).toMatchObject({ prompt_tokens: 600, cached_tokens: 512 });
  });
});

describe("openrouter", () => {
  test("anthropic upstream: cache_control writes 1,100 (cache_write_tokens), reads 1,100; cost at the model's published prices (3 / write 3.75 / read 0.3 / out 15)", async () => {
    const body = {
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: [{ type: "text", text: tokens(1100), cache_control: { type: "ephemeral" } }] }],
    };
    const first = await chat("openrouter", body);
    const out = first.json.usage.completion_tokens;
    expect(first.json.usage).toMatchObject({ prompt_tokens: 1100, is_byok: false, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 1100 } });
    expect(first.json.usage.cost).toBeCloseTo((1100 * 3.75 + out * 15) / 1e6, 12);
    const second = await chat("openrouter", body);
    expect(second.json.usage.prompt_tokens_details).toMatchObject({ cached_tokens: 1100, cache_write_tokens: 0 });
    expect(second.json.usage.cost).toBeCloseTo((1100 * 0.3 + out * 15) / 1e6, 12);
  });

  test("openai upstream: implicit 1,100 tokens → 1,024 cached; usage arrives in the stream without include_usage", async () => {
    const body = { model: "openai/gpt-5", messages: [{ role: "user", content: tokens(1100) }] };
    await chat("openrouter", body);
    const stream = await fetch(`${emu.url}/openrouter/api/v1/chat/completions`, { method: "POST", body: JSON.stringify({ ...body, stream: true }) });
    const chunks = (await stream.text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(last.usage.prompt_tokens_details.cached_tokens).toBe(1024);
  });
});

describe("xai", () => {
  test("reasoning outside completion_tokens: total = prompt + completion + reasoning", async () => {
    const script = join(tmpdir(), `cachet-script-${process.pid}-x.json`);
    writeFileSync(script, JSON.stringify([{ text: tokens(12, "music"), thinking: tokens(228, "light") }]));
    const { json } = await chat("xai", { model: "grok-4", messages: [{ role: "user", content: tokens(12) }] }, { "x-emulator-script": script });
    expect(json.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 12, total_tokens: 252, completion_tokens_details: { reasoning_tokens: 228 } });
    expect(json.choices[0].message.reasoning_content).toBe(tokens(228, "light"));
  });

  test("x-grok-conv-id pins the server: 300 tokens twice → 256 cached (128-token blocks)", async () => {
    const body = { model: "grok-4", messages: [{ role: "user", content: tokens(300) }] };
    await chat("xai", body, { "x-grok-conv-id": "conv-1" });
    expect((await chat("xai", body, { "x-grok-conv-id": "conv-1" })).json.usage.prompt_tokens_details.cached_tokens).toBe(256);
  });
});

describe("unknown provider segment", () => {
  test("/acme/v1/chat/completions is served with the OpenAI shape and rules", async () => {
    const body = { model: "acme-large", messages: [{ role: "user", content: tokens(1100) }] };
    await post(`${emu.url}/acme/v1/chat/completions`, body);
    const { json } = await post(`${emu.url}/acme/v1/chat/completions`, body);
    expect(json.usage).toMatchObject({ prompt_tokens: 1100, prompt_tokens_details: { cached_tokens: 1024 } });
  });
});

describe("gemini streaming without alt=sse", () => {
  test("streamGenerateContent returns a JSON array of chunks whose last carries the full usage", async () => {
    const { json } = await post(`${emu.url}/google/v1beta/models/gemini-2.5-flash:streamGenerateContent`, { contents: [{ role: "user", parts: [{ text: tokens(10) }] }] });
    expect(Array.isArray(json)).toBe(true);
    expect(json.at(-1)).toMatchObject({ candidates: [{ finishReason: "STOP" }], usageMetadata: { promptTokenCount: 10 } });
  });
});
