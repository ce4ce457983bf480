/**
 * The store under concurrency and in a read-only place, through the compiled
 * binary: several processes starting on a fresh CACHET_HOME at once all store
 * their turns (creation and migration are serialized), and the read commands
 * work on a state directory they cannot write, while a turn there fails
 * before anything is sent, naming the file.
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, type Run } from "./harness.ts";

afterAll(cleanHomes);

/** Rounds of the eight-process start; CACHET_SOAK_ROUNDS=20 runs the full acceptance soak. */
const ROUNDS = Number(process.env.CACHET_SOAK_ROUNDS ?? 1);

test(`eight processes on a fresh CACHET_HOME at once, ${ROUNDS} rounds: every turn stored, no failure`, async () => {
  const started = performance.now();
  for (let round = 0; round < ROUNDS; round++) {
    const home = freshHome();
    const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => cachet(["--emulate", "--session", `p${i}`, `hello from ${i}`], { home, timeoutMs: 60_000 })));
    expect(runs.map((r) => [r.code, r.stderr])).toEqual(Array.from({ length: 8 }, () => [0, ""]));
    const listed = await cachet(["sessions", "--json"], { home });
    const sessions = listed.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { name: string; messages: number; requests: number });
    expect(sessions.map((s) => [s.name, s.messages, s.requests]).sort()).toEqual(Array.from({ length: 8 }, (_, i) => [`p${i}`, 2, 1]));
  }
  // A figure for the report, never asserted: each process's first turn loads the tokenizer (most of its CPU time).
  console.log(`soak: ${ROUNDS} rounds × 8 processes, ${((performance.now() - started) / 1000 / ROUNDS).toFixed(1)} s per round`);
}, 60_000 + ROUNDS * 60_000);

/** Runs the binary unable to write `home`: as an unprivileged user when this test runs as root (root writes anywhere). */
async function asReader(args: string[], home: string): Promise<Run> {
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BINARY, ...args] : [BINARY, ...args];
  const proc = Bun.spawn(command, { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CACHET_HOME: home, NO_COLOR: "1" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort().map((name) => `${name} ${statSync(join(dir, name)).size}`);
}

test("a read-only state directory: sessions, cost, why, stats and export read it; a turn fails before sending, naming the file", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "kept", "hello"], { home })).code).toBe(0);
  const exportedBefore = (await cachet(["export"], { home })).stdout;
  const request = /"id":"(r_[a-z2-7]{12})"/.exec(exportedBefore)![1]!;
  const writable = (path: string, on: boolean) => {
    for (const name of readdirSync(path, { recursive: true }).map(String)) chmodSync(join(path, name), statSync(join(path, name)).isDirectory() ? (on ? 0o755 : 0o555) : on ? 0o644 : 0o444);
    chmodSync(path, on ? 0o755 : 0o555);
  };
  const before = listing(home);
  writable(home, false);
  try {
    const sessions = await asReader(["sessions"], home);
    expect([sessions.code, sessions.stderr]).toEqual([0, ""]);
    expect(sessions.stdout).toContain("kept");
    const show = await asReader(["sessions", "show", "kept", "--json"], home);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout).requests.map((r: { id: string }) => r.id)).toEqual([request]);
    const cost = await asReader(["cost", "--json"], home);
    expect(cost.code).toBe(0);
    expect(cost.stdout).toContain(request);
    const why = await asReader(["why", request], home);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain(request);
    const stats = await asReader(["stats"], home);
    expect(stats.code).toBe(0);
    const exported = await asReader(["export"], home);
    expect([exported.code, exported.stdout]).toEqual([0, exportedBefore]);

    const turn = await asReader(["--emulate", "-c", "again"], home);
    expect(turn.code).toBe(1);
    expect(turn.stdout).toBe("");
    expect(turn.stderr).toContain(`cannot open the session store ${join(home, "cachet.db")} for writing`);
    expect(turn.stderr).toContain("hint: make");
    expect(listing(home)).toEqual(before);
  } finally {
    writable(home, true);
  }
  expect((await cachet(["export"], { home })).stdout).toBe(exportedBefore);
}, 60_000);

test("read commands on a state directory that does not exist yet create nothing", async () => {
  const home = join(freshHome(), "not-yet");
  const codes = [];
  for (const command of [["sessions"], ["export"], ["stats"], ["cost"], ["why"]]) codes.push((await cachet(command, { home })).code);
  // export, cost and why have no session to show: SESSION_NOT_FOUND, a usage error.
  expect(codes).toEqual([0, 2, 0, 2, 2]);
  expect(readdirSync(join(home, ".."))).toEqual([]);
}, 60_000);

test("with no store yet, commands on a stored session (rm, show, export, compact, -c, --fork, an id) answer 'no session' and create nothing", async () => {
  const home = freshHome();
  const runs: [string[], number, string][] = [
    [["sessions", "rm", "X"], 2, 'cachet: no session "X"'],
    [["sessions", "show", "X"], 2, 'cachet: no session "X"'],
    [["export", "X"], 2, 'cachet: no session "X"'],
    [["why", "r_aaaaaaaaaaaa"], 2, 'cachet: no request "r_aaaaaaaaaaaa" in the ledger'],
    [["compact", "--emulate", "--session", "X"], 2, 'cachet: no session "X"'],
    [["compact", "--emulate"], 2, "cachet: there is no session to continue: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)"],
    [["--emulate", "-c", "hi"], 2, "cachet: there is no session to continue: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)"],
    [["--emulate", "-c", "--session", "X", "hi"], 2, 'cachet: no session "X"'],
    [["--emulate", "--fork=X", "hi"], 2, 'cachet: no session "X"'],
    [["--emulate", "--fork", "hi"], 2, "cachet: there is no session to fork"],
    [["--emulate", "--session", "s_aaaaaaaaaaaa", "hi"], 2, 'cachet: no session "s_aaaaaaaaaaaa"'],
  ];
  for (const [args, code, line] of runs) {
    const r = await cachet(args, { home });
    expect([args, r.code, r.stdout, r.stderr.split("\n")[0]]).toEqual([args, code, "", line]);
  }
  const otlp = await cachet(["export", "--otlp", "http://127.0.0.1:9", "--json"], { home });
  expect([otlp.code, JSON.parse(otlp.stdout).exported]).toEqual([0, 0]);
  expect(readdirSync(home)).toEqual([]);
  // A new named session is a write: it makes the store.
  expect((await cachet(["--emulate", "--session", "X", "hi"], { home })).code).toBe(0);
  expect(readdirSync(home)).toContain("cachet.db");
}, 60_000);
