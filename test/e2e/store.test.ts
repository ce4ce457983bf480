/**
 * The store under concurrency and in a read-only place, through the compiled
 * binary: several processes starting on a fresh CACHET_HOME at once all store
 * their turns (creation and migration are serialized), and the read commands
 * work on a state directory they cannot write, while a turn there fails
 * before anything is sent, naming the file.
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, type Run, homeEnv } from "./harness.ts";

afterAll(cleanHomes);

/** Rounds of the eight-process start: the acceptance soak's 20 (CACHET_SOAK_ROUNDS changes it when hunting a rare race). */
const ROUNDS = Number(process.env.CACHET_SOAK_ROUNDS ?? 20);

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
  // A figure for the report, never asserted.
  console.log(`soak: ${ROUNDS} rounds × 8 processes, ${((performance.now() - started) / 1000 / ROUNDS).toFixed(1)} s per round`);
}, 60_000 + ROUNDS * 60_000);

/** Runs the binary unable to write `home`: as an unprivileged user when this test runs as root (root writes anywhere). */
async function asReader(args: string[], home: string): Promise<Run> {
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BINARY, ...args] : [BINARY, ...args];
  const proc = Bun.spawn(command, { env: homeEnv(home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
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
    [["compact", "--emulate"], 2, "cachet: there is no session to compact: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)"],
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
  // The hint fits what was written: only -c is told to run without -c.
  const hints: [string[], string, string][] = [
    [["compact", "--emulate"], "", '  hint: start one with `cachet "PROMPT"`'],
    [["--emulate", "--tool-result", "call_1"], "result", '  hint: start one with `cachet "PROMPT"`'],
    [["--emulate", "-c", "hi"], "", "  hint: run without -c to start one"],
  ];
  for (const [args, stdin, hint] of hints) {
    const r = await cachet(args, { home, stdin });
    expect([args, r.code, r.stderr.split("\n")[1]]).toEqual([args, 2, hint]);
  }
  expect((await cachet(["--emulate", "--tool-result", "call_1"], { home, stdin: "result" })).stderr.split("\n")[0]).toBe(
    "cachet: there is no session to answer with --tool-result: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)",
  );
  const otlp = await cachet(["export", "--otlp", "http://127.0.0.1:9", "--json"], { home });
  expect([otlp.code, JSON.parse(otlp.stdout).exported]).toEqual([0, 0]);
  expect(readdirSync(home)).toEqual([]);
  // A new named session is a write: it makes the store.
  expect((await cachet(["--emulate", "--session", "X", "hi"], { home })).code).toBe(0);
  expect(readdirSync(home)).toContain("cachet.db");
}, 60_000);

/** The permission bits of `path`. */
const modeOf = (path: string) => statSync(path).mode & 0o777;

test("a normal run creates CACHET_HOME and its directories 0700 and the databases (with -wal, -shm) 0600; a store an older cachet left 0644 is made 0600; prices update's directory is 0700", async () => {
  const parent = freshHome();
  const home = join(parent, "nested", "home");
  const r = await cachet(["--emulate", "hi"], { home });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  const modes = (dir: string) => Object.fromEntries(readdirSync(dir, { recursive: true }).map((f) => [String(f), modeOf(join(dir, String(f)))]));
  const made = modes(home);
  expect(made["cachet.db"]).toBe(0o600);
  expect(made["emulator"]).toBe(0o700);
  expect(made[join("emulator", "cache.sqlite")]).toBe(0o600);
  // Every file cachet made is the owner's only, whatever SQLite left beside the databases.
  for (const [file, mode] of Object.entries(made)) expect({ file, others: mode & 0o077 }).toEqual({ file, others: 0 });
  expect([modeOf(home), modeOf(join(parent, "nested"))]).toEqual([0o700, 0o700]);

  // An older cachet's store: files 0644 in a directory the user made 0755 (kept: it may be shared on purpose).
  for (const file of readdirSync(home)) if (file.startsWith("cachet.db")) chmodSync(join(home, file), 0o644);
  chmodSync(home, 0o755);
  expect((await cachet(["--emulate", "-c", "again"], { home })).code).toBe(0);
  for (const file of readdirSync(home).filter((f) => f.startsWith("cachet.db"))) expect({ file, mode: modeOf(join(home, file)) }).toEqual({ file, mode: 0o600 });
  expect(modeOf(home)).toBe(0o755);

  const prices = join(parent, "prices.json");
  writeFileSync(prices, JSON.stringify({ acme: { id: "acme", models: { m: { id: "m", cost: { input: 1, output: 2 } } } } }));
  const update = await cachet(["prices", "update", "--from", prices], { home });
  expect(update.code).toBe(0);
  expect(modeOf(join(home, "prices"))).toBe(0o700);
});

test("a store in a directory that already exists keeps that directory's mode; the new database in it is 0600", async () => {
  const home = join(freshHome(), "shared");
  mkdirSync(home, { mode: 0o755 });
  chmodSync(home, 0o755);
  expect((await cachet(["--emulate", "hi"], { home })).code).toBe(0);
  expect([modeOf(home), modeOf(join(home, "cachet.db")), existsSync(join(home, "emulator")) && modeOf(join(home, "emulator"))]).toEqual([0o755, 0o600, 0o700]);
});

test("CACHET_HOME naming a file (or a path through one): every command, reading or writing, exits 1 naming the file, instead of 'no sessions yet' or an internal error", async () => {
  const dir = freshHome();
  const file = join(dir, "not-a-dir");
  writeFileSync(file, "mine");
  for (const home of [file, join(file, "sub", "deeper")]) {
    for (const args of [["sessions"], ["stats"], ["export"], ["cost"], ["--emulate", "hi"]]) {
      const r = await cachet(args, { home });
      expect({ home, args, code: r.code, stdout: r.stdout, stderr: r.stderr.split("\n")[0] }).toEqual({
        home,
        args,
        code: 1,
        stdout: "",
        stderr: `cachet: cannot open the session store ${join(home, "cachet.db")}: ${file} is a file, not a directory`,
      });
    }
  }
  expect(readFileSync(file, "utf8")).toBe("mine");
});
