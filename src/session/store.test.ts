import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import type { Message, StablePrefix } from "../context/types.ts";
import { isCachetError } from "../errors.ts";
import { storeFile } from "../paths.ts";
import { hashJson } from "../wire/hash.ts";
import { PART_CHARS } from "./message-parts.ts";
import { MIGRATIONS } from "./schema.ts";
import { openStore, type Store } from "./store.ts";
import type { ChainLink, LedgerRow } from "./types.ts";

let home: string;
let store: Store;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "cachet-store-"));
  process.env.CACHET_HOME = home;
  store = openStore();
});

afterEach(() => {
  store.close();
  rmSync(home, { recursive: true, force: true });
});

function prefix(system: string): StablePrefix {
  const body = { system: [{ id: "sys-0", text: system }], tools: [] };
  return { ...body, fingerprint: hashJson(body) };
}

function user(id: string, text: string): Message {
  return { id, role: "user", content: [{ type: "text", text }] };
}

function assistant(id: string, text: string): Message {
  return { id, role: "assistant", content: [{ type: "text", text }] };
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isCachetError(error) ? error.code : `not a CachetError: ${String(error)}`;
  }
  return undefined;
}

function link(i: number, breakpoint?: "5m" | "1h"): ChainLink {
  const l: ChainLink = { nodeId: `n${i}`, kind: "message", content: i.toString(16).padStart(16, "0"), prefix: (i * 7919).toString(16).padStart(16, "0"), tokens: 10 + i };
  if (breakpoint) l.breakpoint = breakpoint;
  return l;
}

function row(id: string, sessionId: string, startedAt: number, chain: ChainLink[], providerRequestId: string | null = null): LedgerRow {
  return {
    id, sessionId, prefixVersion: 1, role: "main", provider: "anthropic", model: "claude-sonnet-4-5", protocol: "anthropic-messages",
    startedAt, firstTokenAt: startedAt + 100, finishedAt: startedAt + 900, latencyMs: 900, ttftMs: 100, outputTps: 42.5,
    usage: { input: 12, cacheRead: 3000, cacheWrite5m: 40, cacheWrite1h: undefined, output: 80, reasoning: undefined },
    rawUsage: { input_tokens: 12, cache_read_input_tokens: 3000, cache_creation_input_tokens: 40, output_tokens: 80 },
    costUsd: 0.0019, providerCostUsd: null, providerRequestId, affinityKey: sessionId, cacheMode: "auto", cacheTtl: "5m",
    chain, expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId: null,
  };
}

describe("store file", () => {
  test("is created under CACHET_HOME in WAL mode at the latest schema version", () => {
    expect(store.path).toBe(storeFile());
    expect(store.path.startsWith(home)).toBe(true);
    const db = new Database(store.path, { readonly: true });
    expect((db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(MIGRATIONS.length);
    db.close();
  });

  test("a file that is not SQLite is a STORE error naming the path, and is left untouched", () => {
    const path = join(home, "junk", "cachet.db");
    openStore(join(home, "junk", "x.db")).close();
    writeFileSync(path, "this is my thesis, not a database\n".repeat(200));
    let message = "";
    let hint = "";
    try {
      openStore(path);
    } catch (error) {
      expect(isCachetError(error) && error.code).toBe("STORE");
      message = (error as Error).message;
      hint = (error as { hint: string }).hint;
    }
    expect(message).toContain(path);
    expect(hint).toContain("CACHET_HOME");
    expect(readFileSync(path, "utf8")).toBe("this is my thesis, not a database\n".repeat(200));
  });

  test("a store from a newer cachet is refused", () => {
    const path = join(home, "newer.db");
    const db = new Database(path);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(codeOf(() => openStore(path))).toBe("STORE");
  });

  test("reopening an existing store keeps its data", () => {
    const s = store.createSession({ model: "openai/gpt-5", name: "keep" });
    store.close();
    store = openStore();
    expect(store.findSession("keep").id).toBe(s.id);
  });
});

describe("sessions", () => {
  test("ids are s_ + 12 base32 characters; affinity key defaults to the id", () => {
    const s = store.createSession({ model: "anthropic/claude-sonnet-4-5" });
    expect(s.id).toMatch(/^s_[a-z2-7]{12}$/);
    expect(s.affinityKey).toBe(s.id);
    expect(s.name).toBeNull();
    expect(s.parentId).toBeNull();
    expect(store.findSession(s.id)).toEqual(s);
  });

  test("names are unique, and found by name", () => {
    const s = store.createSession({ model: "openai/gpt-5", name: "work" });
    expect(store.findSession("work").id).toBe(s.id);
    expect(codeOf(() => store.createSession({ model: "openai/gpt-5", name: "work" }))).toBe("SESSION_CONFLICT");
  });

  test("an unknown session is SESSION_NOT_FOUND with a hint to list sessions", () => {
    try {
      store.findSession("nope");
      throw new Error("no throw");
    } catch (error) {
      expect(isCachetError(error) && error.code).toBe("SESSION_NOT_FOUND");
      expect((error as { hint: string }).hint).toContain("cachet sessions");
    }
  });

  test("latestSession is the most recently updated one; a new session with nothing stored is neither latest nor listed", () => {
    expect(store.latestSession()).toBeNull();
    const a = store.createSession({ model: "m/a" });
    const b = store.createSession({ model: "m/b" });
    expect(store.latestSession()).toBeNull();
    expect(store.listSessions()).toEqual([]);
    store.setPrefix(b.id, prefix("x"), null);
    store.appendMessage(b.id, user("u0", "first"));
    expect(store.latestSession()!.id).toBe(b.id);
    store.setPrefix(a.id, prefix("x"), null);
    store.appendMessage(a.id, user("u1", "hi"));
    expect(store.latestSession()!.id).toBe(a.id);
    expect(store.listSessions().map((s) => s.id)).toEqual([a.id, b.id]);
  });

  test("dropAbandoned removes the new sessions with nothing stored whose lease holder is gone, and nothing else", () => {
    const started = () => store.startSession({ model: "m/a", prefix: prefix("x") });
    const killed = started();
    const expired = started();
    const running = started();
    const answered = started();
    const billed = started();
    store.appendMessage(answered.loaded.session.id, user("u1", "hi"));
    store.recordRequest(row("r1", billed.loaded.session.id, Date.now(), []));
    const ids = [killed, expired, running, answered, billed].map((s) => s.loaded.session.id);
    // A process of this host that has ended holds one; another host's holder let the other expire unrefreshed.
    const ended = Bun.spawnSync(["true"]).pid;
    store.database.query("UPDATE turn_leases SET owner_pid = ? WHERE session_id IN (?, ?, ?)").run(ended, ids[0]!, ids[3]!, ids[4]!);
    store.database.query("UPDATE turn_leases SET host = 'elsewhere', token = 'theirs', expires_at = 0 WHERE session_id = ?").run(ids[1]!);
    expect(store.dropAbandoned().sort()).toEqual([ids[0]!, ids[1]!].sort());
    for (const id of ids.slice(0, 2)) expect(() => store.findSession(id)).toThrow(`no session "${id}"`);
    expect(store.listSessions().map((s) => s.id).sort()).toEqual([ids[3]!, ids[4]!].sort());
    // Still held by this live process: a first turn under way, not listed yet, not removed.
    expect(store.findSession(ids[2]!).id).toBe(ids[2]!);
    expect(store.dropAbandoned()).toEqual([]);
    for (const s of [killed, expired, running, answered, billed]) s.release();
  });

  test("a fork with nothing of its own stored is a shell like a new session: not listed, not latest, removed by dropShell or, abandoned, by dropAbandoned", () => {
    const parent = store.startSession({ model: "m/a", prefix: prefix("x") });
    const parentId = parent.loaded.session.id;
    store.appendMessage(parentId, user("u1", "hi"));
    store.appendMessage(parentId, assistant("a1", "hello"));
    parent.release();
    const fork = () => store.startSession({ model: "m/a", parentId, forkPoint: "a1", prefix: prefix("x") });
    const refused = fork();
    const killed = fork();
    const kept = fork();
    // The shared messages are the parent's rows: the forks' visible logs hold them, their own rows are none.
    expect(store.sessionCounts(refused.loaded.session.id)).toEqual({ messages: 2, requests: 0 });
    expect(store.listSessions().map((s) => s.id)).toEqual([parentId]);
    expect(store.latestSession()!.id).toBe(parentId);

    expect(store.dropShell(refused.loaded.session.id)).toBe(true);
    refused.release();
    store.appendMessage(kept.loaded.session.id, user("u2", "branch"));
    expect(store.dropShell(kept.loaded.session.id)).toBe(false);
    kept.release();
    const ended = Bun.spawnSync(["true"]).pid;
    store.database.query("UPDATE turn_leases SET owner_pid = ? WHERE session_id = ?").run(ended, killed.loaded.session.id);
    expect(store.dropAbandoned()).toEqual([killed.loaded.session.id]);
    killed.release();
    expect(store.forksOf(parentId).map((s) => s.id)).toEqual([kept.loaded.session.id]);
    expect(store.listSessions().map((s) => s.id)).toEqual([kept.loaded.session.id, parentId]);
  });

  test("dropAbandonedForks removes the shells under a session that no turn holds, a chain of them too, and keeps a fork whose first turn is under way", () => {
    const parent = store.startSession({ model: "m/a", prefix: prefix("x") });
    const parentId = parent.loaded.session.id;
    store.appendMessage(parentId, user("u1", "hi"));
    parent.release();
    // Left without a lease, as a cachet before the rule left a refused fork, and forked again by a bare --fork.
    const leaked = store.createSession({ model: "m/a", parentId, forkPoint: "u1" });
    const leakedChild = store.createSession({ model: "m/a", parentId: leaked.id, forkPoint: "u1" });
    const running = store.startSession({ model: "m/a", parentId, forkPoint: "u1", prefix: prefix("x") });
    expect(codeOf(() => store.removalOf(parentId))).toBe("SESSION_HAS_FORKS");
    expect(store.dropAbandonedForks(parentId)).toEqual([leakedChild.id, leaked.id]);
    expect(store.removalOf(parentId, { force: true })).toEqual([parentId, running.loaded.session.id]);
    expect(store.dropAbandonedForks(parentId)).toEqual([]);
    running.release();
    expect(store.dropAbandonedForks(parentId)).toEqual([running.loaded.session.id]);
    expect(store.removalOf(parentId)).toEqual([parentId]);
  });
});

describe("stable prefix", () => {
  test("a new version only when the fingerprint changes", () => {
    const s = store.createSession({ model: "m/a" });
    expect(store.currentPrefix(s.id)).toBeNull();
    const v1 = store.setPrefix(s.id, prefix("You are terse."), "ignored for version 1");
    expect(v1.version).toBe(1);
    expect(v1.reason).toBeNull();
    expect(store.setPrefix(s.id, prefix("You are terse."), "system changed").version).toBe(1);
    const v2 = store.setPrefix(s.id, prefix("You are verbose."), "system changed");
    expect(v2.version).toBe(2);
    expect(v2.reason).toBe("system changed");
    expect(v2.prefix.system[0]!.text).toBe("You are verbose.");
    expect(store.currentPrefix(s.id)!.version).toBe(2);
    expect(store.prefixVersions(s.id).map((v) => v.version)).toEqual([1, 2]);
  });

  test("loadSession without a prefix is a STORE error", () => {
    const s = store.createSession({ model: "m/a" });
    expect(codeOf(() => store.loadSession(s.id))).toBe("STORE");
  });
});

describe("log", () => {
  test("messages come back in order, byte-identical, tool arguments untouched", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    const args = '{ "b":1,  "a" : [2, 1.50] }';
    const call: Message = { id: "a1", role: "assistant", content: [{ type: "thinking", text: "hm", signature: "sig==" }, { type: "tool_use", id: "tu1", name: "calc", arguments: args }] };
    const result: Message = { id: "u2", role: "user", content: [{ type: "tool_result", toolUseId: "tu1", content: "3", isError: false }] };
    store.appendMessage(s.id, user("u1", "héllo \u2028 😀"));
    store.appendMessage(s.id, call);
    store.appendMessage(s.id, result);
    const loaded = store.loadSession(s.id);
    expect(loaded.messages).toEqual([user("u1", "héllo \u2028 😀"), call, result]);
    expect(JSON.stringify(loaded.messages[1])).toBe(JSON.stringify(call));
    expect((loaded.messages[1]!.content[1] as { arguments: string }).arguments).toBe(args);
    expect(store.logEntries(s.id).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(loaded.summary).toEqual({ messages: [], coversThrough: null });
  });

  test("a read snapshot sees the log as its first read found it, while another connection writes; its end sees the writes", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "a"));
    const reader = openStore(undefined, { readonly: true });
    try {
      const end = reader.readSnapshot();
      expect([...reader.storedLog(s.id)].map((m) => m.id)).toEqual(["u1"]);
      store.appendMessage(s.id, assistant("a1", "b"));
      expect([...reader.storedLog(s.id)].map((m) => m.id)).toEqual(["u1"]);
      expect(reader.requests(s.id)).toEqual([]);
      end();
      end();
      expect([...reader.storedLog(s.id)].map((m) => m.id)).toEqual(["u1", "a1"]);
    } finally {
      reader.close();
    }
  });

  test("loaded messages are frozen and the returned array is the caller's", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "a"));
    const first = store.loadSession(s.id).messages;
    first.push(user("u2", "local only"));
    expect(() => {
      (first[0]!.content[0] as { text: string }).text = "changed";
    }).toThrow();
    expect(store.loadSession(s.id).messages).toEqual([user("u1", "a")]);
  });

  test("an existing message id is never rewritten; a retried identical append is a no-op", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "a"));
    store.appendMessage(s.id, user("u1", "a"));
    expect(codeOf(() => store.appendMessage(s.id, user("u1", "b")))).toBe("STORE");
    expect(store.loadSession(s.id).messages).toEqual([user("u1", "a")]);
  });

  test("appending to an unknown session is SESSION_NOT_FOUND", () => {
    expect(codeOf(() => store.appendMessage("s_missing", user("u1", "a")))).toBe("SESSION_NOT_FOUND");
  });

  test("a partial answer is updated while incomplete, then finalized, then frozen", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "q"));
    store.appendMessage(s.id, { ...assistant("a1", ""), incomplete: true });
    expect(store.loadSession(s.id).messages[1]).toEqual({ ...assistant("a1", ""), incomplete: true });
    store.updatePartial(s.id, "a1", [{ type: "text", text: "Hel" }], true);
    expect(store.loadSession(s.id).messages[1]).toEqual({ ...assistant("a1", "Hel"), incomplete: true });
    store.updatePartial(s.id, "a1", [{ type: "text", text: "Hello." }], false);
    const done = store.loadSession(s.id).messages[1]!;
    expect(done).toEqual(assistant("a1", "Hello."));
    expect("incomplete" in done).toBe(false);
    expect(codeOf(() => store.updatePartial(s.id, "a1", [{ type: "text", text: "rewrite" }], false))).toBe("STORE");
    expect(codeOf(() => store.updatePartial(s.id, "u1", [{ type: "text", text: "rewrite" }], true))).toBe("STORE");
    expect(store.loadSession(s.id).messages[1]).toEqual(assistant("a1", "Hello."));
  });

  test("another process's appends are seen by an already-loaded store", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "a"));
    store.appendMessage(s.id, { ...assistant("a1", "par"), incomplete: true });
    expect(store.loadSession(s.id).messages).toHaveLength(2);
    const other = openStore();
    other.updatePartial(s.id, "a1", [{ type: "text", text: "partial, then done" }], false);
    other.appendMessage(s.id, user("u2", "b"));
    other.close();
    expect(store.loadSession(s.id).messages).toEqual([user("u1", "a"), assistant("a1", "partial, then done"), user("u2", "b")]);
  });

  test("summary state is saved and loaded with the session", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "a"));
    const summary = { messages: [user("sum1", "Summary: the user said a.")], coversThrough: "u1" };
    store.saveSummary(s.id, summary);
    expect(store.loadSession(s.id).summary).toEqual(summary);
  });

  test("the summary state loads as the same frozen messages until it changes, in this process or another", () => {
    const s = store.createSession({ model: "m/a" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "a"));
    store.saveSummary(s.id, { messages: [user("sum1", "Summary: a.")], coversThrough: "u1" });
    const first = store.loadSession(s.id).summary;
    // The same objects on the next load: memos keyed on the summary messages (the render memo) keep their work.
    expect(store.loadSession(s.id).summary.messages[0]).toBe(first.messages[0]!);
    expect(Object.isFrozen(first.messages[0])).toBe(true);
    store.saveSummary(s.id, { messages: [...first.messages, user("sum2", "Summary: b.")], coversThrough: "u1" });
    expect(store.loadSession(s.id).summary.messages.map((m) => m.id)).toEqual(["sum1", "sum2"]);
    const other = openStore();
    other.saveSummary(s.id, { messages: [user("sum3", "Summary: c.")], coversThrough: null });
    other.close();
    expect(store.loadSession(s.id).summary).toEqual({ messages: [user("sum3", "Summary: c.")], coversThrough: null });
  });
});

describe("forks", () => {
  function parentWithLog(): string {
    const p = store.createSession({ model: "m/a", name: "parent" });
    store.setPrefix(p.id, prefix("p"), null);
    for (let i = 1; i <= 3; i++) {
      store.appendMessage(p.id, user(`u${i}`, `q${i}`));
      store.appendMessage(p.id, assistant(`a${i}`, `r${i}`));
    }
    return p.id;
  }

  test("a fork sees the parent's messages up to the fork point, then its own, and the parent is unaffected", () => {
    const p = parentWithLog();
    const f = store.createSession({ model: "m/a", parentId: p, forkPoint: "a2", affinityKey: store.findSession(p).affinityKey });
    expect(f.parentId).toBe(p);
    expect(f.forkPoint).toBe("a2");
    expect(f.affinityKey).toBe(p);
    store.appendMessage(f.id, user("fu1", "branch"));
    const loaded = store.loadSession(f.id);
    expect(loaded.messages.map((m) => m.id)).toEqual(["u1", "a1", "u2", "a2", "fu1"]);
    expect(loaded.prefix.prefix.fingerprint).toBe(prefix("p").fingerprint);
    expect(store.loadSession(p).messages.map((m) => m.id)).toEqual(["u1", "a1", "u2", "a2", "u3", "a3"]);
    // The parent going on after the fork changes nothing the fork sees, also for an already-loaded fork.
    store.appendMessage(p, user("u4", "later"));
    expect(store.loadSession(f.id).messages.map((m) => m.id)).toEqual(["u1", "a1", "u2", "a2", "fu1"]);
    // Shared, not copied: the fork owns exactly one message row.
    expect(store.logEntries(f.id).filter((e) => e.sessionId === f.id)).toHaveLength(1);
    expect(store.sessionCounts(f.id)).toEqual({ messages: 5, requests: 0 });
  });

  test("forks of forks resolve recursively, including a fork point inside the grandparent's part", () => {
    const p = parentWithLog();
    const f1 = store.createSession({ model: "m/a", parentId: p, forkPoint: "a3" });
    store.appendMessage(f1.id, user("f1u", "x"));
    store.appendMessage(f1.id, assistant("f1a", "y"));
    const f2 = store.createSession({ model: "m/a", parentId: f1.id });
    expect(f2.forkPoint).toBe("f1a");
    store.appendMessage(f2.id, user("f2u", "z"));
    expect(store.loadSession(f2.id).messages.map((m) => m.id)).toEqual(["u1", "a1", "u2", "a2", "u3", "a3", "f1u", "f1a", "f2u"]);
    const f3 = store.createSession({ model: "m/a", parentId: f1.id, forkPoint: "a1" });
    store.appendMessage(f3.id, user("f3u", "w"));
    expect(store.loadSession(f3.id).messages.map((m) => m.id)).toEqual(["u1", "a1", "f3u"]);
  });

  test("a fork point that is not in the parent is refused", () => {
    const p = parentWithLog();
    expect(codeOf(() => store.createSession({ model: "m/a", parentId: p, forkPoint: "nope" }))).toBe("INPUT_INVALID");
    expect(codeOf(() => store.createSession({ model: "m/a", parentId: "s_unknown" }))).toBe("SESSION_NOT_FOUND");
  });

  test("removing a parent with forks needs force, and force removes the forks; removing a fork keeps the parent's shared rows", () => {
    const p = parentWithLog();
    const f = store.createSession({ model: "m/a", parentId: p, forkPoint: "a1" });
    store.appendMessage(f.id, user("fu", "x"));
    expect(codeOf(() => store.removeSession(p))).toBe("SESSION_HAS_FORKS");
    expect(store.removeSession(f.id)).toEqual([f.id]);
    expect(store.loadSession(p).messages).toHaveLength(6);
    const g = store.createSession({ model: "m/a", parentId: p });
    const gg = store.createSession({ model: "m/a", parentId: g.id });
    expect(store.removeSession("parent", { force: true })).toEqual([p, g.id, gg.id]);
    expect(store.listSessions()).toEqual([]);
  });

  test("a fork inherits the summary only when the fork point is at or after what it covers", () => {
    const p = parentWithLog();
    const summary = { messages: [user("s1", "so far")], coversThrough: "a1" };
    store.saveSummary(p, summary);
    const late = store.createSession({ model: "m/a", parentId: p, forkPoint: "a2" });
    const early = store.createSession({ model: "m/a", parentId: p, forkPoint: "u1" });
    expect(store.loadSession(late.id).summary).toEqual(summary);
    expect(store.loadSession(early.id).summary).toEqual({ messages: [], coversThrough: null });
  });
});

describe("ledger", () => {
  test("rows round-trip with usage unknowns kept as undefined, in start order", () => {
    const s = store.createSession({ model: "m/a" });
    const r1 = row("r_1", s.id, 1000, [link(0), link(1, "5m")], "msg_1");
    const r2 = row("r_2", s.id, 2000, [link(0), link(1), link(2), link(3, "5m")], "msg_2");
    store.recordRequest(r2);
    store.recordRequest(r1);
    expect(store.requests(s.id)).toEqual([r1, r2]);
    expect(store.request("r_2")).toEqual(r2);
    expect(store.lastRequest(s.id)).toEqual(r2);
    expect(store.request("r_1").usage.cacheWrite1h).toBeUndefined();
    expect(codeOf(() => store.request("r_x"))).toBe("SESSION_NOT_FOUND");
  });

  test("a provider request id used twice keeps both rows (case 46); a ledger id used twice is an error that writes nothing", () => {
    const s = store.createSession({ model: "m/a" });
    const f = store.createSession({ model: "m/a", parentId: s.id });
    store.recordRequest(row("r_1", s.id, 1000, [link(0)], "chatcmpl-fixed"));
    store.recordRequest(row("r_2", f.id, 1001, [link(0)], "chatcmpl-fixed"));
    store.recordRequest(row("r_3", f.id, 1002, [link(0)], null));
    expect(codeOf(() => store.recordRequest(row("r_3", f.id, 1003, [link(1)], null)))).toBe("STORE");
    expect(codeOf(() => store.recordRequest(row("r_4", "s_missing", 1004, [link(0)], null)))).toBe("SESSION_NOT_FOUND");
    expect(store.ledger({}).map((r) => [r.id, r.providerRequestId])).toEqual([["r_1", "chatcmpl-fixed"], ["r_2", "chatcmpl-fixed"], ["r_3", null]]);
    expect(store.ledger({ sessionId: f.id, since: 1002 }).map((r) => r.id)).toEqual(["r_3"]);
  });

  test("attempt number and the lower-bound flag of a cut stream's usage read back", () => {
    const s = store.createSession({ model: "m/a" });
    store.recordRequest({ ...row("r_1", s.id, 1000, [link(0)]), status: "error", attempt: 1, usageLowerBound: true });
    store.recordRequest({ ...row("r_2", s.id, 1001, [link(0)]), attempt: 2 });
    expect(store.requests(s.id).map((r) => [r.attempt ?? 1, r.usageLowerBound ?? false])).toEqual([[1, true], [2, false]]);
  });

  test("updateRequest patches fields; an unknown id is an error", () => {
    const s = store.createSession({ model: "m/a" });
    store.recordRequest(row("r_1", s.id, 1000, [link(0)], "msg_1"));
    store.recordRequest({ ...row("r_2", s.id, 2000, [link(0)], null), status: "incomplete" });
    store.updateRequest("r_2", { status: "ok", providerRequestId: "msg_1", costUsd: 0.5, usage: { input: 1, cacheRead: 2, cacheWrite5m: 0, cacheWrite1h: 0, output: 3, reasoning: undefined } });
    const updated = store.request("r_2");
    expect(updated.status).toBe("ok");
    expect(updated.providerRequestId).toBe("msg_1");
    expect(updated.usage).toEqual({ input: 1, cacheRead: 2, cacheWrite5m: 0, cacheWrite1h: 0, output: 3, reasoning: undefined });
    expect(updated.chain).toEqual([link(0)]);
    expect(codeOf(() => store.updateRequest("r_x", { status: "ok" }))).toBe("SESSION_NOT_FOUND");
  });

  test("other sessions' requests: each other session's latest settled row of the same provider and model, in the window, oldest first", () => {
    const [a, b, c, d] = [1, 2, 3, 4].map(() => store.createSession({ model: "anthropic/claude-sonnet-4-5" }));
    const noUsage = { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined };
    store.recordRequest(row("r_a1", a!.id, 1000, [link(0), link(1)]));
    store.recordRequest(row("r_a2", a!.id, 2000, [link(0), link(1), link(2)]));
    store.recordRequest(row("r_b1", b!.id, 3000, [link(0), link(5)]));
    // Neither an unsettled row, another model's, nor one started after the current request counts.
    store.recordRequest({ ...row("r_b2", b!.id, 3500, []), status: "in_flight", usage: noUsage });
    store.recordRequest({ ...row("r_c1", c!.id, 4000, [link(0)]), model: "claude-opus-4-6" });
    store.recordRequest(row("r_c2", c!.id, 9000, [link(0)]));
    store.recordRequest(row("r_d1", d!.id, 500, [link(0)]));
    const current = { sessionId: d!.id, provider: "anthropic", model: "claude-sonnet-4-5", startedAt: 5000 };
    const found = store.otherSessionsRequests(current, 1000, 16);
    expect(found.map((r) => r.id)).toEqual(["r_a2", "r_b1"]);
    expect(found[0]!.chain).toEqual([link(0), link(1), link(2)]);
    // The window starts at `since`; at most `sessions` sessions, the latest ones.
    expect(store.otherSessionsRequests(current, 2500, 16).map((r) => r.id)).toEqual(["r_b1"]);
    expect(store.otherSessionsRequests(current, 0, 1).map((r) => r.id)).toEqual(["r_b1"]);
  });

  test("latest settled rows, oldest first, read back as stored after every kind of later write", () => {
    const s = store.createSession({ model: "m/a" });
    const figured = (id: string, startedAt: number): LedgerRow => ({ ...row(id, s.id, startedAt, [link(0), link(startedAt)]), noCacheCostUsd: 0.01 });
    store.recordRequest(figured("r_1", 1000));
    store.recordRequest({ ...figured("r_2", 2000), status: "in_flight" });
    store.recordRequest(figured("r_3", 3000));
    store.recordRequest({ ...figured("r_4", 4000), status: "error", usage: { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined } });
    const settled = [figured("r_1", 1000), figured("r_3", 3000)];
    expect(store.recentRequests(s.id, 5)).toEqual(settled);
    expect(store.recentRequests(s.id, 1)).toEqual([settled[1]!]);
    // Read again (kept rows): the same values, and a record a caller cannot change under the next reader.
    const again = store.lastRequest(s.id)!;
    expect(again).toEqual(settled[1]!);
    expect(Object.isFrozen(again)).toBe(true);
    store.updateRequest("r_3", { costUsd: 0.5 });
    expect(store.lastRequest(s.id)!.costUsd).toBe(0.5);
    // A row recorded without figures is priced later by `cachet stats`, possibly in another process.
    store.recordRequest(row("r_5", s.id, 5000, [link(0)]));
    expect(store.lastRequest(s.id)!.noCacheCostUsd).toBeUndefined();
    const other = openStore();
    expect(other.figures().backfill(() => 0.25)).toBe(1);
    expect(store.recentRequests(s.id, 2).map((r) => [r.id, r.noCacheCostUsd])).toEqual([["r_3", 0.01], ["r_5", 0.25]]);
    // Rows removed with their session by another process are gone.
    other.removeSession(s.id);
    other.close();
    expect(store.recentRequests(s.id, 5)).toEqual([]);
    expect(store.lastRequest(s.id)).toBeNull();
  });

  test("a settled row this process committed is kept as a fresh store reads it from the file, every field", () => {
    const s = store.createSession({ model: "m/a" });
    const rows: LedgerRow[] = [
      { ...row("r_1", s.id, 1000, [link(0), link(1, "5m")], "msg_1"), noCacheCostUsd: 0.01 },
      {
        ...row("r_2", s.id, 2000, [link(0), link(1), link(2, "1h")]),
        noCacheCostUsd: null, costEstimate: "no price for the model", expectedCacheRead: 3000, cacheableMax: 3040, finishReason: "length", attempt: 2, usageLowerBound: true,
        requestForm: "incremental", serviceTier: "priority", providerCostUsd: 0.002, error: "cut short",
        rawUsage: { input_tokens: 12, nested: { big: 1e300, list: [1, "two", null] } },
      },
      { ...row("r_3", s.id, 3000, [link(0), link(3)]), noCacheCostUsd: 0, status: "error", usage: { input: 0, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined } },
    ];
    for (const r of rows) store.recordRequest(r);
    // A change behind the store's back (no cachet process changes a settled, figured row) shows which rows
    // come from this process's memory: a store that reads the file sees it.
    const db = new Database(storeFile());
    db.exec("UPDATE requests SET cost_usd = 9 WHERE id = 'r_1'");
    db.close();
    const other = openStore();
    try {
      const kept = store.recentRequests(s.id, 5);
      const read = other.recentRequests(s.id, 5);
      expect(kept.map((r) => r.costUsd)).toEqual([0.0019, 0.0019, 0.0019]);
      expect(read.map((r) => r.costUsd)).toEqual([9, 0.0019, 0.0019]);
      expect(kept).toStrictEqual([{ ...read[0]!, costUsd: 0.0019 }, ...read.slice(1)]);
    } finally {
      other.close();
    }
  });

  test("under the turn lease, the latest settled rows follow this process's writes, and the next lease sees another process's", async () => {
    const s = store.createSession({ model: "m/a" });
    const ok = (id: string, startedAt: number): LedgerRow => ({ ...row(id, s.id, startedAt, [link(0), link(startedAt)]), noCacheCostUsd: 0.01 });
    const ids = (limit: number) => store.recentRequests(s.id, limit).map((r) => r.id);
    store.recordRequest(ok("r_1", 1000));
    const release = await store.acquireTurn(s.id);
    expect(ids(1)).toEqual(["r_1"]);
    store.recordRequest({ ...ok("r_2", 2000), status: "in_flight" });
    expect(ids(5)).toEqual(["r_1"]);
    // The turn's final rows replace its in-flight one; a retried attempt started earlier sorts before the last row.
    store.transaction(() => {
      store.discardRequests(s.id, ["r_2"]);
      store.recordRequest(ok("r_2", 2000));
      store.recordRequest(ok("r_0", 1500));
    });
    expect(ids(5)).toEqual(["r_1", "r_0", "r_2"]);
    expect(store.lastRequest(s.id)!.id).toBe("r_2");
    store.updateRequest("r_2", { status: "lost", usage: { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined } });
    expect(ids(2)).toEqual(["r_1", "r_0"]);
    store.recordRequest(ok("r_4", 2500));
    expect(ids(5)).toEqual(["r_1", "r_0", "r_4"]);
    release();
    // Another process's turn, then this process's next one.
    const other = openStore();
    const releaseOther = await other.acquireTurn(s.id);
    other.recordRequest(ok("r_3", 3000));
    releaseOther();
    other.close();
    const again = await store.acquireTurn(s.id);
    expect(ids(5)).toEqual(["r_1", "r_0", "r_4", "r_3"]);
    again();
  });

  test("hash chains stored as deltas read back exactly across many requests, moved breakpoints included", () => {
    const s = store.createSession({ model: "m/a" });
    const chains: ChainLink[][] = [];
    for (let turn = 0; turn < 40; turn++) {
      const chain = Array.from({ length: 2 * turn + 2 }, (_, i) => link(i));
      chain[chain.length - 1] = link(chain.length - 1, "5m");
      if (turn % 7 === 3) chain[0] = link(999);
      chains.push(chain);
      store.recordRequest(row(`r_${turn}`, s.id, 1000 + turn, chain, `p_${turn}`));
    }
    expect(store.requests(s.id).map((r) => r.chain)).toEqual(chains);
    // Stored as deltas: most rows keep only the two new links (plus the moved breakpoint) in their tail.
    const db = new Database(store.path, { readonly: true });
    const stored = db.query("SELECT chain_depth AS depth, json_array_length(chain_tail) AS tail FROM requests ORDER BY started_at").all() as { depth: number; tail: number }[];
    db.close();
    // Turn 17 changed the first link and turn 18 changed it back, so 18 is a full chain and 20 its second delta.
    expect(stored[18]).toEqual({ depth: 0, tail: 38 });
    expect(stored[20]).toEqual({ depth: 2, tail: 3 });
    expect(Math.max(...stored.map((r) => r.depth))).toBeLessThanOrEqual(16);
    const fresh = openStore();
    expect(fresh.request("r_39").chain).toEqual(chains[39]!);
    expect(fresh.lastRequest(s.id)!.chain).toEqual(chains[39]!);
    fresh.recordRequest(row("r_40", s.id, 2000, [...chains[39]!, link(500)], "p_40"));
    expect(fresh.request("r_40").chain).toEqual([...chains[39]!, link(500)]);
    fresh.close();
  });
});

describe("token memo", () => {
  test("counts are kept by content hash across store instances", () => {
    store.saveNodeTokens([["aaaa", 12], ["bbbb", 7]]);
    const fresh = openStore();
    const many = Array.from({ length: 600 }, (_, i) => [`h${i}`, i] as [string, number]);
    fresh.saveNodeTokens(many);
    const got = fresh.nodeTokens(["aaaa", "bbbb", "cccc", ...many.map(([h]) => h)]);
    expect(got.get("aaaa")).toBe(12);
    expect(got.get("bbbb")).toBe(7);
    expect(got.has("cccc")).toBe(false);
    expect(got.get("h599")).toBe(599);
    expect(got.size).toBe(602);
    fresh.close();
  });
});

describe("write failures", () => {
  test("a store that refuses writes is a STORE error naming the file, and nothing stored is lost", () => {
    const s = store.createSession({ model: "m/a", name: "ro" });
    store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(s.id, user("u1", "kept"));
    // Simulate a store that became read-only under us (permissions changed, disk remounted).
    (store as unknown as { db: Database }).db.exec("PRAGMA query_only = ON");
    let error: unknown;
    try {
      store.appendMessage(s.id, user("u2", "lost?"));
    } catch (e) {
      error = e;
    }
    expect(isCachetError(error) && error.code).toBe("STORE");
    expect((error as Error).message).toContain(store.path);
    (store as unknown as { db: Database }).db.exec("PRAGMA query_only = OFF");
    expect(store.loadSession("ro").messages).toEqual([user("u1", "kept")]);
  });
});

describe("a huge message is stored in parts", () => {
  test("content beyond one part is read back whole (also through a second store and after the message is taken back out); the parts row count matches", () => {
    const s = store.createSession({ model: "openai/gpt-5" });
    store.setPrefix(s.id, prefix("sys"), null);
    const text = `déjà 😀 "quoted" ${"a line of input\n".repeat((PART_CHARS * 2.5) / 16)}`;
    const huge = user("m_huge", text);
    store.appendMessage(s.id, user("m_small", "small"));
    store.appendMessage(s.id, assistant("m_answer", "ok"));
    store.appendMessage(s.id, huge);
    // Appending the same message again is a no-op, not a conflict.
    store.appendMessage(s.id, huge);
    const other = openStore();
    try {
      const messages = other.loadSession(s.id).messages;
      expect(messages.map((m) => m.id)).toEqual(["m_small", "m_answer", "m_huge"]);
      expect(messages[2]!.content).toEqual([{ type: "text", text }]);
    } finally {
      other.close();
    }
    const db = new Database(storeFile(), { readonly: true });
    try {
      const { parts } = db.query("SELECT parts FROM messages WHERE id = 'm_huge'").get() as { parts: number };
      expect(parts).toBe(2);
      expect((db.query("SELECT COUNT(*) AS n FROM message_parts WHERE message_id = 'm_huge'").get() as { n: number }).n).toBe(2);
      expect(store.rollbackUnanswered(s.id, "m_huge")).toBe(true);
      expect((db.query("SELECT COUNT(*) AS n FROM message_parts").get() as { n: number }).n).toBe(0);
    } finally {
      db.close();
    }
    expect(store.loadSession(s.id).messages.map((m) => m.id)).toEqual(["m_small", "m_answer"]);
  });

  test("releasing at close (a resident process keeps its connection and caches): a log of over 4 Mi characters is read again, a small one stays cached", () => {
    const small = store.createSession({ model: "m/a" });
    const large = store.createSession({ model: "m/a" });
    for (const s of [small, large]) store.setPrefix(s.id, prefix("p"), null);
    store.appendMessage(small.id, user("u_small", "a short question"));
    store.appendMessage(large.id, user("u_large", "x".repeat((4 << 20) + 1)));
    const smallBefore = store.loadSession(small.id).messages[0];
    const largeBefore = store.loadSession(large.id).messages[0];
    // What Store.close does before closing a connection (which a resident process keeps open).
    (store as unknown as { log: { releaseLarge(): void } }).log.releaseLarge();
    expect(store.loadSession(small.id).messages[0]).toBe(smallBefore!);
    const largeAfter = store.loadSession(large.id).messages[0];
    expect(largeAfter).not.toBe(largeBefore!);
    expect(largeAfter).toEqual(largeBefore!);
  });
});
