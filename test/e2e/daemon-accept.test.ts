/**
 * The daemon's ACCEPT (README "Resident daemon"): a turn the daemon accepted
 * is never run again by its client, whatever becomes of the daemon (killed
 * while the turn waits on the provider or on a session lease: one line, exit
 * 1, one request); a turn not yet accepted by a stopped (SIGSTOP) daemon ends
 * on SIGINT/SIGTERM as in-process before sending, or runs in its client when
 * the daemon does not answer, and the daemon, once continued, never starts
 * it; a turn accepted and interrupted while the daemon is stopped is stored,
 * once it runs again, as in its own process (SIGINT: the partial answer and an
 * incomplete row; its client killed: a row in flight the next turn marks lost);
 * `daemon status` and `daemon stop` name a daemon that does not answer
 * (and the stop asked is done once it runs again).
 * Every wait is on an event: the emulator receiving the request, a line the
 * turn writes, the client's signal handlers and the daemon's stopped state
 * showing in /proc.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType, readLine, readUntil, until } from "./harness.ts";
import { against, type EmulatorProcess, exportSession, startEmulatorProcess } from "./session-kit.ts";
import { processAlive } from "../../src/process-alive.ts";

const BASE = { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", NO_COLOR: "1" };

const STOPPED_LINE =
  "cachet: the daemon stopped during this command, so its output here was cut short; what the turn stored is kept (`cachet sessions show` and `cachet export` show it)\n";

/** Daemon pids started here, continued and stopped after each test. */
const daemons: { home: string; pid: number }[] = [];

afterEach(async () => {
  for (const { home, pid } of daemons.splice(0)) {
    try {
      process.kill(pid, "SIGCONT");
      process.kill(pid, "SIGTERM");
    } catch {
      // Already gone (killed by the test).
    }
    await cachet(["daemon", "stop"], { home });
  }
});
afterAll(() => cleanHomes());

/** A fresh home with a daemon started in it; the daemon's pid. */
async function daemonHome(): Promise<{ home: string; pid: number }> {
  const home = freshHome();
  expect((await cachet(["daemon", "start"], { home })).code).toBe(0);
  const pid = await daemonPid(home);
  daemons.push({ home, pid });
  return { home, pid };
}

async function daemonPid(home: string): Promise<number> {
  const r = await cachet(["daemon", "status"], { home });
  const m = /pid (\d+),.* (\d+) commands? served/.exec(r.stdout);
  if (!m) throw new Error(`no daemon answers in ${home}: ${r.stdout}${r.stderr}`);
  return Number(m[1]);
}

/** The number of commands the daemon in `home` has served. */
async function served(home: string): Promise<number> {
  const r = await cachet(["daemon", "status"], { home });
  return Number(/(\d+) commands? served/.exec(r.stdout)?.[1] ?? Number.NaN);
}

/**
 * Waits until the daemon in `home`, just continued, has dealt with what it read meanwhile: its status answer comes
 * after the connections that were waiting, and says "one running now" while it checks (or runs) a turn.
 */
async function settled(home: string): Promise<void> {
  await until("the daemon is idle", async () => !(await cachet(["daemon", "status"], { home })).stdout.includes("one running now"));
}

/** A turn started in `home`, stdout and stderr piped. */
function turn(home: string, args: string[], env: Record<string, string> = {}) {
  return Bun.spawn([BINARY, ...args], { env: { ...BASE, HOME: home, CACHET_HOME: home, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** Whether process `pid` catches `signal` (its handler is installed), from /proc's SigCgt mask. */
function catches(pid: number, signal: number): boolean {
  const mask = /SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & (1n << BigInt(signal - 1))) !== 0n;
}

/** The state letter of process `pid` (`T`: stopped), from /proc/PID/stat; "" once it is gone. */
function stateOf(pid: number): string {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1] ?? "";
  } catch {
    return "";
  }
}

/** A process's stdout and stderr, read as they come. */
function printing(proc: ReturnType<typeof turn>) {
  let out = "";
  let err = "";
  const decoder = [new TextDecoder(), new TextDecoder()];
  void (async () => {
    for await (const chunk of proc.stdout) out += decoder[0]!.decode(chunk, { stream: true });
  })();
  void (async () => {
    for await (const chunk of proc.stderr) err += decoder[1]!.decode(chunk, { stream: true });
  })();
  return { proc, stdout: () => out, stderr: () => err, alive: () => proc.exitCode === null };
}

/** What {@link stored} returns. */
interface Stored {
  messages: { role: string; content: { type: string; text?: string }[]; incomplete?: boolean }[];
  requests: { status: string; error: string | null; usage: { output?: number }; costUsd: number | null; finishReason: string | null; usageLowerBound?: boolean }[];
}

/** The messages and ledger rows of session "frozen" in `home`, without ids and times. */
async function stored(home: string): Promise<unknown> {
  const { messages, requests } = await exportSession(home, "frozen");
  return {
    messages: messages.map((m) => ({ role: m.role, content: m.content, incomplete: m.incomplete })),
    requests: requests.map((r) => ({ status: r.status, error: r.error, usage: r.usage, costUsd: r.costUsd, finishReason: r.finishReason, usageLowerBound: r.usageLowerBound })),
  };
}

/** Requests in the ledger of `home`. */
async function requests(home: string): Promise<number> {
  const r = await cachet(["stats", "--json"], { home });
  return (JSON.parse(r.stdout) as { total: { requests: number } }).total.requests;
}

describe("a turn the daemon accepted is never run again by its client", () => {
  let emulator: EmulatorProcess;
  afterAll(() => emulator?.stop());

  test("the daemon killed while the provider holds the request: the stopped line, exit 1, one request", async () => {
    emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold" });
    const { home, pid } = await daemonHome();
    const target = against(emulator, "anthropic/claude-sonnet-4-6");
    const before = (await emulator.received()).length;
    const held = turn(home, [...target.args, "--idle-timeout", "3", "--session", "k9", "k9 hold"], target.env);
    const stderr = new Response(held.stderr).text();
    await until("the request reaches the emulator", async () => (await emulator.received()).length > before, () => held.exitCode === null);
    process.kill(pid, "SIGKILL");
    expect(await held.exited).toBe(1);
    expect(await stderr).toBe(STOPPED_LINE);
    expect((await emulator.received()).length).toBe(before + 1);
  });

  test("the daemon killed while the turn waits on a session lease: the stopped line, exit 1, only the holder's request", async () => {
    const { home, pid } = await daemonHome();
    // The holder runs in its own process: the daemon is free for the waiting turn.
    const holder = turn(home, ["--emulate", "--json", "--session", "leased", "holder"], { CACHET_EMULATOR_FAULT: "stall", CACHET_NO_DAEMON: "1" });
    await readUntil(holder.stdout, '"type":"text"');
    // --verbose: the turn says when it starts waiting for the lease (it runs in the daemon by then: accepted).
    const waiter = turn(home, ["--emulate", "--verbose", "--session", "leased", "waiter"]);
    const { line, rest } = await readLine(waiter.stderr, "is running a turn): waiting for it");
    const stderr = rest();
    expect(line).toMatch(/^\[log\] session s_\w+ is busy \(process \d+ on /);
    process.kill(pid, "SIGKILL");
    expect(await waiter.exited).toBe(1);
    // Never run again in its own process: it would have waited for the lease again, and said so again.
    expect(await stderr).toBe(STOPPED_LINE);
    holder.kill("SIGTERM");
    expect(await holder.exited).toBe(143);
    expect(await requests(home)).toBe(1);
  });
});

describe("a stopped (SIGSTOP) daemon", () => {
  test("SIGINT after ACCEPT: the client stops waiting 3 s later with one line, exit 130", async () => {
    const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold" });
    try {
      const { home, pid } = await daemonHome();
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const before = (await emulator.received()).length;
      // Accepted: the daemon sends the request. Then it stops, the turn still waiting on the held request.
      const held = turn(home, [...target.args, "--session", "frozen", "the request held"], target.env);
      const stderr = new Response(held.stderr).text();
      await until("the request reaches the emulator", async () => (await emulator.received()).length > before, () => held.exitCode === null);
      process.kill(pid, "SIGSTOP");
      held.kill("SIGINT");
      expect(await held.exited).toBe(130);
      expect(await stderr).toBe(
        "cachet: interrupted by SIGINT; the command did not end within 3 s in the daemon (stopped or hung?), so this client stops waiting: what the turn stored is kept (`cachet sessions show` and `cachet export` show it)\n",
      );
    } finally {
      emulator.stop();
    }
  });

  test("SIGINT after ACCEPT, the daemon stopped: once it runs again, the turn is stored as the same turn interrupted in its own process (no in-flight row left)", async () => {
    const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold" });
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const args = [...target.args, "--session", "frozen", "the request held"];
      /** The turn in `home` once its request reached the emulator (which holds it). */
      const sent = async (home: string, env: Record<string, string>) => {
        const before = (await emulator.received()).length;
        const proc = turn(home, args, { ...target.env, ...env });
        await until("the request reaches the emulator", async () => (await emulator.received()).length > before, () => proc.exitCode === null);
        return proc;
      };
      const twin = freshHome();
      const alone = await sent(twin, { CACHET_NO_DAEMON: "1" });
      alone.kill("SIGINT");
      expect(await alone.exited).toBe(130);

      const { home, pid } = await daemonHome();
      const held = await sent(home, {});
      const stderr = new Response(held.stderr).text();
      process.kill(pid, "SIGSTOP");
      held.kill("SIGINT");
      expect(await held.exited).toBe(130);
      expect(await stderr).toStartWith("cachet: interrupted by SIGINT; the command did not end within 3 s in the daemon");
      process.kill(pid, "SIGCONT");
      // The daemon that ran the turn ends once it has (a fresh one takes over): what it stored is final by then.
      await until("the continued daemon exits", () => !processAlive(pid));
      expect(await stored(home)).toEqual(await stored(twin));
    } finally {
      emulator.stop();
    }
  });

  test("SIGINT mid-answer of a long answer streamed as fast as the daemon reads it, the daemon stopped: once it runs again, the turn is stored as SIGINT stores it in its own process (all that was printed, row incomplete), not left in flight", async () => {
    // 64,000 tokens sent at once: the provider's bytes keep arriving while the daemon is stopped, and the woken daemon
    // writes the next piece of the answer to its client, gone by then, before its loop has read the forwarded signal.
    const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_ANSWER_TOKENS: "64000" });
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const args = [...target.args, "--json", "--max-tokens", "64000", "--session", "frozen", "a long answer"];
      const twin = freshHome();
      const alone = printing(turn(twin, args, { ...target.env, CACHET_NO_DAEMON: "1" }));
      await until("the answer begins", () => alone.stdout().includes('"type":"text"'), alone.alive);
      alone.proc.kill("SIGINT");
      expect(await alone.proc.exited).toBe(130);
      const own = (await stored(twin)) as Stored;

      const { home, pid } = await daemonHome();
      const run = printing(turn(home, args, target.env));
      await until("the answer begins", () => run.stdout().includes('"type":"text"'), run.alive);
      process.kill(pid, "SIGSTOP");
      await until("the daemon is stopped", () => stateOf(pid) === "T");
      run.proc.kill("SIGINT");
      expect(await run.proc.exited).toBe(130);
      expect(run.stderr()).toStartWith("cachet: interrupted by SIGINT; the command did not end within 3 s in the daemon");
      process.kill(pid, "SIGCONT");
      // The daemon that ran the turn ends once it has (a fresh one takes over): what it stored is final by then.
      await until("the continued daemon exits", () => !processAlive(pid));
      const after = (await stored(home)) as Stored;
      // As in its own process: the partial answer is stored and marked incomplete, its row settled as such, its usage
      // a lower bound (how far the answer came differs between the two runs; what each says of it does not).
      const shape = (s: Stored) => ({
        roles: s.messages.map((m) => [m.role, m.incomplete]),
        requests: s.requests.map((r) => ({ status: r.status, error: r.error, finishReason: r.finishReason, lowerBound: r.usageLowerBound })),
      });
      expect(shape(after)).toEqual(shape(own));
      expect(shape(after)).toMatchObject({ requests: [{ status: "incomplete", lowerBound: true }] });
      const printed = ofType(events(run.stdout()), "text")
        .map((e) => e.delta)
        .join("");
      const answer = after.messages[1]!.content.map((b) => b.text).join("");
      expect(printed).not.toBe("");
      // What the client printed before it stopped waiting is stored, and what the daemon read after it, since.
      expect(answer.startsWith(printed)).toBe(true);
      expect(after.requests[0]!.usage.output).toBeGreaterThan(0);
      expect(after.requests[0]!.usage.output).toBeLessThan(64000);
    } finally {
      emulator.stop();
    }
  });

  test("its client killed (SIGKILL) mid-answer, the daemon stopped: once it runs again, the turn ends as the client's own process killed ends it (the row left in flight, marked lost by the session's next turn)", async () => {
    // Every answer stalls after its first half: the turn is mid-answer when the daemon is stopped.
    const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "stall:1" });
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const { home, pid } = await daemonHome();
      const run = printing(turn(home, [...target.args, "--json", "--idle-timeout", "600", "--session", "frozen", "an answer cut mid-way"], target.env));
      await until("the answer begins", () => run.stdout().includes('"type":"text"'), run.alive);
      process.kill(pid, "SIGSTOP");
      await until("the daemon is stopped", () => stateOf(pid) === "T");
      run.proc.kill("SIGKILL");
      expect(await run.proc.exited).toBe(137);
      process.kill(pid, "SIGCONT");
      await until("the continued daemon exits", () => !processAlive(pid));
      expect(await stored(home)).toMatchObject({ requests: [{ status: "in_flight", usage: {}, costUsd: null }] });
      const next = await cachet([...target.args, "--session", "frozen", "the next turn"], { home, env: { ...target.env, CACHET_NO_DAEMON: "1" } });
      expect(next.code).toBe(0);
      expect(next.stderr).toContain("1 request(s) of an earlier run of this session never finished");
      expect(await stored(home)).toMatchObject({ requests: [{ status: "lost" }, { status: "ok" }] });
    } finally {
      emulator.stop();
    }
  });

  test("SIGINT after ACCEPT, the daemon stopped for good: the session's next turn takes its lease over at once (its client is gone), marks the attempt lost and takes the unanswered prompt out; the daemon continued later changes nothing", async () => {
    // Only the first request is held: the next turn's is answered.
    const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold:1" });
    try {
      const target = against(emulator, "anthropic/claude-sonnet-4-6");
      const { home, pid } = await daemonHome();
      const held = turn(home, [...target.args, "--session", "frozen", "the request held"], target.env);
      await until("the request reaches the emulator", async () => (await emulator.received()).length > 0, () => held.exitCode === null);
      process.kill(pid, "SIGSTOP");
      held.kill("SIGINT");
      expect(await held.exited).toBe(130);
      const next = await cachet([...target.args, "--session", "frozen", "the next turn"], { home, env: { ...target.env, CACHET_NO_DAEMON: "1" } });
      expect(next.code).toBe(0);
      expect(next.stderr).toContain("1 request(s) of an earlier run of this session never finished");
      expect(next.stderr).toContain("never got an answer (its run was stopped); it was taken out of the log");
      const after = await stored(home);
      expect(after).toMatchObject({ messages: [{ role: "user", content: [{ type: "text", text: "the next turn" }] }, { role: "assistant" }], requests: [{ status: "lost" }, { status: "ok" }] });
      process.kill(pid, "SIGCONT");
      await until("the continued daemon exits", () => !processAlive(pid));
      expect(await stored(home)).toEqual(after);
    } finally {
      emulator.stop();
    }
  });

  for (const [signal, number, code] of [
    ["SIGINT", 2, 130],
    ["SIGTERM", 15, 143],
  ] as const) {
    test(`${signal} before ACCEPT ends the turn as in-process before sending, and the continued daemon never starts it`, async () => {
      const { home, pid } = await daemonHome();
      process.kill(pid, "SIGSTOP");
      const waiting = turn(home, ["--emulate", "--session", "cancelled", "never started"]);
      const stderr = new Response(waiting.stderr).text();
      await until("the client handles signals", () => catches(waiting.pid, number), () => waiting.exitCode === null);
      waiting.kill(signal);
      expect(await waiting.exited).toBe(code);
      expect(await stderr).toBe(`cachet: interrupted by ${signal} before the request was sent: nothing was sent, and the prompt was not stored\n`);
      process.kill(pid, "SIGCONT");
      await settled(home);
      // A turn after it runs in the daemon: the cancelled one was not started (nor is it running).
      const next = await cachet(["--emulate", "--session", "next", "after the cancel"], { home });
      expect(next.code).toBe(0);
      expect(await served(home)).toBe(1);
      expect(await requests(home)).toBe(1);
      const sessions = await cachet(["sessions", "--json"], { home });
      expect(sessions.stdout).not.toContain("cancelled");
    });
  }

  test("a turn it does not answer runs in its client, and the continued daemon never starts it", async () => {
    const { home, pid } = await daemonHome();
    process.kill(pid, "SIGSTOP");
    const r = await cachet(["--emulate", "--session", "alone", "run it yourself"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("cachet: the daemon did not answer within 2 s (stopped or hung? `cachet daemon status` tells); running this command in this process\n");
    process.kill(pid, "SIGCONT");
    await settled(home);
    const next = await cachet(["--emulate", "--session", "next", "after it"], { home });
    expect(next.code).toBe(0);
    expect(await served(home)).toBe(1);
    expect(await requests(home)).toBe(2);
  });

  test("daemon status and daemon stop name it and exit 1", async () => {
    const { home, pid } = await daemonHome();
    process.kill(pid, "SIGSTOP");
    for (const action of ["status", "stop"]) {
      const r = await cachet(["daemon", action], { home });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`cachet daemon: pid ${pid} does not answer (stopped or hung?); \`kill ${pid}\` ends it\n`);
    }
    // The stop it was asked is read once it runs again: it stops then.
    process.kill(pid, "SIGCONT");
    await until("the continued daemon stops", async () => (await cachet(["daemon", "status"], { home })).stdout === "cachet daemon: not running\n");
  });
});
