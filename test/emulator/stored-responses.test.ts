/**
 * The emulator's Responses API conversation state (src/emulator/stored-responses.ts):
 * a stored response continued with `previous_response_id` is answered like
 * the whole conversation sent at once (same answer, same usage), `store:
 * false` keeps nothing, and an unknown or forgotten id gets OpenAI's 400;
 * a conversation longer than one stored part comes back exactly.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CacheStore, RESPONSE_PART_CHARS } from "../../src/emulator/cache-store.ts";
import type { EmulatorHandle } from "../../src/emulator/index.ts";
import { emulator, post, tokens } from "./_helpers.ts";

const CLOCK = { "x-emulator-clock-ms": String(Date.UTC(2026, 0, 1)) };
const SYSTEM = { type: "message", role: "system", content: [{ type: "input_text", text: `You are terse.${tokens(1200)}` }] };
const first = { type: "message", role: "user", content: [{ type: "input_text", text: "What is a prompt cache?" }] };
const second = { type: "message", role: "user", content: [{ type: "input_text", text: "And how long does it live?" }] };
const body = (input: unknown[], extra: Record<string, unknown> = {}) => ({ model: "gpt-4.1", input, prompt_cache_key: "s1", ...extra });

const started: EmulatorHandle[] = [];
async function fresh(): Promise<string> {
  const handle = await emulator();
  started.push(handle);
  return `${handle.url}/openai/v1/responses`;
}
afterAll(async () => {
  for (const handle of started) await handle.stop();
});

describe("emulator: stored Responses API responses", () => {
  test("a continued response is answered like the whole conversation: same answer, same usage", async () => {
    const incremental = await fresh();
    const whole = await fresh();
    const a1 = await post(incremental, body([SYSTEM, first]), CLOCK);
    const b1 = await post(whole, body([SYSTEM, first]), CLOCK);
    expect(a1.status).toBe(200);
    expect(a1.json.store).toBe(true);
    const text = a1.json.output[0].content[0].text as string;
    expect(text.length).toBeGreaterThan(0);

    const a2 = await post(incremental, body([second], { previous_response_id: a1.json.id }), CLOCK);
    const b2 = await post(whole, body([SYSTEM, first, { type: "message", role: "assistant", content: b1.json.output[0].content[0].text }, second]), CLOCK);
    expect(a2.status).toBe(200);
    expect(a2.json.previous_response_id).toBe(a1.json.id);
    expect(a2.json.output[0].content[0].text).toBe(b2.json.output[0].content[0].text);
    expect(a2.json.usage).toEqual(b2.json.usage);
    // The whole context is billed as input, the stored prefix read from the cache.
    expect(a2.json.usage.input_tokens).toBeGreaterThan(1200);
    expect(a2.json.usage.input_tokens_details.cached_tokens).toBeGreaterThan(1024);

    // A chain: the third request continues the second, which continued the first.
    const third = { type: "message", role: "user", content: [{ type: "input_text", text: "Thanks." }] };
    const a3 = await post(incremental, body([third], { previous_response_id: a2.json.id }), CLOCK);
    const b3 = await post(whole, body([SYSTEM, first, { type: "message", role: "assistant", content: text }, second, { type: "message", role: "assistant", content: b2.json.output[0].content[0].text }, third]), CLOCK);
    expect(a3.json.usage).toEqual(b3.json.usage);
  });

  test("an unknown id, a forgotten one and one stored with store: false get the documented 400", async () => {
    const url = await fresh();
    const notFound = (id: string) => ({ error: { message: `Previous response with id '${id}' not found.`, type: "invalid_request_error", param: "previous_response_id", code: "previous_response_not_found" } });
    const unknown = await post(url, body([second], { previous_response_id: "resp_nope" }), CLOCK);
    expect(unknown.status).toBe(400);
    expect(unknown.json).toEqual(notFound("resp_nope"));

    const unstored = await post(url, body([SYSTEM, first], { store: false }), CLOCK);
    expect(unstored.json.store).toBe(false);
    expect((await post(url, body([second], { previous_response_id: unstored.json.id }), CLOCK)).json).toEqual(notFound(unstored.json.id));

    const kept = await post(url, body([SYSTEM, first]), CLOCK);
    expect((await post(url, body([second], { previous_response_id: kept.json.id }), CLOCK)).status).toBe(200);
    const forgotten = await post(url, body([second], { previous_response_id: kept.json.id }), { ...CLOCK, "x-emulator-forget-responses": kept.json.id });
    expect(forgotten.status).toBe(400);
    expect(forgotten.json).toEqual(notFound(kept.json.id));
  });

  test("a conversation of several stored parts comes back exactly, through another connection too, and is replaced whole", () => {
    const path = join(mkdtempSync(join(tmpdir(), "cachet-emu-stored-")), "cache.sqlite");
    const writer = new CacheStore(path);
    const reader = new CacheStore(path);
    try {
      // Escapes, Latin-1, CJK, surrogate pairs and a lone surrogate, over three parts: slices fall anywhere in them.
      const unit = 'line "one"\n\ttab\u0001 café 缓存 😀🚀 \ud800 end\\ ';
      const text = unit.repeat(Math.ceil((3 * RESPONSE_PART_CHARS) / unit.length));
      const items = [
        { type: "message", role: "user", content: [{ type: "input_text", text }] },
        { id: "msg_emu1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "ok", annotations: [], logprobs: [] }] },
        { type: "function_call_output", call_id: "call_1", output: text.slice(0, 1000), extra: null, n: 1.5, flag: false },
      ];
      writer.putResponse("resp_big", items);
      expect(reader.response("resp_big")).toEqual(items);

      const small = [{ type: "message", role: "user", content: "short" }];
      writer.putResponse("resp_big", small);
      expect(reader.response("resp_big")).toEqual(small);
      writer.forgetResponses(["resp_big"]);
      expect(reader.response("resp_big")).toBeUndefined();
    } finally {
      writer.close();
      reader.close();
    }
  });
});
