import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import type { StablePrefix } from "../context/types.ts";
import { isCachetError } from "../errors.ts";
import { hashJson } from "../wire/hash.ts";
import { openStore, type Store } from "./store.ts";

const CHILD = join(import.meta.dir, "test-child.ts");
let home: string;
let store: Store;
let sessionId: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "cachet-lock-"));
  process.env.CACHET_HOME = home;
  store = openStore();
  sessionId = store.createSession({ model: "anthropic/claude-sonnet-4-5" }).id;
  const body = { system: [{ id: "sys-0", text: "be brief" }], tools: [] };
  store.setPrefix(sessionId, { ...body, fingerprint: hashJson(body) } satisfies StablePrefix, null);
});

afterEach(() => {
  store.close();
  rmSync(home, { recursive: true, force: true });
});

function spawnChild(...args: string[]) {
  return Bun.spawn([process.execPath, CHILD, ...args], { env: { ...process.env, CACHET_HOME: home }, stdout: "pipe", stderr: "pipe" });
}

async function untilReady(child: ReturnType<typeof spawnChild>): Promise<void> {
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  expect(new TextDecoder().decode(value)).toBe("ready\n");
  reader.releaseLock();
}

test("two processes taking turns on one session both get every turn stored, in order, nothing interleaved", async () => {
  const turns = 15;
  const start = String(Date.now() + 400);
  const children = [spawnChild("turns", sessionId, "A", String(turns), start), spawnChild("turns", sessionId, "B", String(turns), start)];
  const results = await Promise.all(children.map(async (child) => ({ code: await child.exited, stderr: await new Response(child.stderr).text() })));
  expect(results).toEqual([{ code: 0, stderr: "" }, { code: 0, stderr: "" }]);

  const entries = store.logEntries(sessionId);
  expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 4 * turns }, (_, i) => i + 1));
  for (let i = 0; i < entries.length; i += 2) {
    const [question, answer] = [entries[i]!.message, entries[i + 1]!.message];
    expect(question.role).toBe("user");
    expect(answer.role).toBe("assistant");
    // The answer belongs to the same turn as the question, and that turn saw every earlier turn.
    expect(answer.id).toBe(question.id.replace("-u", "-a"));
    expect((answer.content[0] as { text: string }).text.endsWith(`after ${i}`)).toBe(true);
  }
  // The processes really ran at the same time: turns alternate between them several times.
  const owners = entries.filter((_, i) => i % 2 === 0).map((e) => e.message.id[0]);
  expect(owners.filter((owner, i) => i > 0 && owner !== owners[i - 1]).length).toBeGreaterThanOrEqual(2);
  for (const tag of ["A", "B"]) {
    const own = entries.filter((e) => e.message.id.startsWith(`${tag}-u`)).map((e) => e.message.id);
    expect(own).toEqual(Array.from({ length: turns }, (_, i) => `${tag}-u${i}`));
  }
}, 60_000);

test("a process killed mid-stream leaves the partial answer marked incomplete, and the session takes a new turn", async () => {
  store.appendMessage(sessionId, { id: "u0", role: "user", content: [{ type: "text", text: "hi" }] });
  store.appendMessage(sessionId, { id: "a0", role: "assistant", content: [{ type: "text", text: "hello" }] });
  const child = spawnChild("crash", sessionId);
  await untilReady(child);
  child.kill("SIGKILL");
  expect(await child.exited).not.toBe(0);

  const resumed = openStore();
  const loaded = resumed.loadSession(sessionId);
  expect(loaded.messages.map((m) => m.id)).toEqual(["u0", "a0", "crash-u", "crash-a"]);
  expect(loaded.messages[3]).toEqual({ id: "crash-a", role: "assistant", content: [{ type: "text", text: "Once upon a" }], incomplete: true });
  const release = await resumed.acquireTurn(sessionId, { waitMs: 5_000 });
  resumed.appendMessage(sessionId, { id: "u1", role: "user", content: [{ type: "text", text: "go on" }] });
  release();
  expect(resumed.loadSession(sessionId).messages.map((m) => m.id)).toEqual(["u0", "a0", "crash-u", "crash-a", "u1"]);
  resumed.close();
}, 30_000);

test("the lease of a killed holder is taken over without waiting for it to expire", async () => {
  const child = spawnChild("hold", sessionId);
  await untilReady(child);
  child.kill("SIGKILL");
  await child.exited;
  const started = Date.now();
  const release = await store.acquireTurn(sessionId, { waitMs: 5_000 });
  expect(Date.now() - started).toBeLessThan(5_000);
  release();
}, 30_000);

test("a live holder makes a second taker wait, then fail with SESSION_CONFLICT; release lets it in", async () => {
  const release = await store.acquireTurn(sessionId);
  let error: unknown;
  try {
    await store.acquireTurn(sessionId, { waitMs: 150 });
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("SESSION_CONFLICT");
  expect((error as Error).message).toContain(`process ${process.pid}`);
  const waiting = store.acquireTurn(sessionId, { waitMs: 5_000 });
  setTimeout(release, 50);
  (await waiting)();
});

test("a lease from another host is honoured until it expires, then taken over", async () => {
  const db = new Database(store.path);
  db.query("INSERT INTO turn_leases (session_id, owner_pid, host, token, expires_at) VALUES (?, 1, 'elsewhere', 't_x', ?)").run(sessionId, Date.now() + 60_000);
  let error: unknown;
  try {
    await store.acquireTurn(sessionId, { waitMs: 100 });
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("SESSION_CONFLICT");
  db.query("UPDATE turn_leases SET expires_at = ? WHERE session_id = ?").run(Date.now() - 1, sessionId);
  db.close();
  (await store.acquireTurn(sessionId, { waitMs: 1_000 }))();
});

test("the holder refreshes its lease while it holds it", async () => {
  const release = await store.acquireTurn(sessionId, { leaseMs: 90 });
  const db = new Database(store.path, { readonly: true });
  const expiry = () => (db.query("SELECT expires_at FROM turn_leases WHERE session_id = ?").get(sessionId) as { expires_at: number }).expires_at;
  const first = expiry();
  // Bounded poll for the refresh (a 90 ms lease is refreshed well within it), not a fixed wait.
  for (let i = 0; i < 250 && expiry() === first; i++) await Bun.sleep(20);
  expect(expiry()).toBeGreaterThan(first);
  release();
  expect(db.query("SELECT * FROM turn_leases").all()).toEqual([]);
  db.close();
});

test("fencing: once another process took the lease over, every write of the old holder to the session is refused and changes nothing", async () => {
  const release = await store.acquireTurn(sessionId);
  store.appendMessage(sessionId, { id: "q1", role: "user", content: [{ type: "text", text: "before the takeover" }] });
  // Another process takes the session over (as after the old holder stalled past its expiry).
  const db = new Database(store.path);
  db.query("UPDATE turn_leases SET token = 't_thief', owner_pid = 1, host = 'elsewhere' WHERE session_id = ?").run(sessionId);
  const refused = (write: () => unknown): string | undefined => {
    try {
      write();
    } catch (error) {
      return isCachetError(error) ? `${error.code}: ${error.message}` : String(error);
    }
    return undefined;
  };
  expect(refused(() => store.appendMessage(sessionId, { id: "a1", role: "assistant", content: [{ type: "text", text: "late" }] }))).toBe(
    `SESSION_CONFLICT: this process's turn lease on session ${sessionId} was taken over by process 1 on elsewhere; the write was refused`,
  );
  expect(refused(() => store.setModel(sessionId, "openai/gpt-5"))).toStartWith("SESSION_CONFLICT");
  expect(store.logEntries(sessionId).map((e) => e.message.id)).toEqual(["q1"]);
  // The thief releases; the old holder's release leaves the thief's row alone.
  release();
  expect((db.query("SELECT token FROM turn_leases WHERE session_id = ?").get(sessionId) as { token: string }).token).toBe("t_thief");
  db.close();
  // Without a lease (or with a new one) the process writes again.
  store.appendMessage(sessionId, { id: "a1", role: "assistant", content: [{ type: "text", text: "answer" }] });
  expect(store.logEntries(sessionId).map((e) => e.message.id)).toEqual(["q1", "a1"]);
});

for (const delayed of [false, true]) {
  test(`the lease is refreshed from a worker thread${delayed ? " started after a delay" : ""}: long synchronous work on the main thread does not let it expire`, async () => {
    const release = await store.acquireTurn(sessionId, { leaseMs: 600, ...(delayed ? { keeperDelayMs: 1_000 } : {}) });
    const db = new Database(store.path, { readonly: true });
    const expiry = () => (db.query("SELECT expires_at FROM turn_leases WHERE session_id = ?").get(sessionId) as { expires_at: number }).expires_at;
    // Let the keeper start and refresh once, then block this thread for three lease lifetimes.
    const taken = expiry();
    for (let i = 0; i < 100 && expiry() === taken; i++) await Bun.sleep(20);
    expect(expiry()).toBeGreaterThan(taken);
    const busyUntil = Date.now() + 1_500;
    let spins = 0;
    while (Date.now() < busyUntil) spins++;
    expect(spins).toBeGreaterThan(0);
    // Still unexpired right after the blocking work: another process could not have taken it over.
    expect(expiry()).toBeGreaterThan(Date.now());
    release();
    db.close();
  });
}

test("startSession creates a session with its stable prefix, leased, in one write; a refused write leaves nothing", async () => {
  const body = { system: [{ id: "sys-0", text: "answer in French" }], tools: [] };
  const prefix = { ...body, fingerprint: hashJson(body) } satisfies StablePrefix;
  const { loaded, release } = store.startSession({ model: "openai/gpt-5", name: "fresh", prefix }, { waitMs: 0 });
  expect(loaded).toEqual(store.loadSession("fresh"));
  expect(loaded.prefix.version).toBe(1);
  expect(loaded.prefix.prefix.fingerprint).toBe(prefix.fingerprint);
  // Leased by this live process: another taker waits, then gives up.
  let error: unknown;
  try {
    await store.acquireTurn(loaded.session.id, { waitMs: 50 });
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("SESSION_CONFLICT");
  release();
  (await store.acquireTurn(loaded.session.id, { waitMs: 0 }))();
  // The name is taken: nothing of the second session is written, neither its row nor a lease.
  const db = new Database(store.path, { readonly: true });
  const counts = () => db.query("SELECT (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM prefixes) AS prefixes, (SELECT count(*) FROM turn_leases) AS leases").get();
  const before = counts();
  try {
    store.startSession({ model: "openai/gpt-5", name: "fresh", prefix });
    error = undefined;
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("SESSION_CONFLICT");
  expect(counts()).toEqual(before);
  db.close();
});

test("beginTurn marks the in-flight rows a stopped process left as lost, in the write that takes the lease", async () => {
  const row = (id: string, status: "in_flight" | "ok") => ({
    id, sessionId, attempt: 1, prefixVersion: 1, role: "main" as const, provider: "openai", model: "gpt-5", protocol: "openai-chat" as const,
    startedAt: 1000, firstTokenAt: null, finishedAt: null, latencyMs: null, ttftMs: null, outputTps: null,
    usage: { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined },
    rawUsage: null, costUsd: null, noCacheCostUsd: null, costEstimate: null, providerCostUsd: null, providerRequestId: null, affinityKey: null,
    cacheMode: "auto" as const, cacheTtl: "5m" as const, chain: [], expectedCacheRead: null, cacheableMax: null, status, error: null, messageId: null, finishReason: null,
  });
  store.recordRequest(row("r_1", "ok"));
  store.recordRequest(row("r_2", "in_flight"));
  store.recordRequest(row("r_3", "in_flight"));
  const { release, lost } = await store.beginTurn(sessionId);
  expect(lost).toBe(2);
  expect(store.requests(sessionId).map((r) => [r.id, r.status])).toEqual([["r_1", "ok"], ["r_2", "lost"], ["r_3", "lost"]]);
  release();
  const again = await store.beginTurn(sessionId);
  expect(again.lost).toBe(0);
  again.release();
});

test("taking the turn lease of an unknown session is SESSION_NOT_FOUND and stores nothing", async () => {
  const taking = store.beginTurn("s_missing");
  await expect(taking).rejects.toMatchObject({ code: "SESSION_NOT_FOUND", message: 'no session "s_missing"' });
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  expect(db.query("SELECT session_id FROM turn_leases").all()).toEqual([]);
  db.close();
});

test("findOrCreateNamed leases the session it creates in the same write; one it finds is left for the caller to lease", async () => {
  const body = { system: [], tools: [] };
  const prefix = { ...body, fingerprint: hashJson(body) } satisfies StablePrefix;
  const first = store.findOrCreateNamed({ name: "named", model: "openai/gpt-5", prefix });
  expect(first.created).toBe(true);
  expect(store.loadSession("named").prefix.prefix.fingerprint).toBe(prefix.fingerprint);
  const again = store.findOrCreateNamed({ name: "named", model: "openai/gpt-5", prefix });
  expect(again).toEqual({ session: first.session, created: false });
  let error: unknown;
  try {
    await store.acquireTurn(first.session.id, { waitMs: 50 });
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("SESSION_CONFLICT");
  if (first.created) first.release();
  (await store.acquireTurn(first.session.id, { waitMs: 0 }))();
});
