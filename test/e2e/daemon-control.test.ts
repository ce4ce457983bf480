/**
 * The daemon command's life cycle (README "Resident daemon"): what start,
 * stop and status say and where, stop ending a running turn as SIGTERM would
 * and leaving no successor, a daemon whose socket file is gone ending itself,
 * and CACHET_NO_DAEMON read as every boolean variable. Every wait is on an
 * event: a process exiting, a status answer, answer text on stdout.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, chownSync, closeSync, constants, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, daemonsOf, freshHome, readLine, type Run, readUntil, until } from "./harness.ts";
import { processAlive } from "../../src/process-alive.ts";

const BASE = { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", NO_COLOR: "1" };

afterAll(async () => {
  for (const h of started) await cachet(["daemon", "stop"], { home: h });
  cleanHomes();
});

/** Homes a daemon was started in, stopped after the file. */
const started: string[] = [];

/** `cachet daemon start` in `h`; the daemon's pid. */
async function startDaemon(h: string): Promise<number> {
  started.push(h);
  const r = await cachet(["daemon", "start"], { home: h });
  expect(r.code).toBe(0);
  const s = await status(h);
  if (!s) throw new Error(`no daemon answers in ${h}: ${r.stderr}`);
  return s.pid;
}

/** `daemon status` of `h` parsed; undefined when none runs. */
async function status(h: string): Promise<{ pid: number; served: number; line: string } | undefined> {
  const r = await cachet(["daemon", "status"], { home: h });
  if (r.code !== 0) return undefined;
  const m = /pid (\d+),(?:.* (\d+) commands? served)?/.exec(r.stdout);
  if (!m) throw new Error(`unexpected status line: ${r.stdout}`);
  return { pid: Number(m[1]), served: Number(m[2] ?? -1), line: r.stdout };
}

/** Waits until the process `pid` has exited (it is not this process's child). */
async function exited(pid: number): Promise<void> {
  await until(`process ${pid} to exit`, () => !processAlive(pid));
}

/** The daemon's own files in `h` (its socket and pid file), sorted. */
function daemonFiles(h: string): string[] {
  return readdirSync(h)
    .filter((name) => name.startsWith("daemon."))
    .sort();
}

/** A pid no process has any more. */
async function deadPid(): Promise<number> {
  const gone = Bun.spawn(["true"]);
  await gone.exited;
  return gone.pid;
}

/** Leaves in `h` what a killed daemon leaves: `daemon.sock`, which refuses connections (its listener was killed), and `daemon.pid` naming `pid`. */
async function deadDaemonFiles(h: string, pid: number): Promise<void> {
  const listener = Bun.spawn([process.execPath, "-e", `Bun.listen({ unix: process.argv[1], socket: { data() {} } }); console.log("bound");`, `${h}/daemon.sock`], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  await readUntil(listener.stdout, "bound");
  listener.kill("SIGKILL");
  await listener.exited;
  writeFileSync(`${h}/daemon.pid`, `${pid}\n`, { mode: 0o600 });
}

/** A turn started in the background in `h`, stdout and stderr piped. */
function turn(h: string, args: string[], env: Record<string, string> = {}) {
  return Bun.spawn([BINARY, ...args], { env: { ...BASE, HOME: h, CACHET_HOME: h, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** The lines cachet itself wrote on `stderr`. */
function cachetLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.startsWith("cachet: ") || line.startsWith("  hint: "));
}

/**
 * `args` run by the binary with `h` mounted read-only (a bind mount in a mount namespace of its own, unshare(1)):
 * the file system says EROFS to every user, root included, which a chmod does not (these tests run as root).
 */
async function onReadOnlyHome(h: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const proc = Bun.spawn(["unshare", "-rm", "sh", "-c", 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"', "sh", h, BINARY, ...args], {
    env: { ...BASE, HOME: h, CACHET_HOME: h, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Whether this machine lets a process mount a directory read-only in a namespace of its own (unshare -rm). */
const readOnlyMounts = (() => {
  try {
    const dir = freshHome();
    return Bun.spawnSync(["unshare", "-rm", "sh", "-c", 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && ! touch "$1/x" 2>/dev/null', "sh", dir]).exitCode === 0;
  } catch {
    return false;
  }
})();

describe("a read-only data directory", () => {
  test.skipIf(!readOnlyMounts)("daemon run and start are one line naming it (exit 1), creating nothing; a turn runs in its own process and starts no daemon, as the README says", async () => {
    const h = freshHome();
    expect((await cachet(["--emulate", "first"], { home: h })).code).toBe(0);
    const before = readdirSync(h).sort();
    const line = `cachet: the data directory ${h} is on a read-only file system (EROFS): the daemon keeps its socket, pid file and warm-up files there`;
    const hint = "  hint: make it writable, or set CACHET_HOME to a writable directory (without a daemon, each turn runs in its own process)";
    for (const action of ["run", "start"]) {
      const r = await onReadOnlyHome(h, ["daemon", action]);
      expect({ action, code: r.code, stderr: r.stderr }).toEqual({ action, code: 1, stderr: `${line}\n${hint}\n` });
    }
    expect(readdirSync(h).sort()).toEqual(before);
    expect(daemonsOf(h)).toEqual([]);
    // A turn that stores nothing answers; auto-start (asked for) says why it started none. One that stores fails at once.
    const noStore = await onReadOnlyHome(h, ["--emulate", "--no-store", "--verbose", "hi"], { CACHET_DAEMON_AUTOSTART: "1" });
    expect({ code: noStore.code, answered: noStore.stdout.length > 0 }).toEqual({ code: 0, answered: true });
    expect(noStore.stderr).toContain(`cachet: started no daemon for the next turns: the data directory ${h} is on a read-only file system (EROFS), where the daemon keeps its socket\n`);
    const stored = await onReadOnlyHome(h, ["--emulate", "hi"], { CACHET_DAEMON_AUTOSTART: "1" });
    expect(stored.code).toBe(1);
    expect(cachetLines(stored.stderr)[0]).toBe(`cachet: cannot open the session store ${h}/cachet.db for writing: unable to open database file`);
    expect(readdirSync(h).sort()).toEqual(before);
    expect(daemonsOf(h)).toEqual([]);
  });
});

describe("daemon start, stop and status", () => {
  test("start and stop say what they did on stderr, which -q silences; status answers on stdout, -q or not", async () => {
    const h = freshHome();
    const start = await cachet(["-q", "daemon", "start"], { home: h });
    started.push(h);
    expect(start).toEqual({ code: 0, stdout: "", stderr: "" });
    const again = await cachet(["daemon", "start"], { home: h });
    expect(again.stdout).toBe("");
    expect(again.stderr).toMatch(/^\[info\] cachet daemon: already running \(pid \d+, socket .*daemon\.sock\)\n$/);
    const quietStatus = await cachet(["-q", "daemon", "status"], { home: h });
    expect(quietStatus.stdout).toMatch(/^cachet daemon: running \(pid \d+/);
    expect(await cachet(["-q", "daemon", "stop"], { home: h })).toEqual({ code: 0, stdout: "", stderr: "" });
    // A stopped daemon removed its socket and its pid file.
    expect(daemonFiles(h)).toEqual([]);
    const none = await cachet(["-q", "daemon", "status"], { home: h });
    expect(none).toEqual({ code: 1, stdout: "cachet daemon: not running\n", stderr: "" });
    const noneStop = await cachet(["daemon", "stop"], { home: h });
    expect(noneStop).toEqual({ code: 0, stdout: "", stderr: "[info] cachet daemon: not running\n" });
    // Without -q, start says the line README quotes.
    const loud = await cachet(["daemon", "start"], { home: h });
    expect({ code: loud.code, stdout: loud.stdout }).toEqual({ code: 0, stdout: "" });
    expect(loud.stderr).toMatch(/^\[info\] cachet daemon: running \(pid \d+, socket .*daemon\.sock\)\n$/);
    expect((await cachet(["daemon", "stop"], { home: h })).stderr).toMatch(/^\[info\] cachet daemon: stopped \(pid \d+\)\n$/);
  });

  test("a relative CACHET_HOME: daemon run binds the socket it names; a directory where its socket goes is one line naming it, with its stack under --debug", async () => {
    const base = freshHome();
    const run = (h: string, flags: string[]) =>
      Bun.spawn([BINARY, "daemon", "run", ...flags], { cwd: base, env: { ...BASE, HOME: base, CACHET_HOME: h }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const rel = run("rel", ["--idle", "1s"]);
    const [code, stderr] = await Promise.all([rel.exited, new Response(rel.stderr).text()]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: `[info] cachet daemon: running (pid ${rel.pid}, socket rel/daemon.sock); Ctrl-C stops it\n` });
    // It exited idle, leaving nothing in its data directory.
    expect(readdirSync(join(base, "rel"))).toEqual([]);
    // A directory where the socket goes: one line naming it and what to do (exit 1), and with --debug its stack.
    (await import("node:fs")).mkdirSync(`${base}/bad/daemon.sock`, { recursive: true });
    const bad = run("bad", ["--debug"]);
    const [badCode, badErr] = await Promise.all([bad.exited, new Response(bad.stderr).text()]);
    expect(badCode).toBe(1);
    const blocked = `${realpathSync(base)}/bad/daemon.sock`;
    expect(badErr).toStartWith(`cachet: ${blocked} is a directory, where the daemon's socket goes\n  hint: remove it (rmdir ${blocked}) and start the daemon again\nCachetError: `);
    expect(badErr).toMatch(/\n {4}at /);
  });

  test("run from source, a dependency's module file changed under the daemon (before its first turn, or after one): declined, run in-process, and a fresh daemon serves the next turn", async () => {
    // A copy of the source tree whose node_modules links every package of the repository's but citty, which the
    // daemon loads: it is copied, so changing it leaves the repository's alone. The build id covers src/, plugins/
    // and package.json, so a client of this tree is of the daemon's build throughout.
    const repo = join(import.meta.dir, "..", "..");
    const root = realpathSync(freshHome());
    for (const part of ["src", "plugins", "package.json"]) cpSync(join(repo, part), join(root, part), { recursive: true });
    mkdirSync(join(root, "node_modules"));
    for (const entry of readdirSync(join(repo, "node_modules"))) {
      if (entry === "citty") cpSync(join(repo, "node_modules", entry), join(root, "node_modules", entry), { recursive: true });
      else symlinkSync(join(repo, "node_modules", entry), join(root, "node_modules", entry));
    }
    const citty = join(root, "node_modules", "citty", "dist", "index.mjs");
    const h = freshHome();
    started.push(h);
    const fromSource = async (args: string[]): Promise<Run> => {
      const proc = Bun.spawn([process.execPath, join(root, "src", "cli", "main.ts"), ...args], { env: { ...BASE, HOME: h, CACHET_HOME: h }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      return { code, stdout, stderr };
    };
    const statusOf = async () => {
      const m = /pid (\d+),.* (\d+) commands? served/.exec((await fromSource(["daemon", "status"])).stdout);
      return m ? { pid: Number(m[1]), served: Number(m[2]) } : undefined;
    };
    expect((await fromSource(["daemon", "start"])).code).toBe(0);
    for (const change of ["before the first turn", "after a turn"]) {
      const { pid, served } = (await statusOf())!;
      if (change === "after a turn") {
        expect((await fromSource(["--emulate", "a turn"])).code).toBe(0);
        expect(await statusOf()).toEqual({ pid, served: served + 1 });
      }
      appendFileSync(citty, `\n// changed ${change}\n`);
      const changed = await fromSource(["--emulate", "--debug", `changed ${change}`]);
      expect(changed.code).toBe(0);
      expect(changed.stderr).toContain(`the daemon declined this command (module file ${citty} changed since the daemon loaded it; it restarts)`);
      await exited(pid);
      let fresh = await statusOf();
      while (!fresh) fresh = await statusOf();
      expect(fresh.served).toBe(0);
      expect((await fromSource(["--emulate", "served again"])).code).toBe(0);
      expect(await statusOf()).toEqual({ pid: fresh.pid, served: 1 });
    }
    expect((await fromSource(["daemon", "stop"])).code).toBe(0);
  });

  test("CACHET_NO_DAEMON takes the words CACHET_NO_STORE takes: 0/false/no/off leave the daemon on, 1/yes run in-process, anything else is exit 2", async () => {
    const h = freshHome();
    await startDaemon(h);
    const served = async () => (await status(h))!.served;
    for (const [value, viaDaemon] of [["0", true], ["false", true], ["No", true], [" off ", true], ["", true], ["1", false], ["yes", false]] as const) {
      const before = await served();
      const r = await cachet(["--emulate", "hello"], { home: h, env: { CACHET_NO_DAEMON: value } });
      expect({ value, code: r.code, served: await served() }).toEqual({ value, code: 0, served: before + (viaDaemon ? 1 : 0) });
    }
    const before = await served();
    const bogus = await cachet(["--emulate", "hello"], { home: h, env: { CACHET_NO_DAEMON: "bogus" } });
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toBe('cachet: CACHET_NO_DAEMON="bogus": expected 1, true, yes or on (or 0, false, no, off, empty)\n  hint: set CACHET_NO_DAEMON=1 to turn it on, or unset it\n');
    expect(await served()).toBe(before);
  });

  test("stop during a turn that never ends: the turn gets the in-process SIGTERM line and 143, the daemon exits, and nothing succeeds it", async () => {
    const h = freshHome();
    const twin = freshHome();
    const pid = await startDaemon(h);
    const args = ["--emulate", "--idle-timeout", "0", "--session", "endless", "stream then stall"];
    const env = { CACHET_EMULATOR_FAULT: "stall" };
    const alone = turn(twin, args, { ...env, CACHET_NO_DAEMON: "1" });
    await readUntil(alone.stdout, " ");
    alone.kill("SIGTERM");
    const expected = { code: await alone.exited, lines: cachetLines(await new Response(alone.stderr).text()) };
    expect(expected.code).toBe(143);

    const endless = turn(h, args, env);
    await readUntil(endless.stdout, " ");
    const stop = await cachet(["daemon", "stop"], { home: h });
    expect(stop).toEqual({ code: 0, stdout: "", stderr: `[info] cachet daemon: stopped (pid ${pid})\n` });
    expect({ code: await endless.exited, lines: cachetLines(await new Response(endless.stderr).text()) }).toEqual(expected);
    await exited(pid);
    // A successor is started before the process exits: none was.
    expect(daemonsOf(h)).toEqual([]);
    expect((await cachet(["daemon", "status"], { home: h })).stdout).toBe("cachet daemon: not running\n");
  });

  test("stop during a turn whose stdout nobody reads (a full pipe): its client ends as SIGTERM ends the turn's own process, with the in-process line and 143", async () => {
    const h = freshHome();
    const twin = freshHome();
    const pid = await startDaemon(h);
    // The stream stalls after half of a 60000-token answer (~160 KB): far more than a pipe holds (64 KiB on Linux).
    const args = ["--emulate", "--idle-timeout", "0", "--max-tokens", "60000", "--session", "unread", "stream then stall"];
    const env = { CACHET_EMULATOR_ANSWER_TOKENS: "60000", CACHET_EMULATOR_FAULT: "stall" };
    /** A turn in `home` whose stdout is a fifo this test opened and never reads, once 100 KB of its answer is stored (and so written). */
    const unread = async (home: string, extra: Record<string, string>) => {
      const fifo = `${home}/stdout.fifo`;
      expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
      const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      const writer = openSync(fifo, constants.O_WRONLY);
      const proc = Bun.spawn([BINARY, ...args], { env: { ...BASE, HOME: home, CACHET_HOME: home, ...env, ...extra }, stdin: "ignore", stdout: writer, stderr: "pipe" });
      closeSync(writer);
      const stderr = new Response(proc.stderr).text();
      for (;;) {
        const shown = await cachet(["sessions", "show", "unread", "--json"], { home });
        const messages = shown.code === 0 ? (JSON.parse(shown.stdout) as { messages: { message: { content: { text?: string }[] } }[] }).messages : [];
        if ((messages[1]?.message.content[0]?.text?.length ?? 0) >= 100_000) break;
        if (proc.exitCode !== null) throw new Error(`the turn ended before its answer was stored: ${await stderr}`);
      }
      return { proc, stderr, reader };
    };
    const alone = await unread(twin, { CACHET_NO_DAEMON: "1" });
    alone.proc.kill("SIGTERM");
    const expected = { code: await alone.proc.exited, lines: cachetLines(await alone.stderr) };
    closeSync(alone.reader);
    expect(expected).toEqual({ code: 143, lines: ["cachet: interrupted by SIGTERM mid-answer: the partial answer is stored and marked incomplete (`cachet -c` continues)"] });

    const served = await unread(h, {});
    try {
      const stop = await cachet(["daemon", "stop"], { home: h });
      expect(stop).toEqual({ code: 0, stdout: "", stderr: `[info] cachet daemon: stopped (pid ${pid})\n` });
      // Nobody reads the fifo: the client ends as the turn's own process did, leaving what its stdout did not take.
      expect({ code: await served.proc.exited, lines: cachetLines(await served.stderr) }).toEqual(expected);
    } finally {
      closeSync(served.reader);
    }
    expect(daemonsOf(h)).toEqual([]);
  }, 60_000);

  test("while a stop waits for the running turn, status says stopping (never not running while the process lives), and a turn runs in-process", async () => {
    const h = freshHome();
    const pid = await startDaemon(h);
    // The turn waits for its session's lease, held by a turn in its own process; its client is stopped (SIGSTOP)
    // meanwhile. Once the holder ends, the turn writes the answer's first tool call on stderr (2 MB of arguments, more
    // than a socket holds) to the stopped client: the turn's end cannot reach that client until it runs again.
    const script = `${h}/loud.json`;
    const call = { name: "note", arguments: JSON.stringify({ text: "loud ".repeat(400_000) }) };
    // An answer is picked by the assistant turns already in the request: the holder's partial one may be among them.
    const answer = { tool_calls: Array.from({ length: 8 }, () => call) };
    await Bun.write(script, JSON.stringify([answer, answer]));
    const holder = turn(h, ["--emulate", "--json", "--session", "loud", "the holder"], { CACHET_EMULATOR_FAULT: "stall", CACHET_NO_DAEMON: "1" });
    await readUntil(holder.stdout, '"type":"text"');
    const loud = turn(h, ["--emulate", "--verbose", "--idle-timeout", "0", "--session", "loud", "a loud turn"], { CACHET_EMULATOR_SCRIPT: script, CACHET_EMULATOR_FAULT: "stall" });
    const { rest } = await readLine(loud.stderr, "is busy");
    loud.kill("SIGSTOP");
    holder.kill("SIGTERM");
    expect(await holder.exited).toBe(143);
    // The turn stores its answer once it has content, after writing it: the holder's prompt and partial answer, the
    // turn's prompt, and its answer make four messages.
    while (!(await cachet(["sessions", "show", "loud"], { home: h })).stdout.includes("Messages (4)")) if (loud.exitCode !== null) throw new Error("the loud turn ended first");
    const stop = Bun.spawn([BINARY, "daemon", "stop"], { env: { ...BASE, HOME: h, CACHET_HOME: h }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    let stopping: string | undefined;
    while (stopping === undefined) {
      const r = await cachet(["daemon", "status"], { home: h });
      if (r.stdout.startsWith("cachet daemon: stopping")) stopping = r.stdout;
      else if (r.code !== 0) {
        // "not running" only once the process is gone.
        expect(processAlive(pid)).toBe(false);
        throw new Error("the daemon exited before a status said stopping");
      }
    }
    expect(stopping).toStartWith(`cachet daemon: stopping (pid ${pid}, socket `);
    const meanwhile = await cachet(["--emulate", "--verbose", "meanwhile"], { home: h });
    expect(meanwhile.code).toBe(0);
    expect(meanwhile.stderr).toContain("the daemon declined this command (the daemon is stopping)");
    const loudErr = rest();
    loud.kill("SIGCONT");
    expect(await stop.exited).toBe(0);
    expect(await new Response(stop.stderr).text()).toBe(`[info] cachet daemon: stopped (pid ${pid})\n`);
    expect(await loud.exited).toBe(143);
    expect(cachetLines(await loudErr)[0]).toStartWith("cachet: interrupted by SIGTERM");
    await exited(pid);
    expect(daemonsOf(h)).toEqual([]);
  });

  /** A turn in `h` interrupted by SIGINT mid-answer (exit 130): it ends the daemon's process its own way, which restarts. */
  async function interruptedMidAnswer(h: string): Promise<void> {
    const endless = turn(h, ["--emulate", "--idle-timeout", "0", "stream then stall"], { CACHET_EMULATOR_FAULT: "stall" });
    await readUntil(endless.stdout, " ");
    endless.kill("SIGINT");
    expect(await endless.exited).toBe(130);
  }

  test("stop right after a turn that ended the process its own way (SIGINT mid-answer, 130): the daemon restarting is stopped, nothing succeeds it, and status then says not running", async () => {
    const h = freshHome();
    const pid = await startDaemon(h);
    await interruptedMidAnswer(h);
    const stop = await cachet(["daemon", "stop"], { home: h });
    // The old daemon (restarting) answers the stop, or the successor if it took over first: never "not running".
    const stopped = /^\[info\] cachet daemon: stopped \(pid (\d+)\)\n$/.exec(stop.stderr);
    expect({ code: stop.code, stderr: stopped ? "stopped" : stop.stderr }).toEqual({ code: 0, stderr: "stopped" });
    // Stop returns once the process is gone, and the successor with it.
    expect(daemonsOf(h)).toEqual([]);
    expect(processAlive(pid)).toBe(false);
    expect(await cachet(["daemon", "status"], { home: h })).toEqual({ code: 1, stdout: "cachet daemon: not running\n", stderr: "" });
  });

  test("stop right after a turn that failed once it unwound (exit 4, exit 2): the daemon that ran it, still serving, is stopped, and nothing succeeds it", async () => {
    for (const [args, env, code] of [
      [["--emulate", "--retries", "0", "x"], { CACHET_EMULATOR_FAULT: "500" }, 4],
      [["--emulate", "--no-such-flag", "x"], {}, 2],
    ] as const) {
      const h = freshHome();
      const pid = await startDaemon(h);
      expect((await cachet([...args], { home: h, env })).code).toBe(code);
      expect(await status(h)).toMatchObject({ pid, served: 1 });
      const stop = await cachet(["daemon", "stop"], { home: h });
      expect(stop).toEqual({ code: 0, stdout: "", stderr: `[info] cachet daemon: stopped (pid ${pid})\n` });
      expect(daemonsOf(h)).toEqual([]);
      expect(processAlive(pid)).toBe(false);
      expect(await cachet(["daemon", "status"], { home: h })).toEqual({ code: 1, stdout: "cachet daemon: not running\n", stderr: "" });
    }
  });

  test("a turn whose input left the daemon far above its size (a refused 512 MiB stdin): it is answered as in-process, a fresh daemon replaces the big one, and the next turn answers", async () => {
    const h = freshHome();
    const pid = await startDaemon(h);
    const env = { ...BASE, HOME: h, CACHET_HOME: h, CACHET_MAX_STDIN_BYTES: String(512 * 2 ** 20) };
    const big = Bun.spawn(["sh", "-c", 'yes | "$1" --emulate --verbose hi', "sh", BINARY], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(big.stderr).text(), big.exited]);
    // Run by the daemon (nothing declined), refused as in its own process.
    expect({ code, lines: cachetLines(stderr) }).toEqual({ code: 3, lines: ["cachet: stdin is larger than 512 MiB", "  hint: send a smaller input, or raise the limit with CACHET_MAX_STDIN_BYTES"] });
    // The next turn answers: in its own process while the big daemon hands over, or in the fresh one.
    const next = await cachet(["--emulate", "next"], { home: h });
    expect({ code: next.code, answered: next.stdout.length > 0 }).toEqual({ code: 0, answered: true });
    let fresh: number | undefined;
    await until("a fresh daemon to answer", async () => {
      const s = await status(h);
      if (s && !s.line.includes("restarting") && s.pid !== pid) fresh = s.pid;
      return fresh !== undefined;
    });
    await exited(pid);
    expect(daemonsOf(h)).toEqual([fresh!]);
  });

  test("after a turn killed by SIGINT (130), status says restarting (pid N) until the successor answers, never not running, and one daemon is left", async () => {
    const h = freshHome();
    const pid = await startDaemon(h);
    await interruptedMidAnswer(h);
    const lines: string[] = [];
    let next: number | undefined;
    while (next === undefined) {
      const r = await cachet(["daemon", "status"], { home: h });
      if (r.code !== 0) throw new Error(`status during the hand-over: ${r.stdout}${r.stderr} (daemons: ${daemonsOf(h)}, the old one alive: ${processAlive(pid)})`);
      const m = /^cachet daemon: (restarting|running) \(pid (\d+)/.exec(r.stdout);
      if (!m) throw new Error(`unexpected status: ${r.stdout}`);
      if (m[1] === "restarting") {
        expect(r.stdout).toStartWith(`cachet daemon: restarting (pid ${pid}, socket `);
        lines.push("restarting");
      } else if (Number(m[2]) !== pid) next = Number(m[2]);
    }
    // The first status came long before the successor's warm-up ended.
    expect(lines.length).toBeGreaterThan(0);
    await exited(pid);
    expect(daemonsOf(h)).toEqual([next]);
    // The successor serves the next turn.
    expect((await cachet(["--emulate", "hello"], { home: h })).code).toBe(0);
    expect((await status(h))!).toMatchObject({ pid: next, served: 1 });
  });

  test("a client killed (kill -9) mid-answer: the daemon ends the turn as the client's death ends it in-process (the ledger row left in flight, marked lost by the next turn), and a successor serves on", async () => {
    const h = freshHome();
    const twin = freshHome();
    // The answer stalls after its first half: the client dies with the turn unfinished, never after a fast answer ended.
    const args = ["--emulate", "--idle-timeout", "0", "--session", "long", "a long answer"];
    const env = { CACHET_EMULATOR_FAULT: "stall" };
    /** Kills the turn's client once it printed, runs the next turn, and reads the killed session's ledger. */
    const killed = async (home: string, extra: Record<string, string>) => {
      const t = turn(home, args, { ...env, ...extra });
      await readUntil(t.stdout, " ");
      t.kill("SIGKILL");
      expect(await t.exited).toBe(137);
      expect((await cachet(["--emulate", "next turn"], { home, env: extra })).code).toBe(0);
      const cost = JSON.parse((await cachet(["cost", "--json", "long"], { home })).stdout);
      return { total: { ...cost.total, outputTps: undefined }, requests: cost.requests.map((r: Record<string, unknown>) => ({ ...r, id: undefined, startedAt: undefined })) };
    };
    const alone = await killed(twin, { CACHET_NO_DAEMON: "1" });
    // Not billed: the kill left the usage unknown.
    expect(alone.total.costUsd).not.toBeGreaterThan(0.01);
    const pid = await startDaemon(h);
    const viaDaemon = await killed(h, {});
    await exited(pid);
    expect(viaDaemon).toEqual(alone);
    let next = await status(h);
    while (!next) next = await status(h);
    expect(next.pid).not.toBe(pid);
  });

  test("a long answer streamed as fast as the daemon reads it: SIGINT once it prints ends the turn mid-answer (130, the partial answer stored incomplete); kill -9 leaves its row lost, not a whole answer billed", async () => {
    // The emulator answers 64,000 tokens at once: the daemon's loop is never idle while it reads them.
    const env = { CACHET_EMULATOR_ANSWER_TOKENS: "64000" };
    const args = ["--emulate", "--max-tokens", "64000", "--json"];
    const h = freshHome();
    await startDaemon(h);
    const interrupted = turn(h, [...args, "--session", "sigint", "a long answer"], env);
    await readUntil(interrupted.stdout, '"type":"text"');
    interrupted.kill("SIGINT");
    expect(await interrupted.exited).toBe(130);
    const [request] = JSON.parse((await cachet(["cost", "--json", "sigint"], { home: h })).stdout).requests;
    expect(request.output).toBeGreaterThan(0);
    expect(request.output).toBeLessThan(64000);
    const log = (await cachet(["export", "sigint"], { home: h })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    expect(log.filter((l) => l.type === "message").map((l) => [l.message.role, l.message.incomplete === true])).toEqual([
      ["user", false],
      ["assistant", true],
    ]);

    // The interrupted turn's daemon hands over to a successor: the next turn waits for it, so it runs in a daemon too.
    let next = await status(h);
    while (!next?.line.startsWith("cachet daemon: running")) next = await status(h);
    const killed = turn(h, [...args, "--session", "sigkill", "a long answer"], env);
    await readUntil(killed.stdout, '"type":"text"');
    killed.kill("SIGKILL");
    expect(await killed.exited).toBe(137);
    expect((await cachet(["--emulate", "--session", "sigkill", "next"], { home: h })).code).toBe(0);
    // Its row is lost (usage unknown), as a client's death leaves it in its own process: the answer was not read to its end.
    const requests = JSON.parse((await cachet(["cost", "--json", "sigkill"], { home: h })).stdout).requests;
    expect(requests.map((r: { output: number | null }) => r.output === null)).toEqual([true, false]);
  });

  test("what a daemon killed while it started left next to its socket (the socket it bound, its warm-up home) is removed by status, stop and the next start; a live process's never", async () => {
    const h = freshHome();
    /** A process that binds `.s<its pid>` in `h`, as a server does before renaming it over daemon.sock; resolves once bound. */
    const binder = async () => {
      const proc = Bun.spawn([process.execPath, "-e", `Bun.listen({ unix: process.argv[1] + "/.s" + process.pid, socket: { data() {} } }); console.log("bound");`, h], {
        stdin: "ignore",
        stdout: "pipe",
        stderr: "inherit",
      });
      await readUntil(proc.stdout, "bound");
      return proc;
    };
    const live = await binder();
    const [liveSocket, liveHome] = [`${h}/.s${live.pid}`, `${h}/.w${live.pid}`];
    mkdirSync(liveHome);
    try {
      for (const action of [["daemon", "status"], ["daemon", "stop"], ["daemon", "start"]]) {
        const killed = await binder();
        killed.kill("SIGKILL");
        await killed.exited;
        const [staleSocket, staleHome] = [`${h}/.s${killed.pid}`, `${h}/.w${await deadPid()}`];
        mkdirSync(staleHome);
        expect([existsSync(staleSocket), existsSync(staleHome)]).toEqual([true, true]);
        if (action[1] === "start") started.push(h);
        await cachet(action, { home: h });
        expect({ action, left: [existsSync(staleSocket), existsSync(staleHome)], live: [existsSync(liveSocket), existsSync(liveHome)] }).toEqual({ action, left: [false, false], live: [true, true] });
      }
      // The started daemon removed its own warm-up home and renamed its socket: it added its socket and pid file only.
      expect(await status(h)).toBeDefined();
      expect(readdirSync(h).sort()).toEqual([`.s${live.pid}`, `.w${live.pid}`, "daemon.pid", "daemon.sock"].sort());
    } finally {
      live.kill();
    }
  });

  test("a daemon killed (kill -9) leaves its socket and pid file: status says not running (exit 1) and removes both; a live daemon's are left by statuses meanwhile, a stopped one's too", async () => {
    const h = freshHome();
    const pid = await startDaemon(h);
    const statuses = await Promise.all(Array.from({ length: 4 }, () => cachet(["daemon", "status"], { home: h })));
    expect(statuses.map((r) => r.stdout.startsWith(`cachet daemon: running (pid ${pid}, `))).toEqual([true, true, true, true]);
    expect(daemonFiles(h)).toEqual(["daemon.pid", "daemon.sock"]);
    // Stopped (SIGSTOP), it answers nothing but still listens: its files stay.
    process.kill(pid, "SIGSTOP");
    const unanswered = await cachet(["daemon", "status"], { home: h });
    expect(unanswered).toEqual({ code: 1, stdout: "", stderr: `cachet daemon: pid ${pid} does not answer (stopped or hung?); \`kill ${pid}\` ends it\n` });
    expect(daemonFiles(h)).toEqual(["daemon.pid", "daemon.sock"]);
    expect(readFileSync(`${h}/daemon.pid`, "utf8")).toBe(`${pid}\n`);
    process.kill(pid, "SIGKILL");
    await exited(pid);
    expect(daemonFiles(h)).toEqual(["daemon.pid", "daemon.sock"]);
    expect(await cachet(["daemon", "status"], { home: h })).toEqual({ code: 1, stdout: "cachet daemon: not running\n", stderr: "" });
    expect(daemonFiles(h)).toEqual([]);
  });

  test("a dead daemon's socket and pid file are removed by status, stop and start; with a pid file naming a live process they are left", async () => {
    const h = freshHome();
    for (const action of ["status", "stop", "start"]) {
      await deadDaemonFiles(h, await deadPid());
      if (action === "start") started.push(h);
      expect((await cachet(["daemon", action], { home: h })).code).toBe(action === "status" ? 1 : 0);
      // The start replaced them with its own daemon's.
      expect({ action, files: daemonFiles(h) }).toEqual({ action, files: action === "start" ? ["daemon.pid", "daemon.sock"] : [] });
    }
    const pid = (await status(h))!.pid;
    expect(readFileSync(`${h}/daemon.pid`, "utf8")).toBe(`${pid}\n`);
    expect((await cachet(["daemon", "stop"], { home: h })).code).toBe(0);
    expect(daemonFiles(h)).toEqual([]);
    // A pid file left alone (no socket) naming a process that is gone: removed; one naming a live process: left.
    writeFileSync(`${h}/daemon.pid`, `${await deadPid()}\n`);
    expect((await cachet(["daemon", "status"], { home: h })).stdout).toBe("cachet daemon: not running\n");
    expect(daemonFiles(h)).toEqual([]);
    await deadDaemonFiles(h, process.pid);
    expect(await cachet(["daemon", "status"], { home: h })).toEqual({ code: 1, stdout: "cachet daemon: not running\n", stderr: "" });
    expect(daemonFiles(h)).toEqual(["daemon.pid", "daemon.sock"]);
  });

  // Only root can give a file to another user.
  test.skipIf(process.getuid?.() !== 0)("a dead daemon's socket and pid file of another user's are left by status, stop and start", async () => {
    const h = freshHome();
    await deadDaemonFiles(h, await deadPid());
    for (const name of ["daemon.pid", "daemon.sock"]) chownSync(`${h}/${name}`, 65534, 65534);
    for (const action of ["status", "stop"]) {
      expect((await cachet(["daemon", action], { home: h })).stdout).toBe(action === "status" ? "cachet daemon: not running\n" : "");
      expect({ action, files: daemonFiles(h) }).toEqual({ action, files: ["daemon.pid", "daemon.sock"] });
    }
  });

  test("a daemon whose socket file was removed (its home deleted) or replaced exits by itself, and a new start leaves one daemon", async () => {
    const h = freshHome();
    const first = await startDaemon(h);
    rmSync(h, { recursive: true, force: true });
    await exited(first);
    const second = await startDaemon(h);
    expect(second).not.toBe(first);
    // Another listener bound the path: the daemon exits and leaves that socket in place.
    rmSync(`${h}/daemon.sock`);
    const other = Bun.listen({ unix: `${h}/daemon.sock`, socket: { data() {} } });
    try {
      await exited(second);
      expect(existsSync(`${h}/daemon.sock`)).toBe(true);
    } finally {
      other.stop(true);
    }
    expect(daemonsOf(h)).toEqual([]);
  });
});
