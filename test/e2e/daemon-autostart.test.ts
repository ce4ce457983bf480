/**
 * A turn that finds no daemon starts one for the next turns (README "Resident daemon", src/daemon/autostart.ts),
 * through the compiled binary: the turn's own stdout, stderr and exit code stay those of CACHET_NO_DAEMON=1's, the
 * next turn runs in the daemon, `$(cachet …)` ends, a killed daemon's socket counts as none, and no daemon is started
 * in CI, under CACHET_DAEMON_AUTOSTART=0 or CACHET_NO_DAEMON=1, after a turn a running daemon declined or one it would
 * decline, or while another turn's daemon still warms up. The harness turns auto-start off; these tests unset it (and
 * CI is not in the harness's environment). `daemon status` waits for a daemon a turn started to listen, so it answers
 * for it at once; every daemon is stopped after the file.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, daemonsOf, freshHome, type Run, until } from "./harness.ts";
import { processAlive } from "../../src/process-alive.ts";

/** Auto-start as on a developer's machine: the harness's CACHET_DAEMON_AUTOSTART=0 removed. */
const AUTO = { CACHET_DAEMON_AUTOSTART: undefined };

/** Homes a daemon may have been started in, stopped after the file. */
const used: string[] = [];

afterAll(async () => {
  for (const h of used) await cachet(["daemon", "stop"], { home: h });
  cleanHomes();
});

/** A new home, its daemon stopped after the file. */
function home(): string {
  const h = freshHome();
  used.push(h);
  return h;
}

/** `daemon status` in `h`: the daemon's pid and commands served, or undefined (exit 1, "not running"). */
async function status(h: string): Promise<{ pid: number; served: number } | undefined> {
  const r = await cachet(["daemon", "status"], { home: h });
  if (r.code === 1 && r.stdout === "cachet daemon: not running\n") return undefined;
  const m = /^cachet daemon: running \(pid (\d+), .* (\d+) commands? served\)\n$/.exec(r.stdout);
  if (r.code !== 0 || !m) throw new Error(`unexpected status (exit ${r.code}): ${r.stdout}${r.stderr}`);
  return { pid: Number(m[1]), served: Number(m[2]) };
}

/** The same turn in a fresh home of its own with CACHET_NO_DAEMON=1: what the turn gives without any daemon. */
async function alone(args: string[]): Promise<Run> {
  return cachet(args, { env: { CACHET_NO_DAEMON: "1" } });
}

/** What `--verbose` says after a turn that started daemon `pid`. */
function startedLine(pid: number): string {
  return `cachet: started the daemon (pid ${pid}) for the next turns; it exits after 10m idle (CACHET_DAEMON_AUTOSTART=0 turns auto-start off)\n`;
}

test("a first turn answers as without a daemon, then the daemon it started runs the next turn", async () => {
  const h = home();
  const first = ["--emulate", "what is a stable prefix"];
  const [started, reference] = await Promise.all([cachet(first, { home: h, env: AUTO }), alone(first)]);
  expect(reference.code).toBe(0);
  expect(reference.stdout).not.toBe("");
  expect({ code: started.code, stdout: started.stdout, stderr: started.stderr }).toEqual({ code: reference.code, stdout: reference.stdout, stderr: reference.stderr });
  const daemon = await status(h);
  expect(daemon?.served).toBe(0);
  expect(daemonsOf(h)).toEqual([daemon!.pid]);
  // Listening, the daemon removed the stamp that held other turns back.
  expect(existsSync(join(h, "daemon.autostart"))).toBe(false);
  const next = ["--emulate", "--json", "and the next question"];
  const [served, nextAlone] = await Promise.all([cachet(next, { home: h, env: AUTO }), alone(next)]);
  expect(served.code).toBe(0);
  expect(served.stderr).toBe("");
  const shape = (r: Run) => r.stdout.replace(/\b(s|r)_[a-z0-9]+/g, "$1_ID");
  expect(shape(served)).toBe(shape(nextAlone));
  expect(await status(h)).toEqual({ pid: daemon!.pid, served: 1 });
});

test("$(cachet …) ends: the daemon a turn starts holds none of its output pipes", async () => {
  const h = home();
  const args = ["--emulate", "summarise the release notes"];
  const reference = await alone(args);
  expect(reference.code).toBe(0);
  const proc = Bun.spawn(["sh", "-c", 'answer=$("$0" "$@"); printf "[%s]\\n" "$answer"', BINARY, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: h, CACHET_HOME: h, NO_COLOR: "1" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  // Read to EOF: the shell's substitution reads cachet's stdout to its end, and this read the shell's.
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(stdout).toBe(`[${reference.stdout.replace(/\n+$/, "")}]\n`);
  expect(await status(h)).toMatchObject({ served: 0 });
});

test("a daemon killed (its socket file left, refusing connections) counts as none: the next turn starts another", async () => {
  const h = home();
  expect((await cachet(["daemon", "start", "-q"], { home: h })).code).toBe(0);
  const killed = (await status(h))!.pid;
  process.kill(killed, "SIGKILL");
  await until(`daemon ${killed} to be gone`, () => !processAlive(killed));
  expect(existsSync(join(h, "daemon.sock"))).toBe(true);
  const r = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  expect(r.code).toBe(0);
  const daemon = await status(h);
  expect(daemon?.served).toBe(0);
  expect(daemon!.pid).not.toBe(killed);
  expect(r.stderr).toBe(startedLine(daemon!.pid));
});

test("a turn a running daemon declined starts no other", async () => {
  const h = home();
  expect((await cachet(["daemon", "start", "-q"], { home: h, env: { TZ: "UTC" } })).code).toBe(0);
  const running = (await status(h))!.pid;
  const r = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: { ...AUTO, TZ: "Europe/Paris" } });
  expect(r.code).toBe(0);
  expect(r.stderr).toBe("cachet: the daemon declined this command (TZ differs from the daemon's (read once, when a process starts)); running it in this process\n");
  expect(daemonsOf(h)).toEqual([running]);
  expect(await status(h)).toEqual({ pid: running, served: 0 });
});

test("no daemon in CI (CI=true), unless CACHET_DAEMON_AUTOSTART=1; CI=0 or false is no CI", async () => {
  const args = ["--emulate", "hello"];
  const ci = home();
  expect((await cachet(args, { home: ci, env: { ...AUTO, CI: "true" } })).code).toBe(0);
  expect(await status(ci)).toBeUndefined();
  expect(existsSync(join(ci, "daemon.autostart"))).toBe(false);
  expect(daemonsOf(ci)).toEqual([]);
  for (const env of [{ CI: "true", CACHET_DAEMON_AUTOSTART: "1" }, { ...AUTO, CI: "false" }, { ...AUTO, CI: "0" }]) {
    const h = home();
    expect((await cachet(args, { home: h, env })).code).toBe(0);
    const daemon = await status(h);
    expect(daemonsOf(h)).toEqual([daemon!.pid]);
  }
});

test("no daemon under CACHET_NO_DAEMON=1 or CACHET_DAEMON_AUTOSTART=0; a value CACHET_DAEMON_AUTOSTART does not take is exit 2 before the turn", async () => {
  for (const env of [{ CACHET_NO_DAEMON: "1", ...AUTO }, { CACHET_DAEMON_AUTOSTART: "0" }, { CACHET_DAEMON_AUTOSTART: "off" }]) {
    const h = home();
    expect((await cachet(["--emulate", "hello"], { home: h, env })).code).toBe(0);
    expect(await status(h)).toBeUndefined();
    expect(daemonsOf(h)).toEqual([]);
  }
  const h = home();
  const bogus = await cachet(["--emulate", "hello"], { home: h, env: { CACHET_DAEMON_AUTOSTART: "bogus" } });
  expect(bogus).toEqual({
    code: 2,
    stdout: "",
    stderr: 'cachet: CACHET_DAEMON_AUTOSTART="bogus": expected 1, true, yes or on (or 0, false, no, off, empty)\n  hint: set CACHET_DAEMON_AUTOSTART=1 to turn it on, or unset it\n',
  });
  expect(await status(h)).toBeUndefined();
});

test("no daemon after a turn it would decline: a third-party plugin in the config", async () => {
  const h = home();
  const plugin = join(h, "quiet.mjs");
  writeFileSync(plugin, 'export default { name: "quiet", api: 1, setup() {} };\n');
  writeFileSync(join(h, "config.toml"), `plugins = ["${plugin}"]\n`);
  const r = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  expect(r.code).toBe(0);
  expect(r.stderr).not.toContain("started the daemon");
  expect(await status(h)).toBeUndefined();
  expect(daemonsOf(h)).toEqual([]);
});

test("4 first turns at once in one home start one daemon", async () => {
  const h = home();
  const turns = await Promise.all([1, 2, 3, 4].map((i) => cachet(["--emulate", "--verbose", `question ${i}`], { home: h, env: AUTO })));
  expect(turns.map((t) => t.code)).toEqual([0, 0, 0, 0]);
  const daemon = await status(h);
  // One turn says it started the daemon that answers; the others found the stamp of that start (or its socket).
  const said = turns.map((t) => t.stderr).filter((stderr) => stderr !== "");
  expect(said).toEqual([startedLine(daemon!.pid)]);
  expect(daemonsOf(h)).toEqual([daemon!.pid]);
});

test("a fresh stamp of another turn's start holds a turn back; a stale one is replaced", async () => {
  const h = home();
  const stamp = join(h, "daemon.autostart");
  // A turn between creating its stamp and starting its daemon (none named yet).
  writeFileSync(stamp, "", { mode: 0o600 });
  const held = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  expect({ code: held.code, stderr: held.stderr }).toEqual({ code: 0, stderr: "" });
  expect(daemonsOf(h)).toEqual([]);
  // 31 s old: its daemon never listened.
  const old = (Date.now() - 31_000) / 1000;
  utimesSync(stamp, old, old);
  const replaced = await cachet(["--emulate", "--verbose", "hello again"], { home: h, env: AUTO });
  expect(replaced.code).toBe(0);
  const daemon = await status(h);
  expect(replaced.stderr).toBe(startedLine(daemon!.pid));
  expect(existsSync(stamp)).toBe(false);
});

test("--verbose says the turn started the daemon; without it stderr is CACHET_NO_DAEMON=1's", async () => {
  const h = home();
  const args = ["--emulate", "--verbose", "explain cache breakpoints"];
  const [r, reference] = await Promise.all([cachet(args, { home: h, env: AUTO }), alone(args)]);
  const daemon = await status(h);
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code: reference.code, stdout: reference.stdout });
  expect(r.stderr).toBe(`${reference.stderr}${startedLine(daemon!.pid)}`);
  // The quiet case is the first test's: stderr byte-identical to CACHET_NO_DAEMON=1's.
});
