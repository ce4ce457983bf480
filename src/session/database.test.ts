import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isCachetError } from "../errors.ts";
import { MIGRATIONS } from "./schema.ts";
import { openStore } from "./store.ts";

const CHILD = join(import.meta.dir, "test-child.ts");
const homes: string[] = [];

function freshHome(): string {
  const home = mkdtempSync(join(tmpdir(), "cachet-db-"));
  homes.push(home);
  return home;
}

afterEach(() => {
  for (const home of homes.splice(0)) {
    chmodSync(home, 0o755);
    rmSync(home, { recursive: true, force: true });
  }
});

test("eight processes opening a fresh store at once, 20 rounds: every one opens it and stores its turn", async () => {
  const processes = 8;
  const rounds = 20;
  // Rounds use separate homes, so a few run side by side to keep the test short; the race is within a round.
  const sideBySide = 5;
  const round = async (index: number): Promise<string[]> => {
    const home = freshHome();
    const start = String(Date.now() + 150);
    const children = Array.from({ length: processes }, (_, i) =>
      Bun.spawn([process.execPath, CHILD, "fresh", `p${i}`, start], { env: { ...process.env, CACHET_HOME: home }, stdout: "pipe", stderr: "pipe" }),
    );
    const results = await Promise.all(children.map(async (child) => ({ code: await child.exited, stderr: await new Response(child.stderr).text() })));
    const failures = results.flatMap((result, i) => (result.code === 0 ? [] : [`round ${index} process ${i}: ${result.stderr.trim()}`]));
    if (failures.length > 0) return failures;
    const store = openStore(join(home, "cachet.db"), { readonly: true });
    expect(store.listSessions().map((s) => s.name).sort()).toEqual(Array.from({ length: processes }, (_, i) => `p${i}`));
    for (const session of store.listSessions()) expect(store.logEntries(session.id).map((e) => e.message.role)).toEqual(["user", "assistant"]);
    store.close();
    return failures;
  };
  const failures: string[] = [];
  for (let first = 0; first < rounds; first += sideBySide) {
    const batch = await Promise.all(Array.from({ length: Math.min(sideBySide, rounds - first) }, (_, i) => round(first + i)));
    failures.push(...batch.flat());
  }
  expect(failures).toEqual([]);
}, 120_000);

test("an upgrade from an older schema is serialized too: the migrations run once, whoever opens first", async () => {
  const home = freshHome();
  const path = join(home, "cachet.db");
  const old = new Database(path);
  old.exec(MIGRATIONS[0]!);
  old.exec("PRAGMA user_version = 1");
  old.close();
  const start = String(Date.now() + 150);
  const children = Array.from({ length: 4 }, (_, i) => Bun.spawn([process.execPath, CHILD, "fresh", `p${i}`, start], { env: { ...process.env, CACHET_HOME: home }, stderr: "pipe" }));
  expect(await Promise.all(children.map((child) => child.exited))).toEqual([0, 0, 0, 0]);
  const db = new Database(path, { readonly: true });
  expect((db.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(MIGRATIONS.length);
  db.close();
});

test("reading a store that does not exist yet creates nothing and finds no sessions", () => {
  const home = freshHome();
  const store = openStore(join(home, "state", "cachet.db"), { readonly: true });
  expect(store.listSessions()).toEqual([]);
  expect(store.latestSession()).toBeNull();
  store.close();
  expect(readdirSync(home)).toEqual([]);
});

test("a read-only store refuses writes with a STORE error naming the file, and changes nothing", () => {
  const home = freshHome();
  const path = join(home, "cachet.db");
  const writer = openStore(path);
  const session = writer.createSession({ model: "openai/gpt-5", name: "kept" });
  writer.close();
  const reader = openStore(path, { readonly: true });
  expect(reader.findSession("kept").id).toBe(session.id);
  let error: unknown;
  try {
    reader.createSession({ model: "openai/gpt-5", name: "new" });
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("STORE");
  expect((error as Error).message).toContain(path);
  reader.close();
  const check = openStore(path, { readonly: true });
  expect(check.listSessions().map((s) => s.name)).toEqual(["kept"]);
  check.close();
  expect(existsSync(path)).toBe(true);
});

test("a full disk: the write that does not fit is a STORE error naming the file, rolled back whole; what was stored before is kept", () => {
  const home = freshHome();
  const path = join(home, "cachet.db");
  const store = openStore(path);
  const session = store.createSession({ model: "openai/gpt-5", name: "kept" });
  store.appendMessage(session.id, { id: "q1", role: "user", content: [{ type: "text", text: "short question" }] });
  // SQLite's own size cap stands in for the disk: no page beyond the current ones can be allocated (SQLITE_FULL).
  const { page_count: pages } = store.database.query("PRAGMA page_count").get() as { page_count: number };
  store.database.exec(`PRAGMA max_page_count = ${pages}`);
  let error: unknown;
  try {
    store.appendMessage(session.id, { id: "a1", role: "assistant", content: [{ type: "text", text: "x".repeat(200_000) }] });
  } catch (e) {
    error = e;
  }
  expect(isCachetError(error) && error.code).toBe("STORE");
  expect((error as Error).message).toStartWith(`cannot write the session store ${path}: `);
  expect((error as { hint: string }).hint).toBe("check free disk space and permissions; this write was rolled back whole, and what was stored before it is kept");
  expect(store.logEntries(session.id).map((e) => e.message.id)).toEqual(["q1"]);
  store.close();
});
