/**
 * A new session's first turn that ends before anything is stored in it leaves
 * no session, however it ends, through the compiled binary: a plugin that
 * calls process.exit (in a hook or in its adapter, with and without a running
 * daemon), a SIGKILL, a plugin hook that throws. `cachet sessions` lists none,
 * `-c` finds none, a NAME starts afresh, and the next turn removes the row an
 * abrupt end left in the store. A first turn whose request was sent keeps its
 * session even without an answer: the ledger row of the attempt stays.
 *
 * Every wait is on an event: a file the test plugin writes, the socket answering.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(cleanHomes);

/** A plugin whose `request:before` hook calls process.exit(7): the turn ends after its session row was written, before its prompt. */
const EXIT_IN_HOOK = `export default { name: "quitter", api: 1, setup(api) { api.hook("request:before", () => { process.exit(7); }); } };\n`;

/** A provider plugin whose adapter's render() calls process.exit(7). */
const EXIT_IN_ADAPTER = `export default { name: "acme", api: 1, setup(api) {
  api.provider({ id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"], defaultBaseUrl: "https://api.acme.invalid/v1", emulatorPath: "/acme/v1",
    create(config) { const base = api.adapter("openai-compatible", config); return { ...base, render() { process.exit(7); } }; } });
} };
`;

/** Writes `ready` into $GATE_DIR from its hook, then blocks the thread until the process is killed. */
const BLOCK_IN_HOOK = `import { writeFileSync } from "node:fs";
export default { name: "blocker", api: 1, setup(api) { api.hook("request:before", () => {
  writeFileSync(process.env.GATE_DIR + "/ready", "");
  for (;;) Bun.sleepSync(50);
}); } };
`;

const THROW_IN_HOOK = `export default { name: "thrower", api: 1, setup(api) { api.hook("request:before", () => { throw new Error("no"); }); } };\n`;

function plugin(home: string, name: string, text: string): string {
  const path = join(home, name);
  writeFileSync(path, text);
  return path;
}

/** Every session row in the store, read directly: what `cachet sessions` hides is still seen here. */
function sessionRows(home: string): { id: string; name: string | null }[] {
  if (!existsSync(join(home, "cachet.db"))) return [];
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    return db.query("SELECT id, name FROM sessions ORDER BY rowid").all() as { id: string; name: string | null }[];
  } finally {
    db.close();
  }
}

/** `cachet sessions --json`, parsed: one object per listed session. */
async function listed(home: string): Promise<{ id: string; name: string | null; messages: number; requests: number }[]> {
  const r = await cachet(["sessions", "--json"], { home });
  expect(r.code).toBe(0);
  return r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** What `-c` says with no session to continue. */
const NOTHING_TO_CONTINUE = "cachet: there is no session to continue: none is stored";

describe("a plugin calling process.exit during a new session's first turn", () => {
  for (const [where, text, model] of [
    ["a request:before hook", EXIT_IN_HOOK, []],
    ["its adapter's render()", EXIT_IN_ADAPTER, ["-m", "acme/m1"]],
  ] as const) {
    test(`in ${where}: exit 7; no session is listed or continued, and the next turn removes the row it left`, async () => {
      const home = freshHome();
      const env = { CACHET_PLUGINS: plugin(home, "p.mjs", text), CACHET_NO_DAEMON: "1" };
      const run = await cachet(["--emulate", ...model, "first question"], { home, env });
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 7, stdout: "" });
      const [left] = sessionRows(home);
      expect(left).toBeDefined();
      expect(await listed(home)).toEqual([]);
      const cont = await cachet(["--emulate", "-c", "again"], { home });
      expect(cont.code).toBe(2);
      expect(cont.stderr).toContain(NOTHING_TO_CONTINUE);
      expect(sessionRows(home)).toEqual([]);

      const next = await cachet(["--emulate", "a new question"], { home });
      expect(next.code).toBe(0);
      const sessions = await listed(home);
      expect(sessions).toMatchObject([{ messages: 2, requests: 1 }]);
      expect(sessions[0]!.id).not.toBe(left!.id);
    });
  }

  test("with a daemon running (it declines the plugin's turn, which runs in the client): the same, and the daemon's next turn removes the row", async () => {
    const home = freshHome();
    const base = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CACHET_HOME: home, NO_COLOR: "1" };
    const daemon = Bun.spawn([BINARY, "daemon", "run", "--idle", "10m"], { env: base, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    try {
      for (let s = await cachet(["daemon", "status"], { home }); s.code !== 0; s = await cachet(["daemon", "status"], { home })) {
        if (daemon.exitCode !== null) throw new Error("the daemon ended before it served");
      }
      const run = await cachet(["--emulate", "first question"], { home, env: { CACHET_PLUGINS: plugin(home, "p.mjs", EXIT_IN_HOOK) } });
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 7, stdout: "" });
      expect(sessionRows(home)).toHaveLength(1);
      expect(await listed(home)).toEqual([]);
      const next = await cachet(["--emulate", "--debug", "a new question"], { home });
      expect(next.code).toBe(0);
      expect(next.stderr).not.toContain("declined");
      expect(await listed(home)).toMatchObject([{ messages: 2, requests: 1 }]);
      expect(sessionRows(home)).toHaveLength(1);
    } finally {
      await cachet(["daemon", "stop"], { home });
      daemon.kill();
      await daemon.exited;
    }
  }, 30_000);

  test("in a named session's first turn: the NAME starts afresh next time", async () => {
    const home = freshHome();
    const run = await cachet(["--emulate", "--session", "work", "first question"], { home, env: { CACHET_PLUGINS: plugin(home, "p.mjs", EXIT_IN_HOOK), CACHET_NO_DAEMON: "1" } });
    expect(run.code).toBe(7);
    const [left] = sessionRows(home);
    expect(left).toMatchObject({ name: "work" });
    expect(await listed(home)).toEqual([]);
    const next = await cachet(["--emulate", "--session", "work", "-s", "another system prompt", "first question again"], { home });
    expect(next.code).toBe(0);
    const [session] = await listed(home);
    expect(session).toMatchObject({ name: "work", messages: 2, requests: 1 });
    expect(session!.id).not.toBe(left!.id);
    // A new session's prefix, not a change of the dead one's.
    const show = await cachet(["export", "work"], { home });
    const prefixes = show.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.type === "prefix");
    expect(prefixes).toHaveLength(1);
  });
});

test("SIGKILL while a plugin hook runs before the first prompt is stored: the same as process.exit", async () => {
  const home = freshHome();
  const gate = freshHome();
  const proc = Bun.spawn([BINARY, "--emulate", "first question"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CACHET_HOME: home, NO_COLOR: "1", CACHET_NO_DAEMON: "1", CACHET_PLUGINS: plugin(gate, "block.mjs", BLOCK_IN_HOOK), GATE_DIR: gate },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  });
  const deadline = Date.now() + 20_000;
  while (!existsSync(join(gate, "ready"))) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error("the run did not reach the plugin's hook");
    await Bun.sleep(5);
  }
  proc.kill("SIGKILL");
  await proc.exited;
  const [left] = sessionRows(home);
  expect(left).toBeDefined();
  expect(await listed(home)).toEqual([]);
  const next = await cachet(["--emulate", "a new question"], { home });
  expect(next.code).toBe(0);
  const shown = await cachet(["sessions", "show", left!.id], { home });
  expect(shown.code).toBe(2);
  expect(sessionRows(home).map((r) => r.id)).not.toContain(left!.id);
  expect(await listed(home)).toHaveLength(1);
});

test("a hook that throws on the first turn: exit 1 and no session, as process.exit; a provider error after sending keeps the session with its ledger row", async () => {
  const home = freshHome();
  const thrown = await cachet(["--emulate", "first question"], { home, env: { CACHET_PLUGINS: plugin(home, "t.mjs", THROW_IN_HOOK), CACHET_NO_DAEMON: "1" } });
  expect(thrown.code).toBe(1);
  expect(sessionRows(home)).toEqual([]);
  expect((await cachet(["--emulate", "-c", "again"], { home })).stderr).toContain(NOTHING_TO_CONTINUE);

  // Sent and refused (HTTP 500): the attempt is billed-or-not evidence, so its session stays (README: the prompt is rolled back, the ledger keeps the attempt).
  const refused = await cachet(["--emulate", "--retries", "0", "first question"], { home, env: { CACHET_EMULATOR_FAULT: "500" } });
  expect(refused.code).toBe(4);
  expect(await listed(home)).toMatchObject([{ messages: 0, requests: 1 }]);
  const cont = await cachet(["--emulate", "-c", "first question"], { home });
  expect(cont.code).toBe(0);
  expect(await listed(home)).toMatchObject([{ messages: 2, requests: 2 }]);
});
