/**
 * Session store benchmark (run: `bun test/bench/store.ts`). Prints medians and the ratio.
 *
 * One turn, as the turn pipeline drives the store in one process: take the
 * turn lease, load the session, append the user message, write the streaming
 * answer early and update it twice, finalize it, look up and save token
 * counts of the new nodes, record the ledger row with the request's hash
 * chain, release. Ratio (test/bench/ratios.ts): a turn at turn 1,000 over a
 * turn at turn 10, target ≤ 1.5.
 *
 * For reference it also prints a cold load of the 1,000-turn session (a new
 * process running `cachet -c`), which reads the whole log once by nature.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Message, StablePrefix } from "../../src/context/types.ts";
import { openStore, type Store } from "../../src/session/store.ts";
import type { ChainLink, LedgerRow } from "../../src/session/types.ts";
import { chainHash, hashJson, hashText } from "../../src/wire/hash.ts";
import { median, ratio } from "./ratios.ts";

const USER_TEXT = "Please look at the following function and tell me what is wrong with it. ".repeat(7);
const ANSWER_TEXT = "The loop re-reads the whole history on every iteration, so the cost grows with the session. ".repeat(16);
const SAMPLES_AT_10 = 41;
const SAMPLES_AT_1000 = 41;

interface Session {
  id: string;
  chain: ChainLink[];
  turn: number;
}

const home = mkdtempSync(join(tmpdir(), "cachet-bench-store-"));
const store = openStore(join(home, "cachet.db"));
const body = { system: [{ id: "sys-0", text: "You are a careful reviewer." }], tools: [{ name: "read_file", parameters: { type: "object", properties: { path: { type: "string" } } } }] };
const prefix: StablePrefix = { ...body, fingerprint: hashJson(body) };

function newSession(): Session {
  const id = store.createSession({ model: "anthropic/claude-sonnet-4-5" }).id;
  store.setPrefix(id, prefix, null);
  let previous: string | undefined;
  const chain = ["sys-0", "read_file"].map((nodeId) => {
    const content = hashText(nodeId);
    previous = chainHash(previous, content);
    return { nodeId, kind: nodeId === "sys-0" ? "system" : "tool", content, prefix: previous, tokens: 40 };
  });
  return { id, chain, turn: 0 };
}

function extend(chain: ChainLink[], message: Message): void {
  const content = hashJson(message.content);
  chain.push({ nodeId: message.id, kind: "message", content, prefix: chainHash(chain.at(-1)?.prefix, content), tokens: 0 });
}

async function turn(s: Session): Promise<number> {
  s.turn++;
  const t = s.turn;
  // What the pipeline computes outside the store (messages, the request's hash chain) is prepared untimed.
  const user: Message = { id: `${s.id}-u${t}`, role: "user", content: [{ type: "text", text: `${t}: ${USER_TEXT}` }] };
  const answerId = `${s.id}-a${t}`;
  const answer: Message = { id: answerId, role: "assistant", content: [{ type: "text", text: ANSWER_TEXT }] };
  if (s.chain.length > 2) delete s.chain[s.chain.length - 1]!.breakpoint;
  extend(s.chain, user);
  s.chain[s.chain.length - 1]!.breakpoint = "5m";
  const row = ledgerRow(s, t);
  const newHashes = [s.chain.at(-1)!.content];

  const start = performance.now();
  const release = await store.acquireTurn(s.id);
  const loaded = store.loadSession(s.id);
  if (loaded.messages.length !== 2 * (t - 1)) throw new Error(`turn ${t} loaded ${loaded.messages.length} messages`);
  store.appendMessage(s.id, user);
  store.appendMessage(s.id, { id: answerId, role: "assistant", content: [], incomplete: true });
  store.updatePartial(s.id, answerId, [{ type: "text", text: ANSWER_TEXT.slice(0, 400) }], true);
  store.updatePartial(s.id, answerId, [{ type: "text", text: ANSWER_TEXT.slice(0, 1000) }], true);
  store.updatePartial(s.id, answerId, answer.content, false);
  const known = store.nodeTokens(newHashes);
  store.saveNodeTokens(newHashes.filter((h) => !known.has(h)).map((h) => [h, 180] as const));
  store.recordRequest(row);
  release();
  const elapsed = performance.now() - start;

  extend(s.chain, answer);
  return elapsed;
}

function ledgerRow(s: Session, t: number): LedgerRow {
  const logLength = 2 * t - 1;
  return {
    id: `r_${s.id}_${t}`, sessionId: s.id, prefixVersion: 1, role: "main", provider: "anthropic", model: "claude-sonnet-4-5", protocol: "anthropic-messages",
    startedAt: Date.now(), firstTokenAt: null, finishedAt: null, latencyMs: null, ttftMs: null, outputTps: null,
    usage: { input: 3, cacheRead: 200 * logLength, cacheWrite5m: 380, cacheWrite1h: 0, output: 380, reasoning: undefined },
    rawUsage: { input_tokens: 3, cache_read_input_tokens: 200 * logLength, cache_creation_input_tokens: 380, output_tokens: 380 },
    costUsd: 0.01, providerCostUsd: null, providerRequestId: `msg_${s.id}_${t}`, affinityKey: s.id, cacheMode: "auto", cacheTtl: "5m",
    chain: s.chain.map((link) => ({ ...link })), expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId: `${s.id}-a${t}`,
  };
}

// Warm up the JIT and SQLite's page cache on a throwaway session.
const warm = newSession();
for (let i = 0; i < 50; i++) await turn(warm);

// Turn 10: many sessions, each primed with 9 turns, then its 10th timed.
const at10: number[] = [];
for (let i = 0; i < SAMPLES_AT_10; i++) {
  const s = newSession();
  for (let t = 1; t < 10; t++) await turn(s);
  at10.push(await turn(s));
}

// Turn 1,000: one session primed to turn 1,000 − ⌊samples/2⌋, then the turns around 1,000 timed.
const long = newSession();
while (long.turn < 1000 - (SAMPLES_AT_1000 >> 1) - 1) await turn(long);
const at1000: number[] = [];
for (let i = 0; i < SAMPLES_AT_1000; i++) at1000.push(await turn(long));

// Reference: a cold load of the long session by a fresh store (a new `cachet -c` process).
const cold: number[] = [];
for (let i = 0; i < 9; i++) {
  const fresh: Store = openStore(store.path);
  const start = performance.now();
  const loaded = fresh.loadSession(long.id);
  fresh.lastRequest(long.id);
  cold.push(performance.now() - start);
  if (loaded.messages.length !== 2 * long.turn) throw new Error(`cold load saw ${loaded.messages.length} messages`);
  fresh.close();
}

const m10 = median(at10);
const m1000 = median(at1000);
console.log(`store: one turn at turn 10:    median ${m10.toFixed(3)} ms (${SAMPLES_AT_10} samples)`);
console.log(`store: one turn at turn 1,000: median ${m1000.toFixed(3)} ms (${SAMPLES_AT_1000} samples)`);
console.log(`store: cold load of a ${long.turn}-turn session (${2 * long.turn} messages) + its last ledger row: median ${median(cold).toFixed(3)} ms (reference, O(n))`);
ratio("store.1000_vs_10", m1000 / m10, 1.5);
store.close();
rmSync(home, { recursive: true, force: true });
process.exit(process.exitCode ?? 0);
