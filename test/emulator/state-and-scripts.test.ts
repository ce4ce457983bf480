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
    expect(missing.json.error.message).toContain(`emulator script ${join(dir, "none.json")}: no such file`);
    await emu.stop();
  });
});

describe("scripted server-side abilities", () => {
  async function scripted(answers: unknown[], env: Record<string, string> = {}) {
    const dir = mkdtempSync(join(tmpdir(), "cachet-script-"));
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify(answers));
    return emulator({ CACHET_EMULATOR_SCRIPT: script, ...env });
  }

  test("web search: blocks per query, max_uses enforced, searches billed in server_tool_use, results counted as input", async () => {
    const emu = await scripted([{ web_search: ["a", "b", "c"], text: "done" }]);
    const body = { model: "claude-sonnet-4-6", max_tokens: 100, messages: [{ role: "user", content: "search" }] };
    const plain = await post(`${emu.url}/v1/messages`, { ...body, tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 2 }] });
    expect(plain.status).toBe(200);
    expect(plain.json.content.map((b: { type: string }) => b.type)).toEqual(["server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result", "text"]);
    expect(plain.json.content[5].content).toEqual({ type: "web_search_tool_result_error", error_code: "max_uses_exceeded" });
    expect(plain.json.usage.server_tool_use).toEqual({ web_search_requests: 2, web_fetch_requests: 0 });
    expect(plain.json.stop_reason).toBe("end_turn");
    // Streamed: message_start knows only the prompt; message_delta's cumulative usage adds the results and the count.
    const stream = await fetch(`${emu.url}/v1/messages`, { method: "POST", body: JSON.stringify({ ...body, stream: true, tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 2 }] }) });
    const events = (await stream.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
    const start = events.find((e) => e.type === "message_start").message.usage;
    const delta = events.find((e) => e.type === "message_delta").usage;
    expect(start.server_tool_use).toBeUndefined();
    expect(delta.server_tool_use).toEqual({ web_search_requests: 2, web_fetch_requests: 0 });
    expect(delta.input_tokens).toBeGreaterThan(start.input_tokens);
    expect(delta.input_tokens).toBe(plain.json.usage.input_tokens);
    // Without the tool declared, the script is a test's mistake.
    const undeclared = await post(`${emu.url}/v1/messages`, body);
    expect(undeclared.status).toBe(400);
    expect(undeclared.json.error.message).toContain("declares no web search server tool");
    await emu.stop();
  });

  test("image output: an inlineData part per image and IMAGE tokens in candidatesTokensDetails; refused for a text-only model", async () => {
    const emu = await scripted([{ text: "a cat", images: 2 }]);
    const ok = await post(`${emu.url}/v1beta/models/gemini-2.5-flash-image:generateContent`, { contents: [{ role: "user", parts: [{ text: "draw" }] }] });
    expect(ok.status).toBe(200);
    const parts = ok.json.candidates[0].content.parts;
    expect(parts.filter((p: Record<string, unknown>) => "inlineData" in p)).toHaveLength(2);
    expect(parts[1].inlineData.mimeType).toBe("image/png");
    const details = ok.json.usageMetadata.candidatesTokensDetails;
    expect(details.find((d: { modality: string }) => d.modality === "IMAGE").tokenCount).toBe(2 * 1290);
    expect(ok.json.usageMetadata.candidatesTokenCount).toBe(details[0].tokenCount + details[1].tokenCount);
    const textOnly = await post(`${emu.url}/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [{ role: "user", parts: [{ text: "draw" }] }] });
    expect(textOnly.status).toBe(400);
    expect(textOnly.json.error.message).toContain("does not output images");
    await emu.stop();
  });

  test("OpenRouter BYOK: cost is the fee (0 while free, 5% after), the upstream price is upstream_inference_cost", async () => {
    const emu = await emulator();
    const body = { model: "anthropic/claude-sonnet-4.5", messages: [{ role: "user", content: "hi" }] };
    const credits = (await post(`${emu.url}/openrouter/api/v1/chat/completions`, body)).json.usage;
    const free = (await post(`${emu.url}/openrouter/api/v1/chat/completions`, body, { "x-emulator-byok": "free" })).json.usage;
    const fee = (await post(`${emu.url}/openrouter/api/v1/chat/completions`, body, { "x-emulator-byok": "fee" })).json.usage;
    expect(credits).toMatchObject({ is_byok: false, cost_details: { upstream_inference_cost: null } });
    expect(free).toMatchObject({ is_byok: true, cost: 0, cost_details: { upstream_inference_cost: credits.cost } });
    expect(fee.is_byok).toBe(true);
    expect(fee.cost).toBeCloseTo(credits.cost * 0.05, 12);
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
