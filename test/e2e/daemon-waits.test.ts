/**
 * Signals during a daemon turn's waits (README "Resident daemon"): a turn
 * waiting on a held session lease or on a provider's first byte, SIGINT and
 * SIGTERM end it as they end the same turn in its own process
 * (CACHET_NO_DAEMON=1): the same line, exit code and ledger. The wait for the
 * first byte writes nothing to the client, and its signal is sent once the
 * wait is seen from outside the turn's output (the emulator holding the
 * request): a line the turn wrote would itself be its first frame. The lease
 * wait is seen by the line `--verbose` writes as it begins.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BINARY, cachet, cleanHomes, freshHome, readLine, readUntil, until } from "./harness.ts";
import { against, type EmulatorProcess, startEmulatorProcess } from "./session-kit.ts";

const home = freshHome();
const twin = freshHome();
const BASE = { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", NO_COLOR: "1" };
let daemon: ReturnType<typeof Bun.spawn> | undefined;

/** `daemon status` of `h` answers. */
async function serving(h: string): Promise<void> {
  await until("a daemon to answer", async () => (await cachet(["daemon", "status"], { home: h })).code === 0);
}

/** A turn started in `h` (the daemon's home, or the twin's with CACHET_NO_DAEMON=1), stdout and stderr piped. */
function start(h: string, args: string[], env: Record<string, string> = {}) {
  const alone = h === twin ? { CACHET_NO_DAEMON: "1" } : {};
  return Bun.spawn([BINARY, ...args], { env: { ...BASE, HOME: h, CACHET_HOME: h, ...alone, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** The ledger's requests and cost of a home. */
async function ledger(h: string): Promise<unknown> {
  const r = await cachet(["stats", "--json"], { home: h });
  const { requests, costUsd } = (JSON.parse(r.stdout) as { total: { requests: number; costUsd: number } }).total;
  return { requests, costUsd };
}

/** The lines of `stderr` that cachet itself wrote (hint lines included). */
function cachetLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.startsWith("cachet: ") || line.startsWith("  hint: "));
}

beforeAll(async () => {
  daemon = Bun.spawn([BINARY, "daemon", "run", "--idle", "10m"], { env: { ...BASE, HOME: home, CACHET_HOME: home }, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  await serving(home);
});

afterAll(async () => {
  await cachet(["daemon", "stop"], { home });
  daemon?.kill();
  cleanHomes();
});

describe("a signal during a daemon turn's wait ends it as in-process", () => {
  test("SIGINT while another process holds the session's lease: nothing sent, the in-process line, exit 130", async () => {
    const results = [];
    for (const h of [home, twin]) {
      await serving(home);
      // The holder runs in its own process in either home, so the daemon is free for the waiting turn.
      const holder = start(h, ["--emulate", "--json", "--session", "leased", "holder"], { CACHET_EMULATOR_FAULT: "stall", CACHET_NO_DAEMON: "1" });
      await readUntil(holder.stdout, '"type":"text"');
      const waiter = start(h, ["--emulate", "--verbose", "--session", "leased", "waiter"]);
      const { rest } = await readLine(waiter.stderr, "is running a turn): waiting for it");
      const stderr = rest();
      waiter.kill("SIGINT");
      const code = await waiter.exited;
      results.push({ code, lines: cachetLines(await stderr) });
      holder.kill("SIGTERM");
      expect(await holder.exited).toBe(143);
    }
    expect(results[0]).toEqual(results[1]!);
    expect(results[0]!.code).toBe(130);
    expect(results[0]!.lines).toContain("cachet: interrupted by SIGINT before the request was sent: nothing was sent, and the prompt was not stored");
    expect(await ledger(home)).toEqual(await ledger(twin));
  });

  describe("waiting for a provider's first byte (the emulator holds the request)", () => {
    let emulator: EmulatorProcess;
    beforeAll(async () => {
      emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold" });
    });
    afterAll(() => emulator.stop());

    for (const [signal, flags, code] of [
      ["SIGINT", ["--idle-timeout", "0"], 130],
      ["SIGTERM", ["--no-stream"], 143],
    ] as const) {
      test(`${signal} with ${flags.join(" ")}: the in-process line, exit ${code}, the attempt in the ledger`, async () => {
        const target = against(emulator, "anthropic/claude-sonnet-4-6");
        const results = [];
        for (const h of [home, twin]) {
          await serving(home);
          const held = (await emulator.received()).length;
          const turn = start(h, [...target.args, ...flags, "the request held"], target.env);
          const stderr = new Response(turn.stderr).text();
          await until("the request to reach the emulator", async () => (await emulator.received()).length > held, () => turn.exitCode === null);
          turn.kill(signal);
          results.push({ code: await turn.exited, lines: cachetLines(await stderr) });
        }
        expect(results[0]).toEqual(results[1]!);
        expect(results[0]!.code).toBe(code);
        expect(results[0]!.lines[0]).toStartWith(`cachet: interrupted by ${signal} after the request was sent, before any answer came`);
        expect(await ledger(home)).toEqual(await ledger(twin));
      });
    }
  });
});
