/**
 * Unfinished streams through `cachet proxy` (the compiled binary, an emulator
 * as its upstream), for each streaming shape the proxy reads (Anthropic
 * Messages, OpenAI chat and Responses, Gemini): a client that disconnects
 * mid-stream (the emulator's `stall`: the first half of the answer, then
 * nothing) and an upstream that cuts the stream (`cut`). The exchange is
 * recorded as a run records an interrupted stream (CASES.md case 44): status
 * `incomplete`, the usage the provider reported before the end (Anthropic
 * `message_start`, Gemini's per-chunk `usageMetadata`) with the output raised
 * to what streamed, flagged as a lower bound and priced as one (a cost at
 * least what the part the client saw costs, marked estimated); where the
 * protocol reports usage only at the end (OpenAI), the cost is unknown and
 * the row says why. `cachet cost` and `cachet stats --session` read the
 * recorded session.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type EmulatorHandle, startEmulator } from "../../src/emulator/index.ts";
import { loadCatalog, resolvePrice } from "../../src/meter/index.ts";
import { openStore } from "../../src/session/store.ts";
import type { LedgerRow } from "../../src/session/types.ts";
import { cachet, cleanHomes, freshHome } from "../e2e/harness.ts";
import { type ProxyProcess, spawnProxy } from "./harness.ts";

const KEY = "sk-FAKEKEY-cut-streams-0007";
let home: string;
let proxy: ProxyProcess;
let emulator: EmulatorHandle;
let recordedSoFar = 0;

beforeAll(async () => {
  home = freshHome();
  emulator = await startEmulator({ statePath: null, env: { CACHET_EMULATOR_CLOCK_MS: "1780000000000" } });
  proxy = await spawnProxy(home, ["--upstream", emulator.url]);
});

afterAll(async () => {
  await proxy.stop();
  await emulator.stop();
  cleanHomes();
});

/** What the client saw of the usage: the counts reported so far and the output events that streamed, in the row's categories. */
interface Seen {
  input?: number;
  cacheRead?: number;
  cacheWrite5m?: number;
  /** The output the provider reported so far, if any. */
  output?: number;
  /** Events of generated output (non-empty text deltas or parts). */
  outputEvents: number;
}

interface Shape {
  name: string;
  /** Catalog id of the model, for its prices. */
  catalogRef: string;
  path: string;
  headers: Record<string, string>;
  body: (question: string) => Record<string, unknown>;
  /** True when the protocol reports usage before the end of the stream. */
  usageBeforeEnd: boolean;
  /** Reads the SSE `data:` payloads the client received. */
  seen: (events: Record<string, unknown>[]) => Seen;
}

const SHAPES: Shape[] = [
  {
    name: "anthropic",
    catalogRef: "anthropic/claude-sonnet-4-6",
    path: "/v1/messages",
    headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01" },
    body: (q) => ({ model: "claude-sonnet-4-6", max_tokens: 200, stream: true, messages: [{ role: "user", content: q }] }),
    usageBeforeEnd: true,
    seen(events) {
      const start = events.find((e) => e.type === "message_start") as { message: { usage: Record<string, number> } } | undefined;
      const u = start?.message.usage ?? {};
      const deltas = events.filter((e) => e.type === "content_block_delta" && ((e.delta as { text?: string }).text ?? "") !== "").length;
      return { input: u.input_tokens, cacheRead: u.cache_read_input_tokens ?? 0, cacheWrite5m: u.cache_creation_input_tokens ?? 0, output: u.output_tokens, outputEvents: deltas };
    },
  },
  {
    name: "openai-chat",
    catalogRef: "openai/gpt-5",
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${KEY}` },
    body: (q) => ({ model: "gpt-5", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: q }] }),
    usageBeforeEnd: false,
    seen: (events) => ({ outputEvents: events.filter((e) => ((e.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content ?? "") !== "").length }),
  },
  {
    name: "openai-responses",
    catalogRef: "openai/gpt-5",
    path: "/v1/responses",
    headers: { authorization: `Bearer ${KEY}` },
    body: (q) => ({ model: "gpt-5", stream: true, input: q }),
    usageBeforeEnd: false,
    seen: (events) => ({ outputEvents: events.filter((e) => e.type === "response.output_text.delta" && e.delta !== "").length }),
  },
  {
    name: "gemini",
    catalogRef: "google/gemini-2.5-flash",
    path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    headers: { "x-goog-api-key": KEY },
    body: (q) => ({ contents: [{ role: "user", parts: [{ text: q }] }] }),
    usageBeforeEnd: true,
    seen(events) {
      const u = (events.findLast((e) => e.usageMetadata) as { usageMetadata: Record<string, number> } | undefined)?.usageMetadata ?? {};
      const parts = events.flatMap((e) => (e.candidates as { content?: { parts?: { text?: string }[] } }[] | undefined)?.[0]?.content?.parts ?? []);
      const cached = u.cachedContentTokenCount ?? 0;
      return {
        ...(u.promptTokenCount === undefined ? {} : { input: u.promptTokenCount - cached, cacheRead: cached, cacheWrite5m: 0, output: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0) }),
        outputEvents: parts.filter((p) => (p.text ?? "") !== "").length,
      };
    },
  },
];

/** The complete SSE `data:` payloads in `text` that are JSON objects (a cut leaves a last one unfinished). */
function dataEvents(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const block of text.split("\n\n").slice(0, -1)) {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trim())
      .join("\n");
    try {
      const parsed = JSON.parse(data) as unknown;
      if (parsed !== null && typeof parsed === "object") out.push(parsed as Record<string, unknown>);
    } catch {
      // `[DONE]` or an unfinished event.
    }
  }
  return out;
}

/** Sends a streaming request with `fault` and returns the events the client read: stalled, it goes away once output streamed; cut, it reads to the end. */
async function send(shape: Shape, fault: "stall" | "cut", question: string): Promise<Record<string, unknown>[]> {
  const abort = new AbortController();
  const response = await fetch(`${proxy.url}${shape.path}`, {
    method: "POST",
    signal: abort.signal,
    headers: { "content-type": "application/json", "x-emulator-fault": fault, "user-agent": `cut-test/${shape.name}`, ...shape.headers },
    body: JSON.stringify(shape.body(question)),
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    // Stalled, the stream sends nothing more after the first half of the answer: the client goes away once output came.
    if (fault === "stall" && shape.seen(dataEvents(text)).outputEvents > 0) {
      abort.abort();
      break;
    }
  }
  return dataEvents(text);
}

/** The ledger row recorded for the exchange that was just sent. */
async function recordedRow(): Promise<LedgerRow> {
  recordedSoFar += 1;
  const lines = await proxy.recorded(recordedSoFar);
  const id = /recorded (r_\w+)/.exec(lines[recordedSoFar - 1]!)![1]!;
  const store = openStore(join(home, "cachet.db"));
  try {
    return store.ledger().find((row) => row.id === id)!;
  } finally {
    store.close();
  }
}

/** USD the seen part costs: the reported counts, the output at least what streamed. */
async function seenPrice(shape: Shape, seen: Seen): Promise<number> {
  const { catalog } = await loadCatalog();
  const rates = resolvePrice(catalog, shape.catalogRef)!.price;
  const output = Math.max(seen.output ?? 0, seen.outputEvents);
  return ((seen.input ?? 0) * rates.input! + (seen.cacheRead ?? 0) * (rates.cache_read ?? 0) + (seen.cacheWrite5m ?? 0) * (rates.cache_write ?? 0) + output * rates.output!) / 1e6;
}

describe.each([
  { fault: "stall" as const, how: "a client that disconnects mid-stream", error: /client disconnected mid-response; the upstream request was cancelled/ },
  { fault: "cut" as const, how: "an upstream that cuts the stream", error: /stream|ended|cut/i },
])("$how", ({ fault, error }) => {
  test.each(SHAPES)("$name: recorded incomplete, as a run records an interrupted stream", async (shape) => {
    const events = await send(shape, fault, `${fault} ${shape.name}: tell me about tides`);
    const seen = shape.seen(events);
    expect(seen.outputEvents).toBeGreaterThan(0);
    const row = await recordedRow();
    expect(row.status).toBe("incomplete");
    expect(row.error).toMatch(error);
    if (shape.usageBeforeEnd) {
      const price = await seenPrice(shape, seen);
      console.log(`${fault} ${shape.name}: seen in ${seen.input} read ${seen.cacheRead} out ${seen.output ?? "-"} (${seen.outputEvents} output events) → $${price}; recorded in ${row.usage.input} out ${row.usage.output} $${row.costUsd} (${row.costEstimate})`);
      expect(row.usageLowerBound).toBe(true);
      expect(row.usage.input).toBe(seen.input!);
      expect(row.usage.cacheRead).toBe(seen.cacheRead!);
      expect(row.usage.output).toBeGreaterThanOrEqual(Math.max(seen.output ?? 0, seen.outputEvents));
      expect(row.costUsd).not.toBeNull();
      expect(row.costUsd!).toBeGreaterThanOrEqual(price - 1e-12);
      expect(row.costEstimate).toContain("lower bound");
      // Never taken for exact: the uncached price is a lower bound all the same, and savings are flagged with it.
      expect(row.noCacheCostUsd).not.toBeNull();
    } else {
      // OpenAI reports usage only in the stream's last event: nothing of it is known, and the row says so.
      expect(row.usageLowerBound).toBeUndefined();
      expect(row.usage.input).toBeUndefined();
      expect(row.costUsd).toBeNull();
      expect(row.error).toContain("the provider had reported no usage yet, so the cost is unknown");
    }
  });
});

describe("reading the recorded sessions", () => {
  test("`cachet cost SESSION` marks the lower bound estimated; `cachet stats --session SESSION` reads it", async () => {
    const store = openStore(join(home, "cachet.db"));
    const rows = store.ledger();
    store.close();
    const anthropic = rows.filter((r) => r.provider === "anthropic");
    expect(anthropic.length).toBe(2);
    const sessionId = anthropic[0]!.sessionId;
    const inSession = rows.filter((r) => r.sessionId === sessionId);
    const cost = await cachet(["cost", sessionId], { home });
    expect(cost.code).toBe(0);
    for (const row of inSession) {
      const line = cost.stdout.split("\n").find((l) => l.startsWith(row.id))!;
      expect(line).toContain(`~$${row.costUsd}`);
    }
    expect(cost.stdout).toMatch(/total \d+ requests {2}~\$/);
    const json = JSON.parse((await cachet(["cost", sessionId, "--json"], { home })).stdout) as { requests: { id: string; costUsd: number | null }[] };
    expect(json.requests.map((r) => [r.id, r.costUsd])).toEqual(inSession.map((r) => [r.id, r.costUsd]));
    const stats = await cachet(["stats", "--session", sessionId, "--json"], { home });
    expect(stats.code).toBe(0);
    const report = JSON.parse(stats.stdout) as { total: { requests: number; costUsd: number | null } };
    expect(report.total.requests).toBe(inSession.length);
    const sum = inSession.reduce((n, r) => n + (r.costUsd ?? 0), 0);
    expect(report.total.costUsd).toBeCloseTo(sum, 9);
    const text = await cachet(["stats", "--session", sessionId], { home });
    expect(text.code).toBe(0);
    // Both the cost and the savings against it are estimates, marked as `cost` marks them.
    const estimated = text.stdout.split("\n").filter((l) => /~\$/.test(l));
    expect(estimated.length).toBeGreaterThan(0);
    for (const line of estimated) expect(line.match(/~[-+]?\$/g)).toHaveLength(2);
  });
});
