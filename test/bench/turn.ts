/**
 * Turn pipeline benchmark (run: `bun test/bench/turn.ts`): rendering, cache
 * strategies, hashing and storing one turn, through the real runtime (plugins,
 * store, token memo) with the network left out. Ratio (test/bench/ratios.ts):
 * one turn of a 1,000-turn session over one turn of a 10-turn session, target
 * ≤ 1.3 (issue 18).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "../../src/context/ids.ts";
import { buildPrefix } from "../../src/context/prefix.ts";
import type { Message, RequestContext } from "../../src/context/types.ts";
import { resolveProvider } from "../../src/run/resolve-provider.ts";
import { openRuntime } from "../../src/run/runtime.ts";
import type { LedgerRow } from "../../src/session/types.ts";
import { median, ratio } from "./ratios.ts";

const home = mkdtempSync(join(tmpdir(), "cachet-bench-turn-"));
const env = { ...process.env, CACHET_HOME: home, ANTHROPIC_API_KEY: "bench" };
const runtime = await openRuntime({ env });
const { store, host } = runtime;
const { adapter } = resolveProvider({ host, config: runtime.config, ref: { provider: "anthropic", model: "claude-sonnet-4-6" }, options: {}, env });
const strategies = host.strategiesFor("anthropic-messages", "anthropic");
const prefix = buildPrefix({ system: ["You are a careful reviewer. ".repeat(40)], tools: [{ name: "read_file", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }] });
const USER = "Please look at the following function and tell me what is wrong with it. ".repeat(5);
const ANSWER = "The loop re-reads the whole history on every iteration, so the cost grows with the session. ".repeat(8);

async function turn(sessionId: string, t: number): Promise<number> {
  // Texts unique per session, so every turn counts the tokens of its new nodes (a turn-10 text
  // repeated across sessions would hit the token memo and make short sessions look cheaper).
  const user: Message = { id: newId("m"), role: "user", content: [{ type: "text", text: `${sessionId} ${t}: ${USER}` }] };
  const start = performance.now();
  const release = await store.acquireTurn(sessionId);
  const loaded = store.loadSession(sessionId);
  const context: RequestContext = {
    model: "claude-sonnet-4-6",
    provider: "anthropic",
    prefix: loaded.prefix.prefix,
    summary: loaded.summary.messages,
    messages: [...loaded.messages, user],
    overlay: `${sessionId} turn ${t}`,
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m", affinityKey: loaded.session.affinityKey },
  };
  let wire = adapter.render(context);
  for (const s of strategies) wire = s.value.apply(wire, context);
  store.appendMessage(sessionId, user);
  const chain = await runtime.chainOf(wire);
  const answer: Message = { id: newId("m"), role: "assistant", content: [{ type: "text", text: `${sessionId} ${t}: ${ANSWER}` }] };
  store.appendMessage(sessionId, answer);
  store.recordRequest(row(sessionId, chain, answer.id));
  release();
  return performance.now() - start;
}

function row(sessionId: string, chain: LedgerRow["chain"], messageId: string): LedgerRow {
  return {
    id: newId("r"), sessionId, prefixVersion: 1, role: "main", provider: "anthropic", model: "claude-sonnet-4-6", protocol: "anthropic-messages",
    startedAt: Date.now(), firstTokenAt: null, finishedAt: null, latencyMs: null, ttftMs: null, outputTps: null,
    usage: { input: 5, cacheRead: 1000, cacheWrite5m: 200, cacheWrite1h: 0, output: 150, reasoning: undefined }, rawUsage: {},
    costUsd: 0.001, providerCostUsd: null, providerRequestId: null, affinityKey: sessionId, cacheMode: "auto", cacheTtl: "5m",
    chain, expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId,
  };
}

function newSession(): string {
  const id = store.createSession({ model: "anthropic/claude-sonnet-4-6" }).id;
  store.setPrefix(id, prefix, null);
  return id;
}

const warm = newSession();
for (let t = 1; t <= 30; t++) await turn(warm, t);

const at10: number[] = [];
for (let i = 0; i < 31; i++) {
  const s = newSession();
  for (let t = 1; t < 10; t++) await turn(s, t);
  at10.push(await turn(s, 10));
}
const long = newSession();
for (let t = 1; t < 985; t++) await turn(long, t);
const at1000: number[] = [];
for (let t = 985; t <= 1015; t++) at1000.push(await turn(long, t));

const m10 = median(at10);
const m1000 = median(at1000);
console.log(`turn: render + strategies + hash chain + store, one turn at turn 10:    median ${m10.toFixed(3)} ms`);
console.log(`turn: render + strategies + hash chain + store, one turn at turn 1,000: median ${m1000.toFixed(3)} ms`);
ratio("turn.anthropic.1000_vs_10", m1000 / m10, 1.3);
await runtime.close();
rmSync(home, { recursive: true, force: true });
process.exit(process.exitCode ?? 0);
