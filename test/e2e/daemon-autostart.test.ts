/**
 * A turn that finds no daemon starts one for the next turns (README "Resident daemon", src/daemon/autostart.ts),
 * through the compiled binary: the turn's own stdout, stderr and exit code stay those of CACHET_NO_DAEMON=1's, the
 * next turn runs in the daemon, `$(cachet …)` ends, a killed daemon's socket counts as none (one dying as the turn
 * reaches it too), and no daemon is started in CI, under CACHET_DAEMON_AUTOSTART=0 or CACHET_NO_DAEMON=1, after a turn
 * a running daemon declined or one it would decline, or while another turn's daemon still warms up; a daemon started
 * so never makes its home again once it was removed, a burst of first turns leaves one daemon and no stamp, and one
 * that served no turn exits after its first idle. The harness turns auto-start off; these tests unset it (and CI is not in the harness's environment).
 * `daemon status` waits for a daemon a turn started to listen, so it answers for it at once; every daemon is stopped
 * after the file.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, daemonsOf, freshHome, readUntil, type Run, until } from "./harness.ts";
import { processAlive } from "../../src/process-alive.ts";
import { DAEMON_JSC_OPTIONS, DAEMON_OPTIONS_ENV } from "../../src/daemon/self.ts";

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
  const s = await statusUp(h);
  return s && { pid: s.pid, served: s.served };
}

/** {@link status} with the daemon's uptime, whole seconds. */
async function statusUp(h: string): Promise<{ pid: number; served: number; upS: number } | undefined> {
  const r = await cachet(["daemon", "status"], { home: h });
  if (r.code === 1 && r.stdout === "cachet daemon: not running\n") return undefined;
  const m = /^cachet daemon: running \(pid (\d+), .*, up (?:(\d+)m)?(\d+)s, (\d+) commands? served\)\n$/.exec(r.stdout);
  if (r.code !== 0 || !m) throw new Error(`unexpected status (exit ${r.code}): ${r.stdout}${r.stderr}`);
  return { pid: Number(m[1]), served: Number(m[4]), upS: Number(m[2] ?? 0) * 60 + Number(m[3]) };
}

/** The same turn in a fresh home of its own with CACHET_NO_DAEMON=1: what the turn gives without any daemon. */
async function alone(args: string[]): Promise<Run> {
  return cachet(args, { env: { CACHET_NO_DAEMON: "1" } });
}

/** What `--verbose` says after a turn that started daemon `pid`. */
function startedLine(pid: number): string {
  return `cachet: started the daemon (pid ${pid}) for the next turns; it exits after 1m without a first turn, 10m idle after one (CACHET_DAEMON_AUTOSTART=0 turns auto-start off)\n`;
}

/** What `--verbose` says after a turn that wanted a daemon and started none, for `why`. */
function noneLine(why: string): string {
  return `cachet: started no daemon for the next turns: ${why}\n`;
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

// The kernel keeps a process's starting environment in /proc/PID/environ (Linux only).
test.skipIf(process.platform !== "linux")("a daemon a turn starts runs with the engine options of src/daemon/self.ts, and serves clients that lack them", async () => {
  const h = home();
  expect((await cachet(["--emulate", "warm the engine"], { home: h, env: AUTO })).code).toBe(0);
  const daemon = await status(h);
  const environ = readFileSync(`/proc/${daemon!.pid}/environ`, "utf8").split("\0");
  for (const [name, value] of Object.entries(DAEMON_JSC_OPTIONS)) expect(environ).toContain(`${name}=${value}`);
  expect(environ).toContain(`${DAEMON_OPTIONS_ENV}=${Object.keys(DAEMON_JSC_OPTIONS).join(",")}`);
  // Removed from its environment before serving: a client without them (BUN_* must match) is served, not declined.
  const served = await cachet(["--emulate", "--verbose", "and served"], { home: h, env: AUTO });
  expect(served.code).toBe(0);
  expect(served.stderr).not.toContain("declined");
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

test("a daemon that dies as the turn reaches it (the connection closed unanswered) counts as none: the turn starts another", async () => {
  const h = home();
  const socket = join(h, "daemon.sock");
  // A listener that dies once the turn's hello arrives, as a daemon killed while its last threads still held its socket
  // open: the turn's connection closes unanswered, and the file is left refusing connections.
  const dying = Bun.spawn(
    [process.execPath, "-e", `Bun.listen({ unix: ${JSON.stringify(socket)}, socket: { data() { process.kill(process.pid, "SIGKILL"); } } }); console.log("listening");`],
    { stdin: "ignore", stdout: "pipe", stderr: "inherit" },
  );
  await readUntil(dying.stdout, "listening");
  const r = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  expect(await dying.exited).toBe(128 + 9);
  expect(r.code).toBe(0);
  const daemon = await status(h);
  expect(daemon?.served).toBe(0);
  expect(daemon!.pid).not.toBe(dying.pid);
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

test("no daemon in CI (CI=true, or unset with a CI system's variables), unless CACHET_DAEMON_AUTOSTART=1; CI=0, false, no, off is no CI", async () => {
  const args = ["--emulate", "hello"];
  // Jenkins (BUILD_NUMBER), Azure Pipelines (TF_BUILD), TeamCity, CodeBuild and a CI system's own word, as ci-info reads them.
  for (const env of [{ CI: "true" }, { CI: "woodpecker" }, { BUILD_NUMBER: "17" }, { TF_BUILD: "True" }, { TEAMCITY_VERSION: "2024.1" }, { CODEBUILD_BUILD_ARN: "arn:aws:codebuild:x" }]) {
    const ci = home();
    expect((await cachet(args, { home: ci, env: { ...AUTO, ...env } })).code).toBe(0);
    expect(await status(ci)).toBeUndefined();
    expect(existsSync(join(ci, "daemon.autostart"))).toBe(false);
    expect(daemonsOf(ci)).toEqual([]);
  }
  const notCi = ["false", "0", "no", "off", "OFF", ""].map((CI) => ({ ...AUTO, CI }));
  // Set, CI is read as cachet reads it, whatever else ci-info would see.
  for (const env of [{ CI: "true", CACHET_DAEMON_AUTOSTART: "1" }, ...notCi, { ...AUTO, CI: "no", BUILD_NUMBER: "17" }]) {
    const h = home();
    expect((await cachet(args, { home: h, env })).code).toBe(0);
    const daemon = await status(h);
    expect(daemonsOf(h)).toEqual([daemon!.pid]);
  }
});

test("--verbose names why none started in CI or with auto-start off; a turn run under nice or chrt -b/-i starts none (a daemon would keep its priority)", async () => {
  const ci = home();
  expect((await cachet(["--emulate", "--verbose", "hello"], { home: ci, env: { ...AUTO, CI: "true" } })).stderr).toBe(noneLine("this looks like CI (CI=true; CACHET_DAEMON_AUTOSTART=1 starts one there too)"));
  const jenkins = home();
  expect((await cachet(["--emulate", "--verbose", "hello"], { home: jenkins, env: { ...AUTO, JENKINS_URL: "http://ci", BUILD_ID: "17" } })).stderr).toBe(
    noneLine("this looks like CI (Jenkins's variables; CACHET_DAEMON_AUTOSTART=1 starts one there too)"),
  );
  const off = home();
  expect((await cachet(["--emulate", "--verbose", "hello"], { home: off, env: { CACHET_DAEMON_AUTOSTART: "0" } })).stderr).toBe(noneLine("CACHET_DAEMON_AUTOSTART turns auto-start off"));
  const lowered: string[] = [];
  // chrt -b / -i: the batch and idle scheduling policies, which a daemon would keep as it keeps a nice value.
  for (const wrapper of [["nice", "-n", "5"], ...(Bun.which("chrt") ? [["chrt", "-b", "0"], ["chrt", "-i", "0"]] : [])]) {
    const h = home();
    lowered.push(h);
    const p = Bun.spawn([...wrapper, BINARY, "--emulate", "--verbose", "hello"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: h, CACHET_HOME: h, NO_COLOR: "1" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(0);
    expect(stderr).toBe(noneLine("this turn runs at a lowered priority (nice, or a batch or idle scheduling policy), which a daemon started from it would keep for every later turn"));
  }
  for (const h of [ci, jenkins, off, ...lowered]) {
    expect(await status(h)).toBeUndefined();
    expect(daemonsOf(h)).toEqual([]);
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
  expect(r.stderr.endsWith(noneLine(`the daemon would not run these turns (the turn loads a third-party plugin (${plugin}): it runs in its own process)`))).toBe(true);
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
  const said = turns.map((t) => t.stderr).filter((stderr) => stderr.startsWith("cachet: started the daemon"));
  expect(said).toEqual([startedLine(daemon!.pid)]);
  const held = [noneLine(`another turn's daemon is still starting (${join(h, "daemon.autostart")})`), noneLine("a daemon listens now (another turn's, started meanwhile)")];
  for (const t of turns) if (!t.stderr.startsWith("cachet: started the daemon")) expect(held).toContain(t.stderr);
  expect(daemonsOf(h)).toEqual([daemon!.pid]);
});

test("a fresh stamp of another turn's start holds a turn back; a stale one is replaced", async () => {
  const h = home();
  const stamp = join(h, "daemon.autostart");
  // A turn between creating its stamp and starting its daemon (none named yet).
  writeFileSync(stamp, "", { mode: 0o600 });
  const held = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  expect({ code: held.code, stderr: held.stderr }).toEqual({ code: 0, stderr: noneLine(`another turn's daemon is still starting (${stamp})`) });
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

/** The pid of a process that has exited (and been reaped): what a stamp of a daemon that died names. */
async function gonePid(): Promise<number> {
  const p = Bun.spawn(["true"]);
  await p.exited;
  return p.pid;
}

test("a stamp naming a process that is gone does not hold the next turn back", async () => {
  const h = home();
  const stamp = join(h, "daemon.autostart");
  // Fresh, but its daemon died (or was the second of two, and exited).
  writeFileSync(stamp, `${await gonePid()}\n`, { mode: 0o600 });
  const r = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  expect(r.code).toBe(0);
  const daemon = await status(h);
  expect(r.stderr).toBe(startedLine(daemon!.pid));
  expect(daemonsOf(h)).toEqual([daemon!.pid]);
  expect(existsSync(stamp)).toBe(false);
});

test("8 first turns at once leave exactly one daemon, and no stamp once it listens (3 bursts)", async () => {
  for (let burst = 0; burst < 3; burst++) {
    const h = home();
    const turns = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((i) => cachet(["--emulate", `question ${i}`], { home: h, env: AUTO })));
    expect(turns.map((t) => t.code)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const daemon = await status(h);
    // A second daemon (two turns started one each) exits once it finds the socket served.
    await until("every daemon but the listening one to exit", () => daemonsOf(h).length <= 1);
    expect(daemonsOf(h)).toEqual([daemon!.pid]);
    expect(existsSync(join(h, "daemon.autostart"))).toBe(false);
    expect((await status(h))?.pid).toBe(daemon!.pid);
    await cachet(["daemon", "stop"], { home: h });
  }
}, 90_000);

/** Waits until no `daemon run` of home `h` runs (the one whose pid the stamp named, and any other). */
async function noDaemonOf(h: string, pid: number | undefined): Promise<void> {
  if (pid !== undefined) await until(`daemon ${pid} to exit`, () => !processAlive(pid));
  await until(`no daemon of ${h}`, () => daemonsOf(h).length === 0);
}

test("a home removed at once after its first turn is not made again: the daemon that turn started exits", async () => {
  for (let i = 0; i < 4; i++) {
    // The last time, a chain of directories that the turn made, removed from its top.
    const top = home();
    const h = i === 3 ? join(top, "a", "b") : top;
    const r = await cachet(["--emulate", "hi"], { home: h, env: AUTO });
    expect(r.code).toBe(0);
    let pid: number | undefined;
    try {
      pid = Number.parseInt(readFileSync(join(h, "daemon.autostart"), "utf8"), 10) || undefined;
    } catch {
      // Already listening (it removed the stamp): found by its environment below.
    }
    rmSync(top, { recursive: true, force: true });
    await noDaemonOf(h, pid);
    expect(existsSync(top)).toBe(false);
  }
});

test("a daemon nobody asked for (CACHET_DAEMON_UNASKED) whose data directory is gone exits 0 and makes nothing", async () => {
  const missing = join(home(), "gone", "home");
  const r = await cachet(["daemon", "run", "--idle", "10m"], { home: missing, env: { CACHET_DAEMON_UNASKED: "1m" } });
  expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
  expect(existsSync(join(missing, ".."))).toBe(false);
});

test("a daemon a turn started exits after its first idle without a turn; once it served one, its --idle holds", async () => {
  // The knob the auto-start passes (1m), shortened to 1s. The daemon's environment is the harness's turns' own.
  const env = (h: string) => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: h, CACHET_HOME: h, NO_COLOR: "1", CACHET_DAEMON_UNASKED: "1s" });
  const idle = home();
  const lone = Bun.spawn([BINARY, "daemon", "run", "--idle", "10m"], { env: env(idle), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  await until("the daemon to listen", async () => (await status(idle))?.pid === lone.pid, () => lone.exitCode === null);
  // No turn: it exits of its own accord, its files removed.
  expect(await lone.exited).toBe(0);
  expect(existsSync(join(idle, "daemon.sock"))).toBe(false);
  expect(existsSync(join(idle, "daemon.pid"))).toBe(false);

  const used = home();
  const kept = Bun.spawn([BINARY, "daemon", "run", "--idle", "10m"], { env: env(used), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  await until("the daemon to listen", async () => (await status(used))?.pid === kept.pid, () => kept.exitCode === null);
  expect((await cachet(["--emulate", "hello"], { home: used })).code).toBe(0);
  expect(await status(used)).toEqual({ pid: kept.pid, served: 1 });
  // Over 2 s past its turn (it ended under a second into the daemon's life), twice the first idle: still there.
  await until("the daemon to be up 3 s", async () => ((await statusUp(used))?.upS ?? 0) >= 3, () => kept.exitCode === null);
  expect(await status(used)).toEqual({ pid: kept.pid, served: 1 });
  await cachet(["daemon", "stop"], { home: used });
  expect(await kept.exited).toBe(0);
});

test("--verbose says why no daemon was started: the data directory missing; a removed working directory starts none", async () => {
  const h = join(home(), "new");
  const r = await cachet(["--emulate", "--no-store", "--verbose", "hello"], { home: h, env: AUTO });
  expect(r.code).toBe(0);
  expect(r.stderr.endsWith(noneLine(`the data directory ${h} does not exist (this turn stored nothing)`))).toBe(true);
  expect(existsSync(h)).toBe(false);

  const g = home();
  const gone = join(g, "cwd");
  mkdirSync(gone);
  // The working directory removed under the process, before the turn (a shell left in a deleted directory): the turn
  // is never offered to a daemon (src/daemon/client.ts "unsent"), and starts none.
  const p = Bun.spawn(["sh", "-c", 'cd "$0" && rmdir "$0" && exec "$1" --emulate --verbose hello', gone, BINARY], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: g, CACHET_HOME: g, NO_COLOR: "1" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  expect(code).toBe(0);
  expect(stdout).not.toBe("");
  expect(existsSync(join(g, "cachet.db"))).toBe(true);
  expect(await status(g)).toBeUndefined();
  expect(daemonsOf(g)).toEqual([]);
});

test("a daemon a turn started that cannot start (its socket path blocked) holds the next turns back, not one each", async () => {
  const h = home();
  // A directory where the socket goes: every daemon fails once warmed up (DAEMON_SOCKET_BLOCKED).
  mkdirSync(join(h, "daemon.sock"));
  const first = await cachet(["--emulate", "--verbose", "hello"], { home: h, env: AUTO });
  const pid = Number(/started the daemon \(pid (\d+)\)/.exec(first.stderr)?.[1]);
  expect(pid).toBeGreaterThan(0);
  await until(`daemon ${pid} to fail`, () => !processAlive(pid));
  // Its stamp names no process now, and is fresh: the next turn starts none.
  const stamp = join(h, "daemon.autostart");
  expect(readFileSync(stamp, "utf8")).toBe("");
  const next = await cachet(["--emulate", "--verbose", "hello again"], { home: h, env: AUTO });
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: noneLine(`another turn's daemon is still starting (${stamp})`) });
  expect(daemonsOf(h)).toEqual([]);
});
