/**
 * Anthropic cache rules, with numbers (providers.md §2a):
 * one entry per breakpoint, 20-block lookback, per-model minimums, ≤4
 * breakpoints, TTL order, 5m/1h expiry refreshed on read, mixed-TTL billing.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { after, emulator, post, tokens } from "./_helpers.ts";

let emu: EmulatorHandle;
const send = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  post(`${emu.url}/anthropic/v1/messages`, { model: "claude-sonnet-4-5", max_tokens: 50, ...body }, headers);
const cachedSystem = (n: number, ttl?: "1h") => [{ type: "text", text: tokens(n), cache_control: ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" } }];
const hi = [{ role: "user", content: "hi" }];

beforeEach(async () => {
  emu ??= await emulator();
  await fetch(`${emu.url}/_emulator/reset`, { method: "POST" });
});
afterAll(() => emu.stop());

describe("anthropic cache rules", () => {
  test("a 2,000-token system breakpoint writes 2,000, then reads 2,000; input is what follows it", async () => {
    const first = await send({ system: cachedSystem(2000), messages: hi });
    expect(first.json.usage).toMatchObject({ input_tokens: 1, cache_creation_input_tokens: 2000, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 0 } });
    const second = await send({ system: cachedSystem(2000), messages: hi });
    expect(second.json.usage).toMatchObject({ input_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 2000 });
  });

  test.each([
    ["claude-sonnet-4-5", 1000, 0],
    ["claude-sonnet-4-5", 1024, 1024],
    ["claude-haiku-4-5", 4000, 0],
    ["claude-haiku-4-5", 4096, 4096],
    ["claude-opus-4-7", 2000, 0],
    ["claude-opus-5", 512, 512],
  ])("%s with a %i-token prefix writes %i (below the minimum: 0 read, 0 write, no error)", async (model, size, written) => {
    for (let i = 0; i < 2; i++) {
      const { status, json } = await send({ model, system: cachedSystem(size), messages: hi });
      expect(status).toBe(200);
      expect(json.usage.cache_creation_input_tokens).toBe(i === 0 ? written : 0);
      expect(json.usage.cache_read_input_tokens).toBe(i === 0 ? 0 : written);
      expect(json.usage.input_tokens).toBe(size + 1 - written);
    }
  });

  test("five breakpoints → 400 invalid_request_error; four explicit plus top-level automatic → 400", async () => {
    const system = Array.from({ length: 5 }, () => ({ type: "text", text: tokens(10), cache_control: { type: "ephemeral" } }));
    const five = await send({ system, messages: hi });
    expect(five.status).toBe(400);
    expect(five.json.error.type).toBe("invalid_request_error");
    expect(five.json.error.message).toContain("Found 5");
    const fourPlusAuto = await send({ system: system.slice(0, 4), messages: hi, cache_control: { type: "ephemeral" } });
    expect(fourPlusAuto.status).toBe(400);
    expect((await send({ system: system.slice(0, 4), messages: hi })).status).toBe(200);
  });

  test("a 1h marker after a 5m marker (tools → system → messages order) → 400", async () => {
    const tools = [{ name: "lookup", description: "d", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } }];
    const bad = await send({ tools, system: cachedSystem(100, "1h"), messages: hi });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain("ttl='1h'");
  });

  test("a 5m entry read after 6 emulated minutes misses; a 1h entry still hits", async () => {
    await send({ system: cachedSystem(2000), messages: hi });
    const late = await send({ system: cachedSystem(2000), messages: hi }, after(6));
    expect(late.json.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 2000 });

    await send({ system: cachedSystem(3000, "1h"), messages: hi });
    const lateLong = await send({ system: cachedSystem(3000, "1h"), messages: hi }, after(6));
    expect(lateLong.json.usage).toMatchObject({ cache_read_input_tokens: 3000, cache_creation_input_tokens: 0 });
    const tooLate = await send({ system: cachedSystem(3000, "1h"), messages: hi }, after(6 + 61));
    expect(tooLate.json.usage.cache_read_input_tokens).toBe(0);
  });

  test("a read refreshes the 5m TTL: reads at 4 and 8 minutes both hit, 14 minutes misses", async () => {
    await send({ system: cachedSystem(2000), messages: hi });
    expect((await send({ system: cachedSystem(2000), messages: hi }, after(4))).json.usage.cache_read_input_tokens).toBe(2000);
    expect((await send({ system: cachedSystem(2000), messages: hi }, after(8))).json.usage.cache_read_input_tokens).toBe(2000);
    expect((await send({ system: cachedSystem(2000), messages: hi }, after(14))).json.usage.cache_read_input_tokens).toBe(0);
  });

  test("mixed TTLs bill by position: 1h tools (~1,500) + 5m system 1,000 → 1h write = tools, 5m write 1,000; a new system then reads the tools", async () => {
    const tool = { name: "lookup", description: tokens(1500 - 12, "river"), input_schema: { type: "object" }, cache_control: { type: "ephemeral", ttl: "1h" } };
    const first = await send({ tools: [tool], system: cachedSystem(1000), messages: hi });
    const toolTokens = first.json.usage.cache_creation.ephemeral_1h_input_tokens;
    expect(toolTokens).toBeGreaterThan(1400);
    expect(first.json.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 1000 }, input_tokens: 1 });
    const second = await send({ tools: [tool], system: [{ ...cachedSystem(1000)[0], text: tokens(1000, "stone") }], messages: hi });
    expect(second.json.usage).toMatchObject({ cache_read_input_tokens: toolTokens, cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 0 } });
  });

  test("20-block lookback: an entry 19 blocks behind the new breakpoint hits, 20 blocks behind misses (providers.md worked example)", async () => {
    const system = tokens(1100);
    const turns = (n: number) => Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `turn ${i}` }));
    const seed = await send({ system, messages: turns(1), cache_control: { type: "ephemeral" } });
    const entry = seed.json.usage.cache_creation_input_tokens;
    expect(entry).toBe(1100 + 3);
    // System is block 0, message i is block i+1: the entry sits at block 1.
    // 20 messages put the breakpoint at block 20: positions 20…1 are checked (20 counting itself).
    const within = await send({ system, messages: turns(20), cache_control: { type: "ephemeral" } });
    expect(within.json.usage.cache_read_input_tokens).toBe(entry);
    await fetch(`${emu.url}/_emulator/reset`, { method: "POST" });
    await send({ system, messages: turns(1), cache_control: { type: "ephemeral" } });
    // 21 messages: positions 21…2 are checked; block 1 lies beyond the window.
    const beyond = await send({ system, messages: turns(21), cache_control: { type: "ephemeral" } });
    expect(beyond.json.usage.cache_read_input_tokens).toBe(0);
    expect(beyond.json.usage.input_tokens).toBe(0);
  });

  test("worked example (providers.md §2a): entry at block 15; a request marked at block 35 reads 0; a later one marked at block 30 reads exactly block 15's entry", async () => {
    // One user message of numbered 400-token blocks; only the marked block is a breakpoint.
    const block = (i: number, marked: boolean) => ({ type: "text", text: `block ${i}${tokens(400)}`, ...(marked ? { cache_control: { type: "ephemeral" } } : {}) });
    const upTo = (count: number, breakpoint: number) => [{ role: "user", content: Array.from({ length: count }, (_, i) => block(i + 1, i + 1 === breakpoint)) }];
    const first = await send({ messages: upTo(15, 15) });
    const entry = first.json.usage.cache_creation_input_tokens;
    expect(entry).toBe(15 * 403);
    // From block 35 the lookback checks 35…16 (20 positions): block 15 is out of reach.
    const far = await send({ messages: upTo(35, 35) });
    expect(far.json.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 35 * 403 });
    // Block 35's entry cannot serve block 30 (a different prefix); from 30 the lookback reaches 15.
    const near = await send({ messages: upTo(35, 30) });
    expect(near.json.usage).toMatchObject({ cache_read_input_tokens: entry, cache_creation_input_tokens: 30 * 403 - entry, input_tokens: 5 * 403 });
  });

  test("automatic caching moves the breakpoint forward each turn and reads the previous turn's entry", async () => {
    const system = tokens(1100);
    const first = await send({ system, messages: [{ role: "user", content: "one" }], cache_control: { type: "ephemeral" } });
    expect(first.json.usage).toMatchObject({ cache_creation_input_tokens: 1101, input_tokens: 0 });
    const second = await send({ system, messages: [{ role: "user", content: "one" }, { role: "assistant", content: "two" }, { role: "user", content: "three" }], cache_control: { type: "ephemeral" } });
    expect(second.json.usage).toMatchObject({ cache_read_input_tokens: 1101, cache_creation_input_tokens: 2, input_tokens: 0 });
  });

  test("max_tokens 0 pre-warms: writes the cache, returns empty content with stop_reason max_tokens; with stream → 400", async () => {
    const warm = await send({ max_tokens: 0, system: cachedSystem(2000), messages: hi });
    expect(warm.json).toMatchObject({ content: [], stop_reason: "max_tokens", usage: { cache_creation_input_tokens: 2000, output_tokens: 0 } });
    expect((await send({ system: cachedSystem(2000), messages: hi })).json.usage.cache_read_input_tokens).toBe(2000);
    expect((await send({ max_tokens: 0, stream: true, system: cachedSystem(2000), messages: hi })).status).toBe(400);
  });

  test("count_tokens returns the total prompt without a cache split", async () => {
    const { json } = await post(`${emu.url}/anthropic/v1/messages/count_tokens`, { model: "claude-sonnet-4-5", system: cachedSystem(700), messages: hi });
    expect(json).toEqual({ input_tokens: 701 });
  });
});
