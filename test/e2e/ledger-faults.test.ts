/**
 * Issue 12 part B through the compiled binary, against small local servers
 * that behave the way the real providers were seen to: a provider reusing a
 * response id (CASES.md case 46), Anthropic's input-side usage at stream start
 * followed by a cut (case 44), Gemini's running usage followed by a cut, a request that fails with no output (rolled
 * back: the next -c is well formed), and a process killed before the first
 * byte (its unanswered prompt is rolled back by the next turn).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { loadCatalog, resolvePrice } from "../../src/meter/index.ts";
import { BINARY, cachet, cleanHomes, freshHome, homeEnv } from "./harness.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

async function exported(home: string): Promise<{ messages: Raw[]; requests: Raw[] }> {
  const r = await cachet(["export"], { home });
  expect(r.code).toBe(0);
  const lines = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Raw);
  return { messages: lines.filter((l) => l.type === "message").map((l) => l.message), requests: lines.filter((l) => l.type === "request").map((l) => l.request) };
}

const sse = (events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");

test("case 46: a server answering every request with the same response id: three turns, three ledger rows", async () => {
  const bodies: Raw[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      bodies.push((await request.json()) as Raw);
      const chunk = (delta: Raw, extra: Raw = {}) => ({ id: "chatcmpl-fixed", object: "chat.completion.chunk", created: 1, model: "gpt-5", choices: [{ index: 0, delta, finish_reason: null }], ...extra });
      const body =
        sse([
          chunk({ role: "assistant", content: "ok" }),
          { id: "chatcmpl-fixed", object: "chat.completion.chunk", created: 1, model: "gpt-5", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
          { id: "chatcmpl-fixed", object: "chat.completion.chunk", created: 1, model: "gpt-5", choices: [], usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } },
        ]) + "data: [DONE]\n\n";
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
  try {
    const home = freshHome();
    const args = ["-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${server.port}/v1`];
    const env = { OPENAI_API_KEY: "test-key" };
    for (const [i, prompt] of ["one", "two", "three"].entries()) {
      const r = await cachet([...args, ...(i > 0 ? ["-c"] : []), prompt], { home, env });
      expect([r.code, r.stdout, r.stderr]).toEqual([0, "ok\n", ""]);
    }
    const { messages, requests } = await exported(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(requests.map((r) => [r.status, r.providerRequestId, r.usage.input])).toEqual([
      ["ok", "chatcmpl-fixed", 10],
      ["ok", "chatcmpl-fixed", 10],
      ["ok", "chatcmpl-fixed", 10],
    ]);
    expect(new Set(requests.map((r) => r.id)).size).toBe(3);
  } finally {
    server.stop(true);
  }
});

/** An Anthropic server that sends message_start with case 44's usage and one text delta, then ends the stream (no message_delta, no message_stop). */
function cutAfterStart(): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch() {
      const start = {
        type: "message_start",
        message: { id: "msg_case44", type: "message", role: "assistant", model: "claude-sonnet-4-6", content: [], stop_reason: null, usage: { input_tokens: 5, cache_creation_input_tokens: 2000, cache_read_input_tokens: 50000, output_tokens: 1 } },
      };
      const text = [{ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Once upon" } }];
      const bytes = new TextEncoder().encode(sse([start, ...text]).replaceAll("data: ", "event: x\ndata: "));
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream", "request-id": "req_case44" } });
    },
  });
}

test("case 44: Anthropic's usage from message_start is kept when the stream is cut, flagged as a lower bound: $0.02253", async () => {
  const server = cutAfterStart();
  try {
    const home = freshHome();
    const r = await cachet(["-m", "anthropic/claude-sonnet-4-6", "--base-url", `http://127.0.0.1:${server.port}`, "tell me a story"], { home, env: { ANTHROPIC_API_KEY: "test-key" } });
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("Once upon\n");
    const { messages, requests } = await exported(home);
    expect(messages.map((m) => [m.role, m.incomplete ?? false])).toEqual([["user", false], ["assistant", true]]);
    expect(requests).toHaveLength(1);
    const row = requests[0]!;
    expect(row).toMatchObject({ status: "incomplete", usageLowerBound: true, providerRequestId: "msg_case44" });
    expect(row.usage).toMatchObject({ input: 5, cacheRead: 50000, cacheWrite5m: 2000 });
    expect(row.usage.output).toBeGreaterThanOrEqual(1);
    // 5 × $3 + 50,000 × $0.30 + 2,000 × $3.75 + 1 × $15, per million tokens.
    expect(row.costUsd).toBeCloseTo(0.02253, 9);
    const cost = await cachet(["cost"], { home });
    expect(cost.stdout).toContain("read 50000");
    expect(cost.stdout).toContain("write 2000");
  } finally {
    server.stop(true);
  }
});

test("a cut Gemini stream keeps the running usage its chunks reported, the output raised to the parts that streamed, flagged as a lower bound", async () => {
  // As Gemini streams: each chunk carries the running usageMetadata; here the last two carry none, then the stream ends
  // before any finishReason. @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
  const usage = (candidates: number) => ({ promptTokenCount: 5000, cachedContentTokenCount: 4000, candidatesTokenCount: candidates, totalTokenCount: 5000 + candidates });
  const chunk = (text: string, extra: Raw = {}) => ({ candidates: [{ content: { role: "model", parts: [{ text }] }, index: 0 }], responseId: "gem_cut", ...extra });
  const body = sse([chunk("Once", { usageMetadata: usage(1) }), chunk(" upon a", { usageMetadata: usage(3) }), chunk(" time"), chunk(" there")]);
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(body, { headers: { "content-type": "text/event-stream" } }) });
  try {
    const home = freshHome();
    const r = await cachet(["-m", "google/gemini-2.5-flash", "--base-url", `http://127.0.0.1:${server.port}`, "tell me a story"], { home, env: { GEMINI_API_KEY: "test-key" } });
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("Once upon a time there\n");
    const { requests } = await exported(home);
    const row = requests[0]!;
    expect(row).toMatchObject({ status: "incomplete", usageLowerBound: true, providerRequestId: "gem_cut" });
    // Reported: 1000 uncached, 4000 cached, 3 output; four parts streamed, so at least 4 output tokens.
    expect(row.usage).toMatchObject({ input: 1000, cacheRead: 4000, output: 4 });
    const { catalog } = await loadCatalog();
    const rates = resolvePrice(catalog, "google/gemini-2.5-flash")!.price;
    expect(row.costUsd).toBeCloseTo((1000 * rates.input! + 4000 * rates.cache_read! + 4 * rates.output!) / 1e6, 12);
    expect(row.costEstimate).toContain("output counted as 4");
    expect(row.costEstimate).toContain("lower bound");
  } finally {
    server.stop(true);
  }
});

test("a request that fails with no output is rolled back: exit 4, the log as before, the ledger row kept, and -c goes on with one user message", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "first question"], { home })).code).toBe(0);
  const before = await exported(home);
  const failed = await cachet(["--emulate", "-c", "--retries", "0", "second question"], { home, env: { CACHET_EMULATOR_FAULT: "503" } });
  expect(failed.code).toBe(4);
  expect(failed.stdout).toBe("");
  expect(failed.stderr).toContain("the prompt was not kept in the session (no answer came)");
  const after = await exported(home);
  expect(after.messages).toEqual(before.messages);
  expect(after.requests.map((r) => [r.status, r.messageId])).toEqual([["ok", before.requests[0]!.messageId], ["error", null]]);
  const next = await cachet(["--emulate", "-c", "second question"], { home });
  expect(next.code).toBe(0);
  const final = await exported(home);
  expect(final.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  expect(final.requests.map((r) => r.status)).toEqual(["ok", "error", "ok"]);
});

test("a process killed before the first byte leaves its prompt unanswered; the next turn rolls it back and stays well formed", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "first question"], { home })).code).toBe(0);
  // The emulator stalls before any content: the prompt is stored, the answer never starts.
  const proc = Bun.spawn([BINARY, "--emulate", "-c", "--idle-timeout", "600", "doomed question"], {
    env: { ...homeEnv(home), CACHET_EMULATOR_FAULT: "chatter" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  // Wait until the prompt is stored (the request is then on its way), then kill.
  for (let i = 0; i < 400; i++) {
    const { messages } = await exported(home);
    if (messages.length === 3) break;
    await Bun.sleep(25);
  }
  proc.kill("SIGKILL");
  await proc.exited;
  expect((await exported(home)).messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  const next = await cachet(["--emulate", "-c", "second question"], { home });
  expect(next.code).toBe(0);
  expect(next.stderr).toContain("never got an answer");
  const { messages } = await exported(home);
  expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  expect(messages[2]!.content[0].text).toBe("second question");
}, 60_000);

test("a request:before hook that adds a 5th cache marker after the strategies: exit 3 naming the limit, nothing sent, nothing stored", async () => {
  const home = freshHome();
  const plugin = `${home}/marker-hook.mjs`;
  // Splits the last message into five marked blocks: with the strategy's own markers that is more than 4.
  await Bun.write(
    plugin,
    `export default { name: "marker-hook", api: 1, setup(api) {
  api.hook("request:before", (wire) => {
    const body = structuredClone(wire.body);
    const last = body.messages.at(-1);
    last.content = ["one", "two", "three", "four", "five"].map((text) => ({ type: "text", text, cache_control: { type: "ephemeral" } }));
    return { ...wire, body };
  });
} };`,
  );
  const r = await cachet(["--emulate", "hello"], { home, env: { CACHET_PLUGINS: plugin } });
  expect(r.code).toBe(3);
  expect(r.stdout).toBe("");
  expect(r.stderr).toMatch(/^cachet: the anthropic request carries \d+ cache markers after the cache strategies and request:before hooks; at most 4 are allowed\n {2}hint: /);
  expect((await cachet(["sessions", "--json"], { home })).stdout).toBe("");
});

describe("every attempt sent has one ledger row: $0 when provably unbilled, else usage as far as known", () => {
  const rowsOf = (requests: Raw[]) => requests.map((r) => [r.attempt ?? 1, r.status, r.costUsd, r.usageLowerBound ?? false]);

  test("a reset on every attempt: one $0 row per attempt, none of unknown cost; reset:1 then success: a $0 row and the ok row", async () => {
    const home = freshHome();
    const failed = await cachet(["--emulate", "--retries", "2", "hello"], { home, env: { CACHET_EMULATOR_FAULT: "reset" } });
    expect(failed.code).toBe(4);
    expect(rowsOf((await exported(home)).requests)).toEqual([[1, "error", 0, false], [2, "error", 0, false], [3, "error", 0, false]]);
    const cost = await cachet(["cost"], { home });
    expect(cost.stdout).not.toContain("unpriced");
    const other = freshHome();
    const ok = await cachet(["--emulate", "hello"], { home: other, env: { CACHET_EMULATOR_FAULT: "reset:1" } });
    expect(ok.code).toBe(0);
    const { requests } = await exported(other);
    expect(rowsOf(requests).slice(0, 1)).toEqual([[1, "error", 0, false]]);
    expect(requests[1]).toMatchObject({ attempt: 2, status: "ok" });
    expect(requests[1]!.costUsd).toBeGreaterThan(0);
  });

  test("SIGINT during the backoff after an HTTP 500: exit 130, every attempt a $0 row (none 'cost unknown')", async () => {
    const home = freshHome();
    const proc = Bun.spawn([BINARY, "--emulate", "--retries", "5", "hello"], {
      env: { ...homeEnv(home), CACHET_EMULATOR_FAULT: "500" },
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    });
    let stderr = "";
    const decoder = new TextDecoder();
    // The second notice starts a 1 s wait: the signal comes inside it.
    for await (const chunk of proc.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
      if ((stderr.match(/retrying in/g) ?? []).length === 2) break;
    }
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    const { requests } = await exported(home);
    expect(rowsOf(requests)).toEqual([[1, "error", 0, false], [2, "error", 0, false]]);
    expect(requests[1]!.error).toContain("interrupted by SIGINT while waiting to retry");
    expect((await cachet(["cost"], { home })).stdout).not.toContain("unpriced");
  });

  test("a JSON body cut after HTTP 200 (--no-stream): sent once (it may be billed), its row with usage and cost unknown", async () => {
    const home = freshHome();
    expect((await cachet(["--emulate", "-m", "openai/gpt-5", "first"], { home })).code).toBe(0);
    const r = await cachet(["--emulate", "-c", "--no-stream", "x"], { home, env: { CACHET_EMULATOR_FAULT: "cut" } });
    expect(r.code).toBe(4);
    expect(r.stderr).not.toContain("retrying in");
    const { requests } = await exported(home);
    expect(rowsOf(requests.slice(1))).toEqual([[1, "error", null, false]]);
    expect(requests[1]!.usage.input).toBeUndefined();
    expect(requests[1]!.error).toContain("the response body was cut or unreadable after HTTP 200");
  });

  for (const model of ["anthropic/claude-sonnet-4-6", "openai/gpt-5", "openai-responses/gpt-5", "google/gemini-2.5-flash", "xai/grok-4", "openrouter/openai/gpt-5"]) {
    test(`an error event inside a 200 stream before any content (${model}): the failed attempt has its row, not $0`, async () => {
      const home = freshHome();
      const r = await cachet(["--emulate", "-m", model, "x"], { home, env: { CACHET_EMULATOR_FAULT: "error-before:1" } });
      expect(r.code).toBe(0);
      const { requests } = await exported(home);
      expect(requests.map((row) => [row.attempt ?? 1, row.status])).toEqual([[1, "error"], [2, "ok"]]);
      // Anthropic reported the input side at message_start: a priced lower bound; the others reported nothing yet.
      if (model.startsWith("anthropic/")) {
        expect(requests[0]).toMatchObject({ usageLowerBound: true });
        expect(requests[0]!.costUsd).toBeGreaterThan(0);
      } else {
        expect(requests[0]!.costUsd).toBeNull();
      }
    });
  }
});

describe("a provider usage whose token count is no count (1e400, which parses to infinity; -3; 2.5) is an invalid usage: one warning naming the field, usage and cost unknown, never null or Infinity stored or printed", () => {
  const cases: [string, string, string][] = [
    ['{"prompt_tokens":1e400,"completion_tokens":1,"total_tokens":11}', "prompt_tokens is beyond 1.8e308, a number too large to be a count", '{"prompt_tokens":"beyond 1.8e308","completion_tokens":1,"total_tokens":11}'],
    ['{"prompt_tokens":-3,"completion_tokens":1}', "prompt_tokens is -3, negative", '{"prompt_tokens":-3,"completion_tokens":1}'],
    ['{"prompt_tokens":12,"completion_tokens":2.5}', "completion_tokens is 2.5, not a whole number", '{"prompt_tokens":12,"completion_tokens":2.5}'],
  ];
  test.each(cases)("usage %s", async (usage, problem, stored) => {
    // Written as text: JSON.stringify could not write 1e400.
    const body = `{"id":"chatcmpl-u","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":${usage}}`;
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(body, { headers: { "content-type": "application/json" } }) });
    try {
      const home = freshHome();
      const r = await cachet(["-m", "openai/gpt-5", "--base-url", `http://127.0.0.1:${server.port}/v1`, "--no-stream", "--json", "hi"], { home, env: { OPENAI_API_KEY: "test-key" } });
      expect(r.code).toBe(0);
      expect(r.stderr.split("\n")[0]).toBe(`[warn] openai: provider openai: the provider's usage is invalid: ${problem}; usage unknown for this request`);
      const lines = r.stdout.split("\n").filter(Boolean);
      const usageLine = lines.find((l) => l.startsWith('{"type":"usage"'))!;
      expect(usageLine).toEndWith(`"input":null,"cacheRead":null,"cacheWrite5m":null,"cacheWrite1h":null,"output":null,"reasoning":null,"raw":${stored}}`);
      expect(JSON.parse(lines.find((l) => l.startsWith('{"type":"cost"'))!).cost_usd).toBeNull();
      const { requests } = await exported(home);
      expect(requests.map((q) => [q.status, q.usage, q.costUsd, JSON.stringify(q.rawUsage)])).toEqual([["ok", {}, null, stored]]);
      expect((await cachet(["cost"], { home })).stdout.split("\n")[0]).toEndWith("openai/gpt-5  cost unknown  in ? · read ? · write ? · out ?");
    } finally {
      server.stop(true);
    }
  });
});
