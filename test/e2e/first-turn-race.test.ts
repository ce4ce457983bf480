/**
 * Another process's turn meeting a new session's first turn, through the compiled binary. Run A holds its first
 * turn of `--session team` in a request:before hook until the test lets it go (a file), then the hook throws: the
 * turn ends before its prompt is stored, and its session is removed. Run B, started meanwhile, waits on the lease
 * and then stores its own turn under the NAME (README: a NAME it was started under starts afresh; two scripts are
 * serialized); a fork of A's session by id is refused naming that id; `sessions rm team` says there was nothing to
 * remove. While A's turn holds, `sessions show`, `export`, `cost` and `why` say the session is not there yet, as
 * `sessions` does not list it. `why SESSION` on a session whose only request is in flight says so as `why r_…` does.
 *
 * Every wait is on an event: a file the plugin writes, a line on a waiter's stderr, the emulator's request log.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, until, homeEnv } from "./harness.ts";
import { listed, sessionRows } from "./session-rows.ts";
import { against, startEmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

/**
 * Writes `ready` into $GATE_DIR from its hook and waits (a directory watch) for the test to write `go` there; then refuses the request
 * when $GATE_THROW is set, else lets it on unchanged (to a refusal by the budget).
 */
const GATE = `import { existsSync, watch, writeFileSync } from "node:fs";
export default { name: "gate", api: 1, setup(api) { api.hook("request:before", async (request) => {
  const dir = process.env.GATE_DIR;
  // Watched before it is written: a "go" written meanwhile is seen by the check right after the watch starts.
  await new Promise((resolve) => {
    const watcher = watch(dir, () => existsSync(dir + "/go") && (watcher.close(), resolve()));
    writeFileSync(dir + "/ready", "");
    if (existsSync(dir + "/go")) (watcher.close(), resolve());
  });
  if (process.env.GATE_THROW) throw new Error("refused by the gate");
  return request;
}); } };
`;

/** A process of the binary whose stderr is read as it comes, so a test can wait for a line. */
function spawnCachet(home: string, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([BINARY, ...args], {
    env: { ...homeEnv(home), CACHET_NO_DAEMON: "1", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { stdout: new Response(proc.stdout).text(), stderr: "" };
  const decoder = new TextDecoder();
  const drained = (async () => {
    for await (const chunk of proc.stderr) out.stderr += decoder.decode(chunk, { stream: true });
  })();
  const done = async () => {
    const code = await proc.exited;
    await drained;
    return { code, stdout: await out.stdout, stderr: out.stderr };
  };
  return { proc, out, done };
}

/** How A's held first turn ends when the test lets it: its hook throws (exit 1), the budget refuses it (exit 6), SIGINT (exit 130). */
type Ending = "throw" | "budget" | "signal";
const EXIT: Record<Ending, number> = { throw: 1, budget: 6, signal: 130 };

/** Starts A, the first turn of `--session team`, held in its hook; resolves once the hook runs. `refuse` lets it end as `how` says. */
async function heldFirstTurn(home: string, how: Ending = "throw") {
  const gate = freshHome();
  const plugin = join(gate, "gate.mjs");
  writeFileSync(plugin, GATE);
  const budget = how === "budget" ? ["--max-cost", "0.0000001"] : [];
  const a = spawnCachet(home, ["--emulate", ...budget, "--session", "team", "first"], { CACHET_PLUGINS: plugin, GATE_DIR: gate, ...(how === "throw" ? { GATE_THROW: "1" } : {}) });
  await until("A's hook to run", () => {
    if (a.proc.exitCode !== null) throw new Error(`A ended before its hook ran: ${a.out.stderr}`);
    return existsSync(join(gate, "ready"));
  });
  const [shell] = sessionRows(home);
  expect(shell).toMatchObject({ name: "team" });
  return { a, shellId: shell!.id, refuse: () => (how === "signal" ? a.proc.kill("SIGINT") : writeFileSync(join(gate, "go"), "")) };
}

const WAITING = "is running a turn";

describe("a new session's first turn refused while another run waits on it", () => {
  for (const how of ["throw", "budget", "signal"] as const) {
    test(`a run waiting on the same NAME stores its turn under the NAME, in a session of its own (exit 0): A ended by ${how}`, async () => {
      const home = freshHome();
      const { a, shellId, refuse } = await heldFirstTurn(home, how);
      const b = spawnCachet(home, ["--emulate", "--session", "team", "second"]);
      await until("B to say it waits", () => b.out.stderr.includes(WAITING));
      refuse();
      const [ranA, ranB] = await Promise.all([a.done(), b.done()]);
      expect(ranA.code).toBe(EXIT[how]);
      expect(ranB.stderr).not.toContain("no session");
      expect(ranB.code).toBe(0);
      expect(ranB.stdout).not.toBe("");
      const sessions = await listed(home);
      expect(sessions).toMatchObject([{ name: "team", messages: 2, requests: 1 }]);
      expect(sessions[0]!.id).not.toBe(shellId);
      const exported = await cachet(["export", "team"], { home });
      const prompts = exported.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.type === "message" && l.message?.role === "user");
      expect(JSON.stringify(prompts)).toContain("second");
      expect(JSON.stringify(prompts)).not.toContain("first");
    });
  }

  test("a fork of the vanished session by its id is refused naming that id (exit 2), and stores nothing", async () => {
    const home = freshHome();
    const { a, shellId, refuse } = await heldFirstTurn(home);
    const b = spawnCachet(home, ["--emulate", `--fork=${shellId}`, "a branch"]);
    await until("B to say it waits", () => b.out.stderr.includes(WAITING));
    refuse();
    const [ranA, ranB] = await Promise.all([a.done(), b.done()]);
    expect(ranA.code).toBe(1);
    expect(ranB.code).toBe(2);
    expect(ranB.stderr).toContain(`cachet: no session "${shellId}"`);
    expect(sessionRows(home)).toEqual([]);
  });

  test("`sessions rm team` waiting on it says there was nothing to remove, naming team, not the id (exit 2)", async () => {
    const home = freshHome();
    const { a, shellId, refuse } = await heldFirstTurn(home);
    const rm = spawnCachet(home, ["sessions", "rm", "team"]);
    await until("rm to say it waits", () => rm.out.stderr.includes(WAITING));
    refuse();
    const [ranA, ranRm] = await Promise.all([a.done(), rm.done()]);
    expect(ranA.code).toBe(1);
    expect(ranRm.code).toBe(2);
    // The waiting line names the session's id, as a waiting turn's does; the answer names what the user typed.
    const [waiting, ...rest] = ranRm.stderr.split("\n");
    expect(waiting).toStartWith(`cachet: session ${shellId} is running a turn`);
    expect(rest.join("\n")).toStartWith('cachet: no session "team": its first turn ended before anything was stored in it, so there was nothing to remove\n');
    expect(rest.join("\n")).not.toContain(shellId);
    expect(sessionRows(home)).toEqual([]);
  });

  test("while the first turn holds, show, export, cost and why by name say it has no session yet, as `sessions` lists none", async () => {
    const home = freshHome();
    const { a, refuse } = await heldFirstTurn(home);
    try {
      expect(await listed(home)).toEqual([]);
      for (const args of [["sessions", "show", "team"], ["sessions", "show", "team", "--json"], ["export", "team"], ["cost", "team"], ["why", "team"]]) {
        const r = await cachet(args, { home });
        expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
        expect(r.stderr).toContain('cachet: no session "team" yet: its first turn is still running and has stored nothing');
      }
    } finally {
      refuse();
      expect((await a.done()).code).toBe(1);
    }
    // Once the turn is refused the session is gone: the plain answer.
    const shown = await cachet(["sessions", "show", "team"], { home });
    expect(shown.code).toBe(2);
    expect(shown.stderr).toContain('cachet: no session "team"\n');
  });
});

test("`why SESSION` whose only request is in flight says that request never finished, as `why r_…` does", async () => {
  const MODEL = "anthropic/claude-sonnet-4-6";
  const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold:1" });
  try {
    const home = freshHome();
    const target = against(emulator, MODEL);
    const run = spawnCachet(home, [...target.args, "-m", MODEL, "--session", "w", "a question"], target.env);
    await until("the emulator to hold the request", async () => (await emulator.received()).some((r) => r.fault === "hold"));
    const db = new Database(join(home, "cachet.db"), { readonly: true });
    const [row] = db.query("SELECT id, status FROM requests").all() as { id: string; status: string }[];
    db.close();
    expect(row).toMatchObject({ status: "in_flight" });
    const bySession = await cachet(["why", "w"], { home });
    const byRequest = await cachet(["why", row!.id], { home });
    expect(bySession.code).toBe(2);
    expect(bySession.stderr).toContain(`request ${row!.id} never finished (status in_flight): its wire chain and usage were not recorded`);
    expect(bySession.stderr).not.toContain("has no requests");
    expect(bySession).toEqual(byRequest);
    await fetch(`${emulator.url}/_emulator/release`, { method: "POST" });
    expect((await run.done()).code).toBe(0);
    expect((await cachet(["why", "w"], { home })).code).toBe(0);
  } finally {
    emulator.stop();
  }
});
