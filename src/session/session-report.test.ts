import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StablePrefix } from "../context/types.ts";
import { hashJson } from "../wire/hash.ts";
import { PART_CHARS } from "./message-parts.ts";
import { detailsJsonPieces, exportPieces, formatSessionDetails, formatSessionList, listSessions, sessionOverview } from "./session-report.ts";
import { openStore, type Store } from "./store.ts";
import type { LedgerRow } from "./types.ts";

const MAIN = join(import.meta.dir, "..", "cli", "main.ts");
let home: string;
let store: Store;
let parent: string;
let fork: string;

function prefix(text: string): StablePrefix {
  const body = { system: [{ id: "sys-0", text }], tools: [{ name: "calc", parameters: { type: "object" } }] };
  return { ...body, fingerprint: hashJson(body) };
}

function ledgerRow(id: string, sessionId: string, startedAt: number): LedgerRow {
  return {
    id, sessionId, prefixVersion: 1, role: "main", provider: "openai", model: "gpt-5", protocol: "openai-responses",
    startedAt, firstTokenAt: null, finishedAt: startedAt + 500, latencyMs: 500, ttftMs: null, outputTps: null,
    usage: { input: 100, cacheRead: 1024, cacheWrite5m: undefined, cacheWrite1h: undefined, output: 20, reasoning: 0 },
    rawUsage: { input_tokens: 1124 }, costUsd: 0.00042, providerCostUsd: null, providerRequestId: `resp_${id}`,
    affinityKey: sessionId, cacheMode: "auto", cacheTtl: "5m", chain: [{ nodeId: "sys-0", kind: "system", content: "00000000000000aa", prefix: "00000000000000bb", tokens: 1024 }],
    expectedCacheRead: null, cacheableMax: null, status: "ok", error: null, messageId: "a1",
  };
}

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "cachet-report-"));
  process.env.CACHET_HOME = home;
  store = openStore();
  parent = store.createSession({ model: "openai/gpt-5", name: "main" }).id;
  store.setPrefix(parent, prefix("be brief"), null);
  store.setPrefix(parent, prefix("be very brief"), "system changed");
  store.appendMessage(parent, { id: "u1", role: "user", content: [{ type: "text", text: "2+2?" }] });
  store.appendMessage(parent, { id: "a1", role: "assistant", content: [{ type: "tool_use", id: "t1", name: "calc", arguments: '{"x":"2+2"}' }] });
  store.recordRequest(ledgerRow("r_1", parent, 1_000));
  fork = store.createSession({ model: "openai/gpt-5", parentId: parent }).id;
  store.appendMessage(fork, { id: "u2", role: "user", content: [{ type: "text", text: "and 3+3?" }] });
  store.appendMessage(fork, { id: "a2", role: "assistant", content: [{ type: "text", text: "6" }], incomplete: true });
  store.recordRequest(ledgerRow("r_2", fork, 2_000));
});

afterEach(() => {
  store.close();
  rmSync(home, { recursive: true, force: true });
});

async function cli(...args: string[]) {
  const child = Bun.spawn([process.execPath, MAIN, ...args], { env: { ...process.env, CACHET_HOME: home, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, code };
}

describe("library", () => {
  test("export lines: session, prefixes, messages (shared ones name the parent), requests", () => {
    const text = [...exportPieces(store, fork)].join("");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.slice(0, -1).split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.type)).toEqual(["session", "prefix", "message", "message", "message", "message", "request"]);
    expect(lines[0].session.id).toBe(fork);
    expect(lines[1].prefix.prefix.system[0].text).toBe("be very brief");
    expect(lines.slice(2, 6).map((l) => [l.sessionId, l.seq, l.message.id])).toEqual([[parent, 1, "u1"], [parent, 2, "a1"], [fork, 1, "u2"], [fork, 2, "a2"]]);
    expect(lines[3].message.content[0].arguments).toBe('{"x":"2+2"}');
    expect(lines[5].message.incomplete).toBe(true);
    expect(lines[6].request.id).toBe("r_2");
    expect(lines[6].request.usage).toEqual({ input: 100, cacheRead: 1024, output: 20, reasoning: 0 });
  });

  test("listing counts shared messages and shows the fork's parent", () => {
    const listings = listSessions(store);
    expect(listings.map((l) => [l.id, l.messages, l.requests])).toEqual([[fork, 4, 1], [parent, 2, 1]]);
    const text = formatSessionList(listings);
    expect(text.split("\n")[0]).toMatch(/^ID\s+NAME\s+MODEL\s+MSGS\s+REQS\s+UPDATED\s+FORK OF\s+SOURCE$/);
    expect(text).toContain(`${parent}  main`);
  });

  test("show lists prefix versions with reasons, messages and requests", () => {
    const text = formatSessionDetails(sessionOverview(store, "main"));
    expect(text).toContain("v1");
    expect(text).toMatch(/v2 .* system changed/);
    expect(text).toContain("[tool_use calc]");
    expect(text).toMatch(/r_1\s+main\s+openai\/gpt-5\s+ok\s+100\s+1024\s+\?\s+20\s+0\.00042\n/);
  });

  test("show marks a flagged estimate or lower bound with ~, as cost does", () => {
    store.recordRequest({ ...ledgerRow("r_3", parent, 3_000), costUsd: 0.048291, costEstimate: "the stream was cut: at least the output that streamed", usageLowerBound: true });
    const text = formatSessionDetails(sessionOverview(store, "main"));
    expect(text).toMatch(/r_1 .* 0\.00042\n/);
    expect(text).toMatch(/r_3 .* ~0\.048291\n/);
  });
});

describe("a message stored in parts (a huge input)", () => {
  // Escapes, CJK, an emoji split across parts, and a block after the long text.
  const long = `${"Ünïcode 缓存 \"quoted\"\n😀 ".repeat(Math.ceil((3 * PART_CHARS) / 20))}end`;
  const content = [{ type: "text" as const, text: `  first   words ${long}` }, { type: "tool_use" as const, id: "t9", name: "after", arguments: "{}" }];

  test("export writes it exactly as JSON.stringify of the whole entry, in pieces of about a part", () => {
    store.appendMessage(fork, { id: "big", role: "user", content });
    const pieces = [...exportPieces(store, fork)];
    const lines = pieces.join("").slice(0, -1).split("\n");
    const entry = store.logEntries(fork).at(-1)!;
    expect(lines.at(-2)).toBe(JSON.stringify({ type: "message", sessionId: entry.sessionId, seq: entry.seq, createdAt: entry.createdAt, message: entry.message }));
    expect(JSON.parse(lines.at(-2)!).message.content).toEqual(content);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(JSON.stringify(content).length / 2);
  });

  test("show --json is JSON.stringify of the details, written a part at a time", () => {
    store.appendMessage(fork, { id: "big", role: "user", content, incomplete: true });
    const pieces = [...detailsJsonPieces(store, fork)];
    const details = { session: store.findSession(fork), prefixes: store.prefixVersions(fork), summary: store.summary(fork), messages: store.logEntries(fork), requests: store.requests(fork) };
    expect(pieces.join("")).toBe(`${JSON.stringify(details)}\n`);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(JSON.stringify(content).length / 2);
  });

  test("show previews it from its first part, marked as cut", () => {
    store.appendMessage(fork, { id: "big", role: "user", content });
    const big = sessionOverview(store, fork).messages.at(-1)!;
    expect(big).toMatchObject({ id: "big", role: "user", incomplete: false });
    // Spaces collapsed, each line break shown as `\n` (as every user text cachet prints), 72 characters with the "…".
    expect(big.preview).toBe('first words Ünïcode 缓存 "quoted"\\n😀 Ünïcode 缓存 "quoted"\\n😀 Ünïcode 缓存 …');
  });
});

describe("commands", () => {
  test("`cachet sessions --json` prints one JSON line per session", async () => {
    const { stdout, code } = await cli("sessions", "--json");
    expect(code).toBe(0);
    expect(stdout.trim().split("\n").map((l) => JSON.parse(l).id)).toEqual([fork, parent]);
  });

  test("`cachet sessions show` defaults to the latest session", async () => {
    const { stdout, code } = await cli("sessions", "show");
    expect(code).toBe(0);
    expect(stdout).toContain(`session   ${fork}`);
    expect(stdout).toContain(`fork of   ${parent} after message a1`);
    expect(stdout).toContain("a2 (incomplete)");
  });

  test("`cachet export main` writes JSON lines of that session", async () => {
    const { stdout, code } = await cli("export", "main");
    expect(code).toBe(0);
    const types = stdout.trim().split("\n").map((l) => JSON.parse(l).type);
    expect(types).toEqual(["session", "prefix", "prefix", "message", "message", "request"]);
  });

  test("`cachet sessions rm` needs a session, refuses a parent with forks, and removes a fork", async () => {
    expect((await cli("sessions", "rm")).code).toBe(2);
    const refused = await cli("sessions", "rm", "main");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`has forks; --force would remove it and 1 more: ${fork} (fork of main)`);
    expect(refused.stderr).toContain("add --force to remove all 2 sessions");
    const removed = await cli("sessions", "rm", fork, "--json");
    expect(removed.code).toBe(0);
    // Its one ledger row (r_2, $0.00042) goes with it, and rm says so.
    expect(JSON.parse(removed.stdout)).toEqual({ removed: [fork], ledgerRows: 1, costUsd: 0.00042, costExact: "0.00042", unpricedRows: 0 });
    const after = openStore();
    expect(after.listSessions().map((s) => s.id)).toEqual([parent]);
    expect(after.loadSession(parent).messages.map((m) => m.id)).toEqual(["u1", "a1"]);
    after.close();
  });

  test("an unknown session is a usage error with a hint", async () => {
    const { code, stderr } = await cli("export", "nope");
    expect(code).toBe(2);
    expect(stderr).toContain('no session "nope"');
    expect(stderr).toContain("cachet sessions");
  });

  test("a store path that is not SQLite is reported with the path", async () => {
    store.close();
    const file = join(home, "cachet.db");
    rmSync(file);
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
    await Bun.write(file, "not a database, keep me");
    const { code, stderr } = await cli("sessions");
    expect(code).toBe(1);
    expect(stderr).toContain(file);
    expect(await Bun.file(file).text()).toBe("not a database, keep me");
    store = openStore(join(home, "other.db"));
  });
});
