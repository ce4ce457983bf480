/**
 * The contract every provider plugin must pass: each registered provider is
 * loaded through the plugin host (public API only) and run through the
 * contract kit third-party plugins get (`cachet plugins test`: render
 * determinism, append-only prefixes, overlay placement, emulator streaming,
 * usage examples, cache markers over 10 turns), plus checks against recorded
 * provider streams: exact tool-call arguments, streaming assembly, usage
 * hand-over, and error mapping.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmulator } from "../src/emulator/index.ts";
import { RAW_ARGUMENTS, runContract, toolContext, type ContractCheck } from "../src/plugin/contract-kit.ts";
import { PluginHost } from "../src/plugin/host.ts";
import type { ProviderSpec, StreamEvent } from "../src/plugin/index.ts";
import { byteReads, collect, fixture, jsonResponse, replayFetch, streamResponse } from "../test/fixtures/wire/replay.ts";
import { EMULATOR_MODELS } from "./emulator-models.ts";
import { builtinPlugins } from "./index.ts";

const KEY = "sk-test-SECRET-0123456789abcdef";


/** Per protocol: the recorded stream and what it must assemble to. */
const STREAMS: Record<string, { file: string; text: string; arguments: string; usage: Record<string, number> }> = {
  "anthropic-messages": { file: "anthropic-stream.sse", text: "Hello café", arguments: RAW_ARGUMENTS, usage: { input: 9, cacheRead: 1, output: 16 } },
  "openai-chat": { file: "openai-chat-stream.sse", text: "Hello café", arguments: RAW_ARGUMENTS, usage: { input: 28, cacheRead: 0, output: 38 } },
  "openai-responses": { file: "openai-responses-stream.sse", text: "Hello café", arguments: RAW_ARGUMENTS, usage: { input: 60, cacheRead: 40, output: 20 } },
  // Gemini sends args as an object: the adapter's text is its compact JSON, keys in the model's order.
  gemini: { file: "gemini-stream.sse", text: "Hello café", arguments: '{"unit":"celsius","city":"Tokyo"}', usage: { input: 30, cacheRead: 20, output: 10 } },
};

let host: PluginHost;
let specs: ProviderSpec[];

beforeAll(async () => {
  host = new PluginHost();
  for (const [name, load] of Object.entries(builtinPlugins)) {
    try {
      const mod = (await load()) as { default: unknown };
      await host.load(mod.default, `builtin:${name}`);
    } catch (cause) {
      host.failures.push({ plugin: name, message: String(cause) });
    }
  }
  specs = [...host.providers.values()].map((o) => o.value);
});

test("every built-in plugin loads and registers its providers", () => {
  expect(host.failures).toEqual([]);
  expect(specs.map((s) => s.id).sort()).toEqual(
    ["alibaba", "anthropic", "deepseek", "google", "moonshotai", "openai", "openai-compatible", "openai-responses", "openrouter", "xai"],
  );
});

const PROVIDER_IDS = ["anthropic", "openai", "openai-responses", "google", "deepseek", "moonshotai", "alibaba", "openrouter", "xai", "openai-compatible"];

describe.each(PROVIDER_IDS)("provider %s", (id) => {
  const spec = () => host.provider(id);
  const adapter = (fetch: typeof globalThis.fetch = replayFetch([]).fetch) =>
    host.createAdapter(id, { providerId: id, apiKey: KEY, baseUrl: `http://127.0.0.1:9${spec().emulatorPath}`, fetch, options: {} });

  test("a text block's provider signature is replayed on its text part by the Gemini wire only; every other wire renders it as if unsigned", () => {
    const signature = "sig-text-only-for-gemini";
    const unsigned = toolContext(id, "test-model", 2);
    const signed = structuredClone(unsigned);
    signed.messages.find((m) => m.id === "b1")!.content = [{ type: "text", text: "It is 21 °C.", signature }];
    const body = JSON.stringify(adapter().render(signed).body);
    expect(body).toContain("It is 21 °C.");
    if (spec().protocol === "gemini") {
      expect(body).toContain(JSON.stringify({ text: "It is 21 °C.", thoughtSignature: signature }));
      expect(body.replace(`,"thoughtSignature":"${signature}"`, "")).toBe(JSON.stringify(adapter().render(unsigned).body));
    } else {
      expect(body).not.toContain(signature);
      expect(body).toBe(JSON.stringify(adapter().render(unsigned).body));
    }
  });

  test("spec names env vars, a base URL and an emulator path", () => {
    expect(spec().env.length).toBeGreaterThan(0);
    expect(spec().emulatorPath.startsWith("/")).toBe(true);
    if (id !== "openai-compatible") expect(spec().defaultBaseUrl).toMatch(/^https:\/\//);
  });

  test("tool-call arguments are replayed as the model produced them", () => {
    const wire = adapter().render(toolContext("test", "test-model", 1));
    const text = JSON.stringify(wire.body);
    if (spec().protocol === "openai-chat" || spec().protocol === "openai-responses") {
      expect(text).toContain(JSON.stringify(RAW_ARGUMENTS));
    } else {
      // Object wires: the parsed object keeps the model's key order.
      expect(text).toContain('{"unit":"celsius","city":"Tokyo"}');
    }
  });

  test("streams text, tool calls with exact arguments, and hands the raw usage to usage()", async () => {
    const expected = STREAMS[spec().protocol]!;
    const { fetch, requests } = replayFetch([streamResponse(byteReads(fixture(expected.file), { every: 5 }), { headers: { "request-id": "req_1", "x-request-id": "req_1" } })]);
    const a = adapter(fetch);
    const wire = a.render(toolContext("test", "test-model", 1));
    const events = await collect(a.send(wire, { signal: new AbortController().signal }));
    expect(text(events)).toBe(expected.text);
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls.map((c) => c.arguments)).toEqual([expected.arguments]);
    const finish = events[events.length - 1]!;
    expect(finish.type).toBe("finish");
    if (finish.type !== "finish") return;
    expect(finish.reason).toBe("tool_calls");
    expect(finish.requestId).toBeTruthy();
    expect(a.usage(finish.rawUsage).usage).toMatchObject(expected.usage);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url.startsWith(`http://127.0.0.1:9${spec().emulatorPath}`)).toBe(true);
    if (spec().protocol !== "gemini") expect(requests[0]!.body).toBe(JSON.stringify(wire.body));
  });

  test("a 429 with retry-after is retryable with retryAfterMs; the key never appears", async () => {
    const body = { error: { type: "rate_limit_error", message: `Rate limited for key ${KEY}`, code: 429, status: "RESOURCE_EXHAUSTED" } };
    const { fetch } = replayFetch([jsonResponse(body, { status: 429, headers: { "retry-after": "3" } })]);
    const a = adapter(fetch);
    const error = await sendError(a.send(a.render(toolContext("test", "test-model", 1)), { signal: new AbortController().signal }));
    expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 429, retryable: true, retryAfterMs: 3000 });
    expect(error.message).not.toContain(KEY);
    expect(String(error.hint ?? "")).not.toContain(KEY);
  });

  test("a 400 is not retryable and a 401 echoing the key hides it", async () => {
    const body = { error: { type: "authentication_error", message: `Incorrect API key provided: ${KEY}` } };
    const { fetch } = replayFetch([jsonResponse(body, { status: 401 }), jsonResponse({ error: { message: "bad request" } }, { status: 400 })]);
    const a = adapter(fetch);
    const wire = a.render(toolContext("test", "test-model", 1));
    const unauthorized = await sendError(a.send(wire, { signal: new AbortController().signal }));
    expect(unauthorized).toMatchObject({ code: "PROVIDER_HTTP", status: 401, retryable: false });
    expect(unauthorized.message).not.toContain(KEY);
    expect(unauthorized.message).toContain("[redacted]");
    const bad = await sendError(a.send(wire, { signal: new AbortController().signal }));
    expect(bad).toMatchObject({ code: "PROVIDER_HTTP", status: 400, retryable: false });
  });
});

/** The kit `cachet plugins test` runs on third-party plugins: every built-in provider passes every check. */
describe("contract kit (src/plugin/contract-kit.ts)", () => {
  let emulator: { url: string; stop: () => unknown };
  const results = new Map<string, ContractCheck[]>();
  beforeAll(async () => {
    process.env.CACHET_HOME ??= mkdtempSync(join(tmpdir(), "cachet-contract-kit-"));
    emulator = await startEmulator({ statePath: null });
  });
  afterAll(async () => {
    await emulator?.stop();
  });

  test.each(PROVIDER_IDS)("%s passes every check", async (id) => {
    const checks = await runContract(host, id, { emulatorUrl: emulator.url, models: EMULATOR_MODELS });
    results.set(id, checks);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.length).toBe(6);
  });

  test("the first-party providers' usage mappings round-trip their documented examples", () => {
    // Anthropic: prompt caching, and server-side compaction's iterations.
    const documented: Record<string, number> = { anthropic: 2, openai: 1, "openai-responses": 1, google: 1 };
    for (const [id, n] of Object.entries(documented)) {
      expect(results.get(id)?.find((c) => c.check.startsWith("usage() round-trips"))?.detail).toBe(`${n} example(s)`);
    }
  });

  test("the breakpoint providers' strategies place markers, and stay within 4 over 10 turns", () => {
    for (const id of ["anthropic", "alibaba"]) {
      const strategy = results.get(id)?.find((c) => c.check.startsWith("cache strategies"));
      expect(strategy?.detail).toStartWith("strategies: ");
    }
  });
});

// ---- helpers ----

function text(events: StreamEvent[]): string {
  return events.map((e) => (e.type === "text" ? e.delta : "")).join("");
}

async function sendError(events: AsyncIterable<StreamEvent>): Promise<Error & { code?: string; status?: number; retryable?: boolean; retryAfterMs?: number; hint?: string }> {
  try {
    await collect(events);
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the send to fail");
}

