/**
 * OpenAI cache rules, with numbers (providers.md §3a): 1,024-token minimum,
 * hits rounded down to 128 before GPT-5.6, exact boundaries and reported
 * writes from GPT-5.6, retention TTLs, prompt_cache_key routing and overflow.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { after, emulator, post, tokens } from "./_helpers.ts";

let emu: EmulatorHandle;
const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) => post(`${emu.url}/openai/v1/chat/completions`, { model: "gpt-5", ...body }, headers);
const user = (text: string) => [{ role: "user", content: text }];

beforeEach(async () => {
  emu ??= await emulator();
  await fetch(`${emu.url}/_emulator/reset`, { method: "POST" });
});
afterAll(() => emu.stop());

describe("openai cache rules (before GPT-5.6)", () => {
  test("a 1,100-token prompt sent twice reports 0, then 1,024 cached (rounded down to 128)", async () => {
    const first = await chat({ messages: user(tokens(1100)) });
    expect(first.json.usage.prompt_tokens).toBe(1100);
    expect(first.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const second = await chat({ messages: user(tokens(1100)) });
    expect(second.json.usage).toMatchObject({ prompt_tokens: 1100, prompt_tokens_details: { cached_tokens: 1024 } });
    expect(second.json.usage.prompt_tokens_details.cache_write_tokens).toBeUndefined();
  });

  test("a 1,000-token prompt (below 1,024) never caches", async () => {
    await chat({ messages: user(tokens(1000)) });
    expect((await chat({ messages: user(tokens(1000)) })).json.usage.prompt_tokens_details.cached_tokens).toBe(0);
  });

  test("a shared 2,000-token system prefix with a new user message reads 1,920 (2,000 rounded down)", async () => {
    const system = { role: "system", content: tokens(2000) };
    await chat({ messages: [system, { role: "user", content: "first" }] });
    const next = await chat({ messages: [system, { role: "user", content: "second" }] });
    expect(next.json.usage.prompt_tokens_details.cached_tokens).toBe(1920);
  });

  test("retention: in_memory entries are gone after 11 minutes; 24h entries are not", async () => {
    await chat({ messages: user(tokens(1500)), prompt_cache_retention: "in_memory" });
    expect((await chat({ messages: user(tokens(1500)), prompt_cache_retention: "in_memory" }, after(11))).json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    await chat({ messages: user(tokens(1500, "apple")), prompt_cache_retention: "24h" });
    expect((await chat({ messages: user(tokens(1500, "apple")), prompt_cache_retention: "24h" }, after(11))).json.usage.prompt_tokens_details.cached_tokens).toBe(1408);
  });
});

describe("openai cache rules (GPT-5.6 and later)", () => {
  test("implicit breakpoint: 1,100 tokens write 1,100 (reported), then read exactly 1,100", async () => {
    const first = await chat({ model: "gpt-5.6", messages: user(tokens(1100)) });
    expect(first.json.usage.prompt_tokens_details).toMatchObject({ cached_tokens: 0, cache_write_tokens: 1100 });
    const second = await chat({ model: "gpt-5.6", messages: user(tokens(1100)) });
    expect(second.json.usage.prompt_tokens_details).toMatchObject({ cached_tokens: 1100, cache_write_tokens: 0 });
  });

  test("explicit mode without markers caches nothing; with a marker it writes up to the marker only", async () => {
    const none = { model: "gpt-5.6", prompt_cache_options: { mode: "explicit" }, messages: user(tokens(1500)) };
    await chat(none);
    expect((await chat(none)).json.usage.prompt_tokens_details).toMatchObject({ cached_tokens: 0, cache_write_tokens: 0 });
    const marked = {
      model: "gpt-5.6",
      prompt_cache_options: { mode: "explicit" },
      messages: [
        { role: "system", content: [{ type: "text", text: tokens(1200, "stone"), prompt_cache_breakpoint: { mode: "explicit" } }] },
        { role: "user", content: tokens(300, "river") },
      ],
    };
    const first = await chat(marked);
    expect(first.json.usage).toMatchObject({ prompt_tokens: 1500, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 1200 } });
    expect((await chat(marked)).json.usage.prompt_tokens_details).toMatchObject({ cached_tokens: 1200, cache_write_tokens: 0 });
  });
});

describe("prompt_cache_key routing", () => {
  const system = { role: "system", content: tokens(1200, "house") };
  const turn = (session: number, n: number) => [system, ...Array.from({ length: n }, (_, i) => ({ role: "user", content: `session ${session} turn ${i}` }))];

  test("the same prefix under two keys lands on two machines: the second key misses", async () => {
    await chat({ messages: user(tokens(1100)), prompt_cache_key: "alpha" });
    expect((await chat({ messages: user(tokens(1100)), prompt_cache_key: "alpha" })).json.usage.prompt_tokens_details.cached_tokens).toBe(1024);
    expect((await chat({ messages: user(tokens(1100)), prompt_cache_key: "beta" })).json.usage.prompt_tokens_details.cached_tokens).toBe(0);
  });

  test("3 concurrent sessions × 8 turns in one minute: with no key the shared prefix overflows after 15 requests and loses hits; one key per session keeps every turn on its machine", async () => {
    const run = async (keyed: boolean) => {
      const cached: number[] = [];
      for (let n = 1; n <= 8; n++) {
        const round = await Promise.all([0, 1, 2].map((s) => chat({ messages: turn(s, n), ...(keyed ? { prompt_cache_key: `session-${s}` } : {}) })));
        for (const r of round) cached.push(r.json.usage.prompt_tokens_details.cached_tokens);
      }
      return cached;
    };
    const keyed = await run(true);
    // Every turn after a session's first reads at least the 1,200-token system prompt rounded down (1,152).
    expect(keyed.slice(3).every((c) => c >= 1152)).toBe(true);
    await fetch(`${emu.url}/_emulator/reset`, { method: "POST" });
    const shared = await run(false);
    // Requests 2–15 stay on the home machine (sessions 2 and 3 even read session 1's system prompt) …
    expect(shared[0]).toBe(0);
    expect(shared.slice(1, 15).every((c) => c >= 1152)).toBe(true);
    // … requests 16–24 exceed 15 a minute and spill to other machines, where nothing is cached yet.
    const spilled = shared.slice(15);
    expect(spilled.filter((c) => c === 0).length).toBeGreaterThanOrEqual(6);
    expect(spilled.reduce((a, b) => a + b, 0)).toBeLessThan(keyed.slice(15).reduce((a, b) => a + b, 0));
  });

  test("the rate budget is per emulated minute: a request a minute later is back on the home machine", async () => {
    for (let i = 0; i < 16; i++) await chat({ messages: turn(0, 1) });
    const nextMinute = await chat({ messages: turn(0, 1) }, after(1));
    expect(nextMinute.json.usage.prompt_tokens_details.cached_tokens).toBe(1152);
  });
});

describe("responses API", () => {
  test("input_tokens includes cached; input_tokens_details.cached_tokens 1,024 on the second 1,100-token request", async () => {
    const body = { model: "gpt-5", instructions: tokens(1000), input: tokens(100, "green") };
    await post(`${emu.url}/openai/v1/responses`, body);
    const { json } = await post(`${emu.url}/openai/v1/responses`, body);
    expect(json.usage).toMatchObject({ input_tokens: 1100, input_tokens_details: { cached_tokens: 1024 } });
    expect(json.usage.total_tokens).toBe(1100 + json.usage.output_tokens);
  });
});
