/**
 * Cache state shared through the state file (sequential and concurrent
 * emulators), the clock offset from the environment, deterministic and
 * scripted answers, and the inspection endpoints.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultStatePath } from "../../src/emulator/index.ts";
import { emulator, post, tokens } from "./_helpers.ts";

const cached = { model: "claude-sonnet-4-6", max_tokens: 50, system: [{ type: "text", text: tokens(2000), cache_control: { type: "ephemeral" } }], messages: [{ role: "user", content: "hi" }] };

describe("state file", () => {
  test("a second emulator on the same file reads the first one's entry; in-memory state does not", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "cachet-state-")), "emulator", "cache.sqlite");
    const first = await emulator({}, file);
    expect((await post(`${first.url}/v1/messages`, cached)).json.usage.cache_creation_input_tokens).toBe(2000);
    await first.stop();
    const second = await emulator({}, file);
    expect((await post(`${second.url}/v1/messages`, cached)).json.usage.cache_read_input_tokens).toBe(2000);
    await second.stop();
    const memory = await emulator();
    expect((await post(`${memory.url}/v1/messages`, cached)).json.usage.cache_read_input_tokens).toBe(0);
    await memory.stop();
  });

  test("two emulators running at once share one file", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "cachet-state-")), "cache.sqlite");
    const [a, b] = await Promise.all([emulator({}, file), emulator({}, file)]);
    await post(`${a.url}/v1/messages`, cached);
    expect((await post(`${b.url}/v1/messages`, cached)).json.usage.cache_read_input_tokens).toBe(2000);
    await Promise.all([a.stop(), b.stop()]);
  });

  test("CACHET_EMULATOR_CLOCK_OFFSET_MS ages entries for the whole process", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "cachet-state-")), "cache.sqlite");
    const now = await emulator({}, file);
    await post(`${now.url}/v1/messages`, cached);
    await now.stop();
    const later = await emulator({ CACHET_EMULATOR_CLOCK_OFFSET_MS: String(6 * 60_000) }, file);
    expect((await post(`${later.url}/v1/messages`, cached)).json.usage.cache_read_input_tokens).toBe(0);
    await later.stop();
  });

  test("the default state path is <data dir>/emulator/cache.sqlite", () => {
    expect(defaultStatePath({ CACHET_HOME: "/tmp/home" })).toBe("/tmp/home/emulator/cache.sqlite");
  });
});

describe("answers", () => {
  test("the same request gets the same answer; CACHET_EMULATOR_ANSWER_TOKENS sets its length", async () => {
    const emu = await emulator({ CACHET_EMULATOR_ANSWER_TOKENS: "40" });
    const body = { model: "gpt-5", messages: [{ role: "user", content: "tell me" }] };
    const a = await post(`${emu.url}/v1/chat/completions`, body);
    const b = await post(`${emu.url}/v1/chat/completions`, body);
    const c = await post(`${emu.url}/v1/chat/completions`, { ...body, messages: [{ role: "user", content: "something else" }] });
    expect(a.json.choices[0].message.content).toBe(b.json.choices[0].message.content);
    expect(a.json.choices[0].message.content).not.toBe(c.json.choices[0].message.content);
    expect(a.json.usage.completion_tokens).toBeGreaterThanOrEqual(38);
    expect(a.json.usage.completion_tokens).toBeLessThanOrEqual(40);
    const capped = await post(`${emu.url}/v1/chat/completions`, { ...body, max_completion_tokens: 5 });
    expect(capped.json.usage.completion_tokens).toBeLessThanOrEqual(5);
    expect(capped.json.choices[0].finish_reason).toBe("length");
    await emu.stop();
  });

  test("scripted answers are picked by the number of assistant turns in the request", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cachet-script-"));
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ text: "first" }, { text: "second" }]));
    const emu = await emulator({ CACHET_EMULATOR_SCRIPT: script });
    const turn0 = await post(`${emu.url}/v1/chat/completions`, { model: "gpt-5", messages: [{ role: "user", content: "a" }] });
    const turn1 = await post(`${emu.url}/v1/chat/completions`, { model: "gpt-5", messages: [{ role: "user", content: "a" }, { role: "assistant", content: "first" }, { role: "user", content: "b" }] });
    expect([turn0.json.choices[0].message.content, turn1.json.choices[0].message.content]).toEqual(["first", "second"]);
    await emu.stop();
  });

  test("an invalid script is a 400 naming the file and the problem", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cachet-script-"));
    const script = join(dir, "bad.json");
    writeFileSync(script, JSON.stringify([{ tool_calls: [{ name: "f", arguments: "not json" }] }]));
    const emu = await emulator();
    const r = await post(`${emu.url}/v1/messages`, cached, { "x-emulator-script": script });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain(script);
    expect(r.json.error.message).toContain("arguments must be a JSON object");
    const missing = await post(`${emu.url}/v1/messages`, cached, { "x-emulator-script": join(dir, "none.json") });
    expect(missing.json.error.message).toContain("cannot be read");
    await emu.stop();
  });
});

describe("inspection", () => {
  test("requests (headers minus secrets, usage), counters and reset, in process and over HTTP", async () => {
    const emu = await emulator();
    await post(`${emu.url}/anthropic/v1/messages`, cached, { "x-api-key": "secret", authorization: "Bearer secret" });
    await post(`${emu.url}/anthropic/v1/messages`, cached);
    const [first, second] = emu.requests();
    expect(first).toMatchObject({ path: "/anthropic/v1/messages", provider: "anthropic", protocol: "anthropic-messages", model: "claude-sonnet-4-6", status: 200 });
    expect(first!.headers["x-api-key"]).toBeUndefined();
    expect(first!.headers.authorization).toBeUndefined();
    expect((first!.body as { system: unknown[] }).system).toHaveLength(1);
    expect(second!.usage).toMatchObject({ cache_read_input_tokens: 2000 });
    expect(emu.counters()).toMatchObject({ requests: 2, "requests.anthropic": 2, "status.200": 2, "tokens.cache_read": 2000, "tokens.cache_write": 2000, "cache.hits": 1 });
    const overHttp = (await (await fetch(`${emu.url}/_emulator/requests?limit=1`)).json()) as unknown[];
    expect(overHttp).toHaveLength(1);
    expect((await (await fetch(`${emu.url}/_emulator/counters`)).json()) as object).toMatchObject({ requests: 2 });
    await fetch(`${emu.url}/_emulator/reset`, { method: "POST" });
    expect(emu.requests()).toHaveLength(0);
    expect((await post(`${emu.url}/anthropic/v1/messages`, cached)).json.usage.cache_read_input_tokens).toBe(0);
    await emu.stop();
  });
});
