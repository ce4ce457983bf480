import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startReceiver, type Receiver } from "../../test/fixtures/otlp/receiver.ts";
import type { StablePrefix } from "../context/types.ts";
import { isCachetError } from "../errors.ts";
import { openStore, type Store } from "../session/store.ts";
import type { LedgerRow } from "../session/types.ts";
import { exportOtlp, tracesEndpoint } from "./export-otlp.ts";

let home: string;
let store: Store;
let receiver: Receiver;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "cachet-otlp-"));
  store = openStore(join(home, "cachet.db"));
  receiver = startReceiver();
});

afterEach(async () => {
  await receiver.stop();
  store.close();
  rmSync(home, { recursive: true, force: true });
});

const PREFIX: StablePrefix = { system: [], tools: [], fingerprint: "f0" } as unknown as StablePrefix;

function session(): string {
  const s = store.createSession({ model: "anthropic/claude-sonnet-4-6" });
  store.setPrefix(s.id, PREFIX, null);
  return s.id;
}

function row(id: string, sessionId: string, i: number, extra: Partial<LedgerRow> = {}): LedgerRow {
  return {
    id, sessionId, prefixVersion: 1, role: i === 0 ? "main" : "subagent", provider: "anthropic", model: "claude-sonnet-4-6", protocol: "anthropic-messages",
    startedAt: 1_764_500_000_000 + i * 10_000, firstTokenAt: null, finishedAt: 1_764_500_000_900 + i * 10_000, latencyMs: 900, ttftMs: null, outputTps: null,
    usage: { input: 12 + i, cacheRead: 3000 * i, cacheWrite5m: 40, cacheWrite1h: 0, output: 80, reasoning: undefined },
    rawUsage: null, costUsd: 0.0019 + i / 1000, providerCostUsd: null, providerRequestId: `msg_${id}`, affinityKey: sessionId, cacheMode: "auto", cacheTtl: "5m",
    chain: [], expectedCacheRead: null, cacheableMax: i === 0 ? null : 4000, status: "ok", error: null, messageId: null, finishReason: "stop",
    ...extra,
  };
}

describe("cachet export --otlp", () => {
  test("the receiver decodes exactly the ledger rows as spans with gen_ai.* and cachet.* attributes; a second export sends nothing", async () => {
    const s = session();
    const rows = [row("r_a", s, 0), row("r_b", s, 1), row("r_c", s, 2, { status: "error", error: "HTTP 529", usage: { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined }, costUsd: null, finishReason: null })];
    for (const r of rows) store.recordRequest(r);

    const first = await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    expect(first).toEqual({ endpoint: `${receiver.url}/v1/traces`, exported: 3, busy: false });
    expect(receiver.requests).toHaveLength(1);
    const [request] = receiver.requests;
    expect(request!.path).toBe("/v1/traces");
    expect(request!.contentType).toBe("application/x-protobuf");
    const spans = request!.spans;
    expect(spans.map((sp) => sp.attributes["cachet.request"])).toEqual(["r_a", "r_b", "r_c"]);
    // One trace per session, one span per request; 16-byte and 8-byte ids.
    expect(new Set(spans.map((sp) => sp.traceId)).size).toBe(1);
    expect(spans[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(spans.map((sp) => sp.spanId)).size).toBe(3);
    expect(spans[0]!.resource["service.name"]).toBe("cachet");

    const b = spans[1]!;
    expect(b.name).toBe("chat claude-sonnet-4-6");
    expect(b.kind).toBe(3); // SPAN_KIND_CLIENT on the wire
    expect(b.startMs).toBe(rows[1]!.startedAt);
    expect(b.endMs).toBe(rows[1]!.finishedAt!);
    expect(b.statusCode).toBe(1);
    expect(b.attributes).toEqual({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": "claude-sonnet-4-6",
      "gen_ai.response.model": "claude-sonnet-4-6",
      "gen_ai.response.id": "msg_r_b",
      "gen_ai.response.finish_reasons": ["stop"],
      // input_tokens counts cached tokens too (the conventions' definition): 13 + 3000 + 40.
      "gen_ai.usage.input_tokens": 3053,
      "gen_ai.usage.output_tokens": 80,
      "gen_ai.usage.cache_read.input_tokens": 3000,
      "gen_ai.usage.cache_creation.input_tokens": 40,
      "cachet.cost_usd": 0.0029,
      "cachet.cache_efficiency": 0.75,
      "cachet.session": s,
      "cachet.role": "subagent",
      "cachet.request": "r_b",
      "cachet.status": "ok",
    });
    const c = spans[2]!;
    expect(c.statusCode).toBe(2);
    expect(c.attributes["error.type"]).toBe("error");
    expect(c.attributes["gen_ai.usage.input_tokens"]).toBeUndefined();
    expect(c.attributes["cachet.cost_usd"]).toBeUndefined();

    const second = await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    expect(second.exported).toBe(0);
    expect(receiver.requests).toHaveLength(1);

    // Only what was recorded since goes next time, with the same ids a collector can deduplicate on.
    store.recordRequest(row("r_d", s, 3));
    const third = await exportOtlp(store, { url: receiver.url, format: "json", withContent: false });
    expect(third.exported).toBe(1);
    expect(receiver.requests[1]!.contentType).toBe("application/json");
    expect(receiver.requests[1]!.spans.map((sp) => sp.attributes["cachet.request"])).toEqual(["r_d"]);
    expect(receiver.requests[1]!.spans[0]!.traceId).toBe(spans[0]!.traceId);
  });

  test("span and trace ids are stable: another destination receives the same ids", async () => {
    const s = session();
    store.recordRequest(row("r_a", s, 0));
    await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    const other = startReceiver();
    try {
      await exportOtlp(store, { url: `${other.url}/v1/traces`, format: "json", withContent: false });
      expect(other.requests[0]!.spans[0]!.spanId).toBe(receiver.requests[0]!.spans[0]!.spanId);
      expect(other.requests[0]!.spans[0]!.traceId).toBe(receiver.requests[0]!.spans[0]!.traceId);
    } finally {
      await other.stop();
    }
  });

  test("prompt and answer text are sent only with withContent", async () => {
    const s = session();
    store.appendMessage(s, { id: "m_u", role: "user", content: [{ type: "text", text: "secret prompt" }] });
    store.appendMessage(s, { id: "m_a", role: "assistant", content: [{ type: "text", text: "secret answer" }] });
    store.recordRequest(row("r_a", s, 0, { messageId: "m_a" }));
    await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    const plain = JSON.stringify(receiver.requests[0]!.spans);
    expect(plain).not.toContain("secret");

    const other = startReceiver();
    try {
      await exportOtlp(store, { url: other.url, format: "protobuf", withContent: true });
      const attributes = other.requests[0]!.spans[0]!.attributes;
      expect(JSON.parse(attributes["gen_ai.input.messages"] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: "secret prompt" }] }]);
      expect(JSON.parse(attributes["gen_ai.output.messages"] as string)).toEqual([{ role: "assistant", parts: [{ type: "text", content: "secret answer" }], finish_reason: "stop" }]);
    } finally {
      await other.stop();
    }
  });

  test("a failing collector is EXPORT_FAILED and the rows wait for the next export", async () => {
    const s = session();
    store.recordRequest(row("r_a", s, 0));
    store.recordRequest(row("r_b", s, 1));
    receiver.mode = "fail";
    let code: string | undefined;
    try {
      await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    } catch (error) {
      code = isCachetError(error) ? error.code : String(error);
      expect((error as Error).message).toContain("HTTP 503");
    }
    expect(code).toBe("EXPORT_FAILED");
    receiver.mode = "ok";
    const retry = await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    expect(retry.exported).toBe(2);
    expect(receiver.requests.at(-1)!.spans).toHaveLength(2);
  });

  test("batches move the watermark one by one; a concurrent export to the same destination sends nothing", async () => {
    const s = session();
    for (let i = 0; i < 5; i++) store.recordRequest(row(`r_${i}`, s, i));
    receiver.mode = "hang";
    const running = exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false, batchSize: 2 });
    await receiver.waitFor(1);
    const concurrent = await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false });
    expect(concurrent).toMatchObject({ exported: 0, busy: true });
    receiver.mode = "ok";
    receiver.release();
    expect((await running).exported).toBe(5);
    expect(receiver.requests.map((r) => r.spans.length)).toEqual([2, 2, 1]);
    expect((await exportOtlp(store, { url: receiver.url, format: "protobuf", withContent: false })).exported).toBe(0);
  });

  test("URLs: a bare origin gets /v1/traces, a path is kept, other schemes are BAD_FLAG", () => {
    expect(tracesEndpoint("http://localhost:4318")).toBe("http://localhost:4318/v1/traces");
    expect(tracesEndpoint("https://otel.example.com/custom/traces")).toBe("https://otel.example.com/custom/traces");
    expect(() => tracesEndpoint("grpc://localhost:4317")).toThrow(/only http and https/);
    expect(() => tracesEndpoint("not a url")).toThrow(/not a URL/);
  });
});
