/**
 * Faults through `cachet proxy` (the compiled binary): a 429 with
 * retry-after, a 529, a 200 stream carrying an error event before or after
 * the content pass through byte for byte (status, headers, body, compared
 * with the same call made directly against an emulator with a fixed clock)
 * and are recorded with the right status; a client that disconnects
 * mid-stream cancels the upstream request and the row is marked incomplete.
 * No key appears in the store or the output.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type EmulatorHandle, startEmulator } from "../../src/emulator/index.ts";
import { RecordedStore } from "../../src/session/recorded.ts";
import { openStore } from "../../src/session/store.ts";
import type { LedgerRow } from "../../src/session/types.ts";
import { cachet, cleanHomes, freshHome } from "../e2e/harness.ts";
import { type ProxyProcess, spawnProxy } from "./harness.ts";

const CLOCK = "1780000000000";
const KEY = "sk-ant-api03-FAKEKEY-faults-0042";
let home: string;
let proxy: ProxyProcess;
let direct: EmulatorHandle;

beforeAll(async () => {
  home = freshHome();
  proxy = await spawnProxy(home, ["--emulate"], { CACHET_EMULATOR_CLOCK_MS: CLOCK });
  direct = await startEmulator({ statePath: null, env: { CACHET_EMULATOR_CLOCK_MS: CLOCK } });
});

afterAll(async () => {
  await direct.stop();
  cleanHomes();
});

/** Posts an Anthropic request with a fault, returning status, headers and body bytes as text. */
async function post(root: string, fault: string, stream: boolean, question: string): Promise<{ status: number; headers: Headers; body: string }> {
  const response = await fetch(`${root}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01", "x-emulator-fault": fault },
    body: JSON.stringify({ model: "claude-sonnet-4-6", max_tokens: 64, stream, messages: [{ role: "user", content: question }] }),
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function rows(): { row: LedgerRow; httpStatus: number | null }[] {
  const store = openStore(join(home, "cachet.db"));
  const recorded = new RecordedStore(store);
  try {
    return store.ledger().map((row) => ({ row, httpStatus: recorded.exchange(row.id)!.httpStatus }));
  } finally {
    store.close();
  }
}

const CASES = [
  // A refusal with an HTTP error status was provably not billed: $0 exactly, as a run records it (README "Cost").
  { fault: "429", stream: false, status: 429, ledger: "error", error: /HTTP 429 rate_limit_error/, cost: 0 },
  { fault: "529", stream: true, status: 529, ledger: "error", error: /HTTP 529 overloaded_error/, cost: 0 },
  // An error event inside a 200 stream may have been billed: priced from the usage its message_start reported.
  { fault: "error-before", stream: true, status: 200, ledger: "error", error: /error event in stream: overloaded_error/, cost: "priced" },
  { fault: "error-after", stream: true, status: 200, ledger: "incomplete", error: /error event in stream: overloaded_error/, cost: "priced" },
  { fault: "none", stream: true, status: 200, ledger: "ok", error: null, cost: "priced" },
  { fault: "none", stream: false, status: 200, ledger: "ok", error: null, cost: "priced" },
] as const;

describe("faults pass through unchanged and are recorded", () => {
  test.each(CASES)("$fault (stream: $stream) → HTTP $status, ledger $ledger, cost $cost", async ({ fault, stream, status, ledger, error, cost }) => {
    const question = `fault ${fault} ${stream}`;
    const header = fault === "none" ? "" : fault;
    const before = rows().length;
    const proxied = await post(proxy.url, header, stream, question);
    const straight = await post(`${direct.url}/anthropic`, header, stream, question);
    expect(proxied.status).toBe(status);
    expect(proxied.body).toBe(straight.body);
    expect(proxied.headers.get("content-type")).toBe(straight.headers.get("content-type"));
    expect(proxied.headers.get("retry-after")).toBe(straight.headers.get("retry-after"));
    if (fault === "429") expect(proxied.headers.get("retry-after")).toBe("1");
    await proxy.recorded(before + 1);
    const last = rows().at(-1)!;
    expect(last.httpStatus).toBe(status);
    expect(last.row.status).toBe(ledger);
    if (error === null) expect(last.row.error).toBeNull();
    else expect(last.row.error).toMatch(error);
    if (cost === "priced") expect(last.row.costUsd).toBeGreaterThan(0);
    else expect(last.row.costUsd).toBe(cost);
  });

  test("an upstream resetting the connection before any byte: 502 to the client, recorded at exactly $0", async () => {
    const before = rows().length;
    const proxied = await post(proxy.url, "reset", false, "fault reset");
    expect(proxied.status).toBe(502);
    await proxy.recorded(before + 1);
    const last = rows().at(-1)!;
    expect(last.httpStatus).toBeNull();
    expect(last.row.status).toBe("error");
    expect(last.row.error).toMatch(/upstream unreachable/);
    expect(last.row.costUsd).toBe(0);
    expect(last.row.noCacheCostUsd).toBe(0);
  });

  test("an upstream refusing the connection: recorded at exactly $0, and `cachet cost` says $0, not unknown", async () => {
    const relayHome = freshHome();
    // Port 1 is privileged and unused: connecting to it is refused.
    const relay = await spawnProxy(relayHome, ["--upstream", "http://127.0.0.1:1", "--provider", "anthropic"]);
    const proxied = await post(relay.url, "", false, "nobody home");
    expect(proxied.status).toBe(502);
    const [line] = await relay.recorded(1);
    expect((await relay.stop()).code).toBe(0);
    const id = /recorded (r_\w+)/.exec(line!)![1]!;
    const store = openStore(join(relayHome, "cachet.db"));
    try {
      const row = store.ledger().find((r) => r.id === id)!;
      expect(row.status).toBe("error");
      expect(row.costUsd).toBe(0);
      const cost = await cachet(["cost", row.sessionId], { home: relayHome });
      expect(cost.code).toBe(0);
      expect(cost.stdout).not.toMatch(/unknown|unpriced/);
      expect(cost.stdout).toMatch(/\$0\b/);
    } finally {
      store.close();
    }
  });

  test("a client disconnecting mid-stream cancels the upstream request; the row is incomplete", async () => {
    // An upstream of our own, to see the cancellation arrive.
    let cancelled!: () => void;
    const upstreamCancelled = new Promise<void>((resolve) => (cancelled = resolve));
    const upstream = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      fetch: () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}\n\n'));
              controller.enqueue(new TextEncoder().encode('event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hel"}}\n\n'));
            },
            cancel: () => cancelled(),
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
    });
    const relay = await spawnProxy(home, ["--upstream", `http://127.0.0.1:${upstream.port}`, "--provider", "anthropic"]);
    const abort = new AbortController();
    const response = await fetch(`${relay.url}/v1/messages`, {
      method: "POST",
      signal: abort.signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "claude-sonnet-4-6", max_tokens: 64, stream: true, messages: [{ role: "user", content: "hang on" }] }),
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("message_start");
    abort.abort();
    await upstreamCancelled;
    const [line] = await relay.recorded(1);
    expect(line).toContain("incomplete");
    const out = await relay.stop();
    upstream.stop(true);
    const last = rows().find((r) => r.row.id === /recorded (r_\w+)/.exec(line!)![1])!;
    expect(last.row.status).toBe("incomplete");
    expect(last.row.error).toMatch(/client disconnected/);
    expect(out.stdout + out.stderr).not.toContain(KEY);
  });

  test("no key in the store or the proxy's output", async () => {
    const out = await proxy.stop();
    expect(out.code).toBe(0);
    expect(out.stdout + out.stderr).not.toContain(KEY);
    for (const file of readdirSync(home).filter((f) => f.startsWith("cachet.db"))) expect(readFileSync(join(home, file)).includes(KEY)).toBe(false);
  });
});
