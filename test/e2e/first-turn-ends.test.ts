/**
 * A new session's first turn that ends before anything is stored in it leaves
 * no session, however it ends, through the compiled binary: a plugin that
 * kills its process (in a hook or in its adapter, with and without a running
 * daemon; a plugin's process.exit is refused, src/plugin/exit-trap.ts), a
 * SIGKILL, a plugin hook that throws. `cachet sessions` lists none,
 * `-c` finds none, a NAME starts afresh. An unnamed session is stored with its
 * first turn's prompt (src/session/store.ts beginSession), so an abrupt end
 * before that leaves no row at all; a named session's row, made at once, is
 * removed by the next turn. A first turn whose request was sent keeps its
 * session even without an answer: the ledger row of the attempt stays. A fork's
 * first turn that ends so leaves no fork, however it ends (the last describe).
 *
 * Every wait is on an event: a file the test plugin writes, the socket answering.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType, type Run, until, homeEnv } from "./harness.ts";
import { listed, sessionRows } from "./session-rows.ts";

afterAll(cleanHomes);

/** A plugin whose `request:before` hook kills its process: the turn ends before its prompt (and an unnamed session) is stored. */
const EXIT_IN_HOOK = `export default { name: "quitter", api: 1, setup(api) { api.hook("request:before", () => { process.kill(process.pid, "SIGKILL"); }); } };\n`;

/** A provider plugin whose adapter's render() kills its process. */
const EXIT_IN_ADAPTER = `export default { name: "acme", api: 1, setup(api) {
  api.provider({ id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"], defaultBaseUrl: "https://api.acme.invalid/v1", emulatorPath: "/acme/v1",
    create(config) { const base = api.adapter("openai-compatible", config); return { ...base, render() { process.kill(process.pid, "SIGKILL"); } }; } });
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

/**
 * Runs cachet with ARGS under `home` with the blocking-hook plugin (its file handed to `env`, which gives the plugin's
 * variables), and SIGKILLs it once the hook runs; throws when the run ended first (or 20 s passed).
 */
async function killedInHook(home: string, args: string[], env: (pluginFile: string) => Record<string, string>): Promise<void> {
  const gate = freshHome();
  const proc = Bun.spawn([BINARY, ...args], {
    env: { ...homeEnv(home), GATE_DIR: gate, ...env(plugin(gate, "block.mjs", BLOCK_IN_HOOK)) },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  });
  await until("the plugin's hook to run", () => existsSync(join(gate, "ready")), () => proc.exitCode === null);
  proc.kill("SIGKILL");
  await proc.exited;
}

function plugin(home: string, name: string, text: string): string {
  const path = join(home, name);
  writeFileSync(path, text);
  return path;
}

/** What `-c` says with no session to continue. */
const NOTHING_TO_CONTINUE = "cachet: there is no session to continue: none is stored";

/** How `Bun.spawn` reports a process ended by SIGKILL: 128 + 9. */
const KILLED = 137;

describe("a plugin killing its process during a new session's first turn", () => {
  for (const [where, text, model] of [
    ["a request:before hook", EXIT_IN_HOOK, []],
    ["its adapter's render()", EXIT_IN_ADAPTER, ["-m", "acme/m1"]],
  ] as const) {
    test(`in ${where}: killed; no session is stored, listed or continued`, async () => {
      const home = freshHome();
      const env = { CACHET_PLUGINS: plugin(home, "p.mjs", text), CACHET_NO_DAEMON: "1" };
      const run = await cachet(["--emulate", ...model, "first question"], { home, env });
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: KILLED, stdout: "" });
      expect(sessionRows(home)).toEqual([]);
      expect(await listed(home)).toEqual([]);
      const cont = await cachet(["--emulate", "-c", "again"], { home });
      expect(cont.code).toBe(2);
      expect(cont.stderr).toContain(NOTHING_TO_CONTINUE);

      const next = await cachet(["--emulate", "a new question"], { home });
      expect(next.code).toBe(0);
      expect(await listed(home)).toMatchObject([{ messages: 2, requests: 1 }]);
      expect(sessionRows(home)).toHaveLength(1);
    });
  }

  test("with a daemon running (it declines the plugin's turn, which runs in the client): the same, and the daemon serves the next turn", async () => {
    const home = freshHome();
    const base = homeEnv(home);
    const daemon = Bun.spawn([BINARY, "daemon", "run", "--idle", "10m"], { env: base, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    try {
      for (let s = await cachet(["daemon", "status"], { home }); s.code !== 0; s = await cachet(["daemon", "status"], { home })) {
        if (daemon.exitCode !== null) throw new Error("the daemon ended before it served");
      }
      const run = await cachet(["--emulate", "first question"], { home, env: { CACHET_PLUGINS: plugin(home, "p.mjs", EXIT_IN_HOOK) } });
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: KILLED, stdout: "" });
      expect(sessionRows(home)).toEqual([]);
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
    expect(run.code).toBe(KILLED);
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

test("SIGKILL while a plugin hook runs before the first prompt is stored: the same as a plugin killing its process", async () => {
  const home = freshHome();
  await killedInHook(home, ["--emulate", "first question"], (file) => ({ CACHET_NO_DAEMON: "1", CACHET_PLUGINS: file }));
  expect(sessionRows(home)).toEqual([]);
  expect(await listed(home)).toEqual([]);
  const next = await cachet(["--emulate", "a new question"], { home });
  expect(next.code).toBe(0);
  expect(await listed(home)).toHaveLength(1);
});

test("SIGKILL while a plugin hook runs in a named session's first turn: its row, made at once, is removed by the next turn", async () => {
  const home = freshHome();
  await killedInHook(home, ["--emulate", "--session", "work", "first question"], (file) => ({ CACHET_NO_DAEMON: "1", CACHET_PLUGINS: file }));
  const [left] = sessionRows(home);
  expect(left).toMatchObject({ name: "work" });
  expect(await listed(home)).toEqual([]);
  const next = await cachet(["--emulate", "a new question"], { home });
  expect(next.code).toBe(0);
  const shown = await cachet(["sessions", "show", left!.id], { home });
  expect(shown.code).toBe(2);
  expect(sessionRows(home).map((r) => r.id)).not.toContain(left!.id);
  expect(await listed(home)).toHaveLength(1);
});

test("a hook that throws on the first turn: exit 1 and no session, as a killed turn leaves none; a provider error after sending keeps the session with its ledger row", async () => {
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

test("a session whose only turn failed before any answer (kept for its ledger row) is passed over by -c and a bare --fork: they take the conversation before it", async () => {
  const home = freshHome();
  const first = await cachet(["--emulate", "--json", "remember PINEAPPLE"], { home });
  expect(first.code).toBe(0);
  const talked = ofType(events(first.stdout), "session")[0]!.id as string;
  const failed = await cachet(["--emulate", "--json", "--retries", "0", "a new topic"], { home, env: { CACHET_EMULATOR_FAULT: "500" } });
  expect(failed.code).toBe(4);
  const empty = ofType(events(failed.stdout), "session")[0]!.id as string;
  expect(await listed(home)).toMatchObject([
    { id: empty, messages: 0, requests: 1 },
    { id: talked, messages: 2, requests: 1 },
  ]);
  const cont = await cachet(["--emulate", "--json", "-c", "what was the word"], { home });
  expect(cont.code).toBe(0);
  expect(ofType(events(cont.stdout), "session")[0]!.id).toBe(talked);
  const fork = await cachet(["--emulate", "--json", "--fork", "and in a fork"], { home });
  expect(fork.code).toBe(0);
  expect(ofType(events(fork.stdout), "session")[0]!.forked_from).toBe(talked);
});

/**
 * A fork's first turn that ends before its prompt is stored leaves no fork, as a new session's leaves no session:
 * `sessions` lists the parent alone, `-c` and a bare `--fork` pick the parent, `sessions rm` removes the parent
 * without --force, and `session:fork` (logged by an observer plugin loaded beside the one under test) never fires.
 */
describe("a fork's first turn that ends before its prompt is stored", () => {
  /** Logs each `session:fork` event it receives as a JSON line in $FORK_LOG. */
  const OBSERVE_FORKS = `import { appendFileSync } from "node:fs";
export default { name: "fork-observer", api: 1, setup(api) { api.hook("session:fork", (event) => appendFileSync(process.env.FORK_LOG, JSON.stringify(event) + "\\n")); } };
`;

  /** A home with the named session `par` (one answered turn) and the observer plugin; returns what the cases need. */
  async function withParent(): Promise<{ home: string; parentId: string; env: (plugin?: string) => Record<string, string>; announced: () => unknown[] }> {
    const home = freshHome();
    const observer = plugin(home, "observer.mjs", OBSERVE_FORKS);
    const log = join(home, "forks.log");
    const base = await cachet(["--emulate", "--json", "--session", "par", "base"], { home });
    expect(base.code).toBe(0);
    const parentId = ofType(events(base.stdout), "session")[0]!.id as string;
    return {
      home,
      parentId,
      env: (extra) => ({ CACHET_PLUGINS: extra ? `${observer},${extra}` : observer, FORK_LOG: log, CACHET_NO_DAEMON: "1" }),
      announced: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []),
    };
  }

  /** The parent alone is listed, with its one turn. */
  /** A fork's first turn `run` was refused with exit `code`, its only stdout line an error: no fork stored or announced, the parent as it was. */
  async function refusedFork(run: Run, code: number, home: string, parentId: string, announced: () => unknown[]): Promise<void> {
    expect(run.code).toBe(code);
    expect(events(run.stdout).map((e) => e.type)).toEqual(["error"]);
    expect(sessionRows(home).map((r) => r.id)).toEqual([parentId]);
    await parentAlone(home, parentId);
    expect(announced()).toEqual([]);
  }

  async function parentAlone(home: string, parentId: string): Promise<void> {
    expect((await listed(home)).map((s) => ({ id: s.id, messages: s.messages, requests: s.requests }))).toEqual([{ id: parentId, messages: 2, requests: 1 }]);
  }

  /** `-c` continues the parent (its `session` line names it, no fork), after which the store holds the parent's row only. */
  async function continuesParent(home: string, parentId: string, env: Record<string, string>): Promise<void> {
    const cont = await cachet(["--emulate", "--json", "-c", "which one"], { home, env });
    expect(cont.code).toBe(0);
    const [line] = ofType(events(cont.stdout), "session");
    expect(line).toMatchObject({ id: parentId });
    expect(line!.forked_from).toBeUndefined();
    expect(sessionRows(home).map((r) => r.id)).toEqual([parentId]);
  }

  /** `sessions rm par` without --force removes the parent alone: it has no fork. */
  async function removableWithoutForce(home: string, parentId: string): Promise<void> {
    const rm = await cachet(["sessions", "rm", "par", "--json"], { home });
    expect({ code: rm.code, stderr: rm.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(rm.stdout)).toMatchObject({ removed: [parentId] });
    expect(sessionRows(home)).toEqual([]);
  }

  test("refused by a budget (exit 6): only the error line on stdout, no fork stored; a later bare --fork forks the parent, which then has that one fork", async () => {
    const { home, parentId, env, announced } = await withParent();
    const refused = await cachet(["--emulate", "--json", "--fork=par", "--max-cost", "0.0000001", "fork refused"], { home, env: env() });
    await refusedFork(refused, 6, home, parentId, announced);
    expect(events(refused.stdout)[0]!.code).toBe("BUDGET_EXCEEDED");
    await continuesParent(home, parentId, env());

    const fork = await cachet(["--emulate", "--json", "--fork", "a branch"], { home, env: env() });
    expect(fork.code).toBe(0);
    const [line] = events(fork.stdout);
    expect(line).toMatchObject({ type: "session", forked_from: parentId });
    expect(announced()).toEqual([{ parentId, childId: line!.id, exact: true }]);
    const rm = await cachet(["sessions", "rm", "par"], { home });
    expect(rm.code).toBe(2);
    expect(rm.stderr).toContain(`session par has forks; --force would remove it and 1 more: ${line!.id} (fork of par)`);
  });

  test("a prompt too large for the model's window (exit 3, refused before sending): no session line, no fork", async () => {
    const { home, parentId, env, announced } = await withParent();
    // About 300,000 tokens: over claude-3-haiku's 200,000-token window. https://docs.claude.com/en/docs/about-claude/models/overview
    const big = "word ".repeat(300_000);
    const refused = await cachet(["--emulate", "--json", "--no-compact", "-m", "anthropic/claude-3-haiku-20240307", "--fork=par"], { home, env: env(), stdin: big });
    await refusedFork(refused, 3, home, parentId, announced);
    expect(events(refused.stdout)[0]!.code).toBe("CONTEXT_TOO_LONG");
    await continuesParent(home, parentId, env());
  });

  test("a request:before hook that throws (exit 1): no session line, no fork", async () => {
    const { home, parentId, env, announced } = await withParent();
    const thrown = await cachet(["--emulate", "--json", "--fork=par", "fork refused"], { home, env: env(plugin(home, "t.mjs", THROW_IN_HOOK)) });
    await refusedFork(thrown, 1, home, parentId, announced);
    await removableWithoutForce(home, parentId);
  });

  test("a request:before hook killing its process: the row it left is not listed, and -c removes it and continues the parent", async () => {
    const { home, parentId, env, announced } = await withParent();
    const run = await cachet(["--emulate", "--json", "--fork=par", "fork refused"], { home, env: env(plugin(home, "p.mjs", EXIT_IN_HOOK)) });
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: KILLED, stdout: "" });
    expect(sessionRows(home)).toHaveLength(2);
    await parentAlone(home, parentId);
    expect(announced()).toEqual([]);
    await continuesParent(home, parentId, env());
    await removableWithoutForce(home, parentId);
  });

  test("SIGKILL while a request:before hook blocks: not listed, and `sessions rm` of the parent needs no --force, removing what the kill left", async () => {
    const { home, parentId, env, announced } = await withParent();
    await killedInHook(home, ["--emulate", "--fork=par", "fork killed"], env);
    expect(sessionRows(home)).toHaveLength(2);
    await parentAlone(home, parentId);
    expect(announced()).toEqual([]);
    await removableWithoutForce(home, parentId);
  });

  test("one whose compaction sent its summary call before the budget refused the turn's request is kept: named on stdout before the error, announced once, listed with that ledger row", async () => {
    const { home, parentId, env, announced } = await withParent();
    // Past the trigger, with user texts (kept whole up to 4 KiB in the extractive render) rendering over the
    // 800 tokens that make the summary a model call (README, Compaction).
    writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 3000\n");
    const words = ["harbor", "lantern", "quartz", "meadow", "signal", "copper", "falcon", "tundra"];
    for (let i = 1; i <= 5; i++) {
      const notes = `Notes ${i}: ` + Array.from({ length: 450 }, (_, k) => `${words[(k * 5 + i) % words.length]}${k}`).join(" ");
      expect((await cachet(["--emulate", "--no-compact", "-c", notes], { home })).code).toBe(0);
    }
    // The summary call's forecast (2,048 output tokens at most: about $0.05) fits $0.10; the request's then does not
    // (the 8,192 output tokens it allows, about $0.12, on top of what the summary cost).
    const run = await cachet(["--emulate", "--json", "--fork", "--max-cost", "0.1", "a branch"], { home, env: env() });
    expect(run.code).toBe(6);
    const lines = events(run.stdout);
    expect(lines.map((e) => e.type)).toEqual(["session", "error"]);
    expect(lines[1]!.code).toBe("BUDGET_EXCEEDED");
    const forkId = lines[0]!.id as string;
    expect(lines[0]!.forked_from).toBe(parentId);
    expect(announced()).toEqual([{ parentId, childId: forkId, exact: true }]);
    const fork = (await listed(home)).find((s) => s.id === forkId);
    expect(fork).toMatchObject({ messages: 12, requests: 1 });
  });
});
