/**
 * The contract every provider plugin must pass: each registered provider is
 * loaded through the plugin host (public API only) and checked for render
 * determinism, append-only prefixes, overlay placement, exact tool-call
 * arguments, streaming assembly, usage hand-over, and error mapping.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmulator } from "../src/emulator/index.ts";
import { runContract, type ContractCheck } from "../src/plugin/contract-kit.ts";
import { PluginHost } from "../src/plugin/host.ts";
import type { Message, ProviderSpec, RequestContext, StreamEvent } from "../src/plugin/index.ts";
import { byteReads, collect, fixture, jsonResponse, replayFetch, streamResponse } from "../test/fixtures/wire/replay.ts";
import { builtinPlugins } from "./index.ts";

const KEY = "sk-test-SECRET-0123456789abcdef";

/** The arguments the model streamed, byte for byte (note the space and the key order). */
const RAW_ARGUMENTS = '{"unit": "celsius","city":"Tokyo"}';

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

  test("spec names env vars, a base URL and an emulator path", () => {
    expect(spec().env.length).toBeGreaterThan(0);
    expect(spec().emulatorPath.startsWith("/")).toBe(true);
    if (id !== "openai-compatible") expect(spec().defaultBaseUrl).toMatch(/^https:\/\//);
  });

  test("render is deterministic: the same context gives the same bytes", () => {
    const a = adapter().render(context(turnMessages(2), "budget: 10"));
    const b = adapter().render(context(turnMessages(2), "budget: 10"));
    expect(JSON.stringify(b.body)).toBe(JSON.stringify(a.body));
    expect(b.segments).toEqual(a.segments);
  });

  test("request N's segments are a byte-identical prefix of request N+1's; the overlay moves to the new tail", () => {
    const n = adapter().render(context(turnMessages(2), "budget: 10"));
    const n1 = adapter().render(context(turnMessages(3), "budget: 9"));
    const stable = n.segments.filter((s) => s.kind !== "overlay");
    expect(stable.length).toBeGreaterThan(5);
    expect(n1.segments.slice(0, stable.length)).toEqual(stable);
    for (const segment of stable) {
      expect(JSON.stringify(at(n1.body, segment.path))).toBe(JSON.stringify(at(n.body, segment.path)));
    }
    // The overlay: last segment, inside the last message, absent from N+1.
    const overlay = n.segments[n.segments.length - 1]!;
    expect(overlay.kind).toBe("overlay");
    expect(JSON.stringify(at(n.body, overlay.path))).toContain("budget: 10");
    expect(JSON.stringify(n1.body)).not.toContain("budget: 10");
    expect(JSON.stringify(n1.body)).toContain("budget: 9");
    const list = overlay.path[0]!;
    expect(overlay.path[1]).toBe((n.body[list] as unknown[]).length - 1);
    expect(JSON.stringify(n.body.system ?? n.body.systemInstruction ?? "")).not.toContain("budget");
  });

  test("tool-call arguments are replayed as the model produced them", () => {
    const wire = adapter().render(context(turnMessages(1)));
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
    const wire = a.render(context(turnMessages(1)));
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
    const error = await sendError(a.send(a.render(context(turnMessages(1))), { signal: new AbortController().signal }));
    expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 429, retryable: true, retryAfterMs: 3000 });
    expect(error.message).not.toContain(KEY);
    expect(String(error.hint ?? "")).not.toContain(KEY);
  });

  test("a 400 is not retryable and a 401 echoing the key hides it", async () => {
    const body = { error: { type: "authentication_error", message: `Incorrect API key provided: ${KEY}` } };
    const { fetch } = replayFetch([jsonResponse(body, { status: 401 }), jsonResponse({ error: { message: "bad request" } }, { status: 400 })]);
    const a = adapter(fetch);
    const wire = a.render(context(turnMessages(1)));
    const unauthorized = await sendError(a.send(wire, { signal: new AbortController().signal }));
    expect(unauthorized).toMatchObject({ code: "PROVIDER_HTTP", status: 401, retryable: false });
    expect(unauthorized.message).not.toContain(KEY);
    expect(unauthorized.message).toContain("[redacted]");
    const bad = await sendError(a.send(wire, { signal: new AbortController().signal }));
    expect(bad).toMatchObject({ code: "PROVIDER_HTTP", status: 400, retryable: false });
  });
});

/** A model each built-in provider's emulator route serves. */
const KIT_MODELS: Record<string, string> = {
  anthropic: "claude-sonnet-4-5",
  openai: "gpt-4o",
  "openai-responses": "gpt-5",
  google: "gemini-2.5-flash",
  deepseek: "deepseek-chat",
  moonshotai: "kimi-k2",
  alibaba: "qwen-plus",
  openrouter: "anthropic/claude-sonnet-4.5",
  xai: "grok-4",
  "openai-compatible": "acme-1",
};

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
    const checks = await runContract(host, id, { emulatorUrl: emulator.url, models: KIT_MODELS });
    results.set(id, checks);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.length).toBe(6);
  });

  test("the first-party providers' usage mappings round-trip their documented examples", () => {
    for (const id of ["anthropic", "openai", "openai-responses", "google"]) {
      expect(results.get(id)?.find((c) => c.check.startsWith("usage() round-trips"))?.detail).toBe("1 example(s)");
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

function at(body: unknown, path: (string | number)[]): unknown {
  let node = body;
  for (const key of path) node = (node as Record<string | number, unknown>)[key];
  return node;
}

/**
 * A conversation with `turns` completed tool round trips, ending with a new
 * user message. Turn k: user asks, assistant calls a tool with RAW_ARGUMENTS,
 * user returns the result, assistant answers.
 */
function turnMessages(turns: number): Message[] {
  const out: Message[] = [];
  for (let k = 1; k <= turns; k++) {
    out.push({ id: `u${k}`, role: "user", content: [{ type: "text", text: `Weather in Tokyo, question ${k}?` }] });
    out.push({ id: `a${k}`, role: "assistant", content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: `call_${k}`, name: "get_weather", arguments: RAW_ARGUMENTS }] });
    out.push({ id: `r${k}`, role: "user", content: [{ type: "tool_result", toolUseId: `call_${k}`, content: `{"temp":${20 + k}}` }] });
    out.push({ id: `b${k}`, role: "assistant", content: [{ type: "text", text: `It is ${20 + k} °C.` }] });
  }
  out.push({ id: `u${turns + 1}`, role: "user", content: [{ type: "text", text: `Weather in Tokyo, question ${turns + 1}?` }] });
  return out;
}

function context(messages: Message[], overlay?: string): RequestContext {
  return {
    model: "test-model",
    provider: "test",
    prefix: {
      system: [
        { id: "sys-1", text: "You are a weather assistant." },
        { id: "sys-2", text: "Answer in one sentence." },
      ],
      tools: [
        {
          name: "get_weather",
          description: "Current weather for a city",
          parameters: { type: "object", properties: { unit: { type: "string", enum: ["celsius", "fahrenheit"] }, city: { type: "string" } }, required: ["city", "unit"] },
        },
      ],
      fingerprint: "0000000000000000",
    },
    summary: [],
    messages,
    overlay,
    generation: { maxTokens: 256, temperature: 0, stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
  };
}

