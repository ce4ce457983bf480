/**
 * Turn pipeline benchmark (run: `bun test/bench/turn.ts`): one whole turn
 * through the real pipeline (runTurn: session, context, compaction check,
 * render, cache strategies, hash chain, send through the official SDK, record,
 * ledger), with only the network replaced by an in-process fetch that answers
 * at once. For every adapter (anthropic, openai chat, openai responses,
 * gemini, the OpenAI-compatible family through deepseek) it reports the
 * median cost of one turn of a 1,000-turn session over one turn of a 10-turn
 * session, target ≤ 1.3 (issue 18: the per-turn cost grows with the new
 * nodes, not with the history; the SDK's serialization of the whole request
 * is the one part that must grow). The judged ratio is of process CPU time;
 * wall times are printed beside it. Each adapter runs in a process of its own
 * (`bun test/bench/turn.ts NAME` runs one), so none pays for the heap and store
 * an earlier one left behind.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OutputSink } from "../../src/run/output.ts";
import { openRuntime } from "../../src/run/runtime.ts";
import { runTurn } from "../../src/run/turn.ts";
import { median, ratio } from "./ratios.ts";

const ADAPTERS = [
  { name: "anthropic", model: "anthropic/claude-sonnet-4-6" },
  { name: "openai_chat", model: "openai/gpt-5-mini" },
  { name: "openai_responses", model: "openai-responses/gpt-5-mini" },
  { name: "gemini", model: "google/gemini-2.5-flash" },
  { name: "deepseek", model: "deepseek/deepseek-chat" },
] as const;

const SYSTEM = ["You are a careful reviewer. ".repeat(40)];
const TOOLS = [{ name: "read_file", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }];
const ANSWER = "The loop re-reads the whole history on every iteration.";
const SAMPLES = 31;

/** The provider's answer to any request, in the wire shape the URL names (non-streaming). */
function answerFor(url: string): unknown {
  const usage = { input: 1200, cached: 1000, output: 12 };
  if (url.includes("anthropic")) {
    return { id: "msg_1", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: ANSWER }], stop_reason: "end_turn", usage: { input_tokens: 200, cache_read_input_tokens: usage.cached, cache_creation_input_tokens: 0, output_tokens: usage.output } };
  }
  if (url.includes("/responses")) {
    return {
      id: "resp_1", object: "response", status: "completed", model: "m",
      output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: ANSWER, annotations: [] }] }],
      usage: { input_tokens: usage.input, input_tokens_details: { cached_tokens: usage.cached }, output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input + usage.output },
    };
  }
  if (url.includes("/google") || url.includes("generateContent")) {
    return { candidates: [{ content: { role: "model", parts: [{ text: ANSWER }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: usage.input, cachedContentTokenCount: usage.cached, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output } };
  }
  return {
    id: "chatcmpl-1", object: "chat.completion", created: 0, model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: ANSWER }, finish_reason: "stop" }],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output, prompt_tokens_details: { cached_tokens: usage.cached }, prompt_cache_hit_tokens: usage.cached, prompt_cache_miss_tokens: usage.input - usage.cached },
  };
}

const fakeFetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  // The request body is built and serialized by the SDK as for a real provider; only the wire is skipped.
  if (init?.body !== undefined && init.body !== null) await new Response(init.body).arrayBuffer();
  return new Response(JSON.stringify(answerFor(url)), { status: 200, headers: { "content-type": "application/json", "x-request-id": "req_1" } });
}) as typeof fetch;

const sink: OutputSink = { text: () => {}, event: () => {}, end: async () => {} };

const only = process.argv.slice(2).find((a) => !a.startsWith("--"));
if (only === undefined) {
  // One child process per adapter; each reports its own ratio.
  let failed = false;
  for (const adapter of ADAPTERS) {
    const child = Bun.spawn([process.execPath, import.meta.path, adapter.name, ...process.argv.slice(2)], { stdio: ["ignore", "inherit", "inherit"] });
    if ((await child.exited) !== 0) failed = true;
  }
  process.exit(failed ? 1 : 0);
}

const home = mkdtempSync(join(tmpdir(), "cachet-bench-turn-"));
const env = {
  ...process.env,
  CACHET_HOME: home,
  ANTHROPIC_API_KEY: "bench",
  OPENAI_API_KEY: "bench",
  GEMINI_API_KEY: "bench",
  DEEPSEEK_API_KEY: "bench",
};
const runtime = await openRuntime({ env, fetch: fakeFetch });

/** One turn of `session` (undefined: a new one): its session id, wall time and process CPU time (ms). */
async function turn(model: string, session: string | undefined, t: number): Promise<{ session: string; wall: number; cpu: number }> {
  const start = performance.now();
  const cpu = process.cpuUsage();
  const result = await runTurn(runtime, {
    // Texts unique per session and turn, so every turn counts the tokens of its new nodes.
    prompt: `${session ?? "new"} ${t}: what is wrong with this function?`,
    model,
    system: SYSTEM,
    tools: TOOLS,
    overlay: `turn ${t}`,
    session: session === undefined ? { mode: "new" } : { mode: "named", ref: session },
    generation: { stream: false, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
    role: "main",
    idleMs: 0,
    retries: 0,
    sink,
  });
  const used = process.cpuUsage(cpu);
  return { session: result.sessionId, wall: performance.now() - start, cpu: (used.user + used.system) / 1000 };
}

async function session(model: string, turns: number): Promise<string> {
  let id: string | undefined;
  for (let t = 1; t <= turns; t++) id = (await turn(model, id, t)).session;
  return id!;
}

for (const adapter of ADAPTERS.filter((a) => a.name === only)) {
  await session(adapter.model, 30); // warm-up: SDK, tokenizer, catalog
  const short: string[] = [];
  for (let i = 0; i < SAMPLES; i++) short.push(await session(adapter.model, 9));
  const first = 1000 - (SAMPLES >> 1);
  const long = await session(adapter.model, first - 1);
  // Turn 10 and turn 1,000 samples alternate, so a change in the machine's load hits both alike.
  const at10 = { wall: [] as number[], cpu: [] as number[] };
  const at1000 = { wall: [] as number[], cpu: [] as number[] };
  for (let i = 0; i < SAMPLES; i++) {
    const a = await turn(adapter.model, short[i], 10);
    const b = await turn(adapter.model, long, first + i);
    at10.wall.push(a.wall);
    at10.cpu.push(a.cpu);
    at1000.wall.push(b.wall);
    at1000.cpu.push(b.cpu);
  }
  // The measured session must really be 1,000 turns long: a reply the SDK could not read stores no answer.
  const stored = runtime.store.loadSession(long).messages.length;
  if (stored < 2 * (first + SAMPLES - 1)) throw new Error(`${adapter.name}: the long session holds ${stored} messages, not one prompt and one answer per turn`);
  const [w10, w1000, c10, c1000] = [median(at10.wall), median(at1000.wall), median(at10.cpu), median(at1000.cpu)];
  console.log(
    `turn ${adapter.name} (${adapter.model}): one turn at turn 10: wall ${w10.toFixed(2)} ms, CPU ${c10.toFixed(2)} ms; at turn 1,000: wall ${w1000.toFixed(2)} ms, CPU ${c1000.toFixed(2)} ms (wall ratio ${(w1000 / w10).toFixed(2)})`,
  );
  // CPU time is the judged figure: on a shared machine wall time also measures the other processes.
  ratio(`turn.${adapter.name}.1000_vs_10.cpu`, c1000 / c10, 1.3);
}
await runtime.close();
rmSync(home, { recursive: true, force: true });
process.exit(process.exitCode ?? 0);
