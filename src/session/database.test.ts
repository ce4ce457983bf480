import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isCachetError } from "../errors.ts";
import { storeOpenError } from "./database.ts";
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
  writer.appendMessage(session.id, { id: "q1", role: "user", content: [{ type: "text", text: "listed once something is stored" }] });
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

test("a store that cannot be opened gets the hint of its cause: a full disk, a failing disk, or a file that may not be cachet's", () => {
  const home = freshHome();
  const path = join(home, "cachet.db");
  // SQLite's own SQLITE_FULL, from its size cap standing in for the disk.
  const db = new Database(":memory:");
  db.exec("PRAGMA max_page_count = 1");
  let full: unknown;
  try {
    db.exec("CREATE TABLE a (x); CREATE TABLE b (x)");
  } catch (e) {
    full = e;
  }
  db.close();
  expect((full as { code: string }).code).toBe("SQLITE_FULL");
  const hintOf = (error: unknown) => {
    const mapped = storeOpenError(error, path);
    return { code: mapped.code, message: mapped.message, hint: mapped.hint };
  };
  const onDisk = `free disk space on the file system holding ${home}`;
  expect(hintOf(full)).toEqual({
    code: "STORE",
    message: `cannot open the session store ${path}: database or disk is full`,
    hint: `${onDisk}, or set CACHET_HOME to a directory on another one; nothing stored was changed`,
  });
  // Making the file on a full disk fails before SQLite opens it.
  expect(hintOf(Object.assign(new Error("ENOSPC: no space left on device, open"), { code: "ENOSPC" })).hint).toStartWith(onDisk);
  // What a full tmpfs gives for a store that exists (its WAL index cannot grow), as seen on a 64 KiB tmpfs.
  expect(hintOf(Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR_SHMSIZE" }))).toEqual({
    code: "STORE",
    message: `cannot open the session store ${path}: disk I/O error (SQLITE_IOERR_SHMSIZE)`,
    hint: `${onDisk} and check the system log for disk errors, or set CACHET_HOME to a directory on another disk`,
  });
  // A file that is not an SQLite database at all: the only cause whose hint is to move it away.
  writeFileSync(path, "not a database, but long enough to have a header that SQLite reads and refuses ".repeat(20));
  let notADatabase: unknown;
  try {
    openStore(path).close();
  } catch (e) {
    notADatabase = e;
  }
  expect(isCachetError(notADatabase) && notADatabase.hint).toBe("if that file is not cachet's store, move it away, or set CACHET_HOME to another directory");
  expect(((notADatabase as Error).cause as { code: string }).code).toBe("SQLITE_NOTADB");
});
