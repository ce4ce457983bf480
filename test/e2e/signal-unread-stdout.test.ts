/**
 * SIGINT and SIGTERM once a turn's answer is complete and stored but stdout
 * has not taken all of it (a reader that stopped reading: a full pipe). The
 * run waits for stdout then, and a signal must still end it with 130/143 and
 * the one line saying it was interrupted while writing the answer, that the
 * answer is stored whole and how to read it (README "Exit codes", "Resident
 * daemon"), in its own process and through a daemon alike, and must not hang
 * on a stderr nobody reads either.
 *
 * Stdout is a fifo this test opened and never reads; the 60000-token answer
 * (~160 KB) is far more than a pipe holds (64 KiB on Linux). The signal is
 * sent once `cachet export` shows the turn's ledger row `ok`: every wait is on
 * an event, none on time.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, constants, openSync, writeSync } from "node:fs";
import { BINARY, cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(async () => {
  for (const h of daemons) await cachet(["daemon", "stop"], { home: h });
  cleanHomes();
});

const BASE = { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", NO_COLOR: "1" };
const ARGS = ["--emulate", "--max-tokens", "60000", "--session", "unread", "a long answer"];
const ANSWER_ENV = { CACHET_EMULATOR_ANSWER_TOKENS: "60000" };

/** Homes a daemon was started in, stopped after the file. */
const daemons: string[] = [];

/** The lines of `stderr` that cachet itself wrote (hint lines included). */
function cachetLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.startsWith("cachet: ") || line.startsWith("  hint: "));
}

/** The line a turn interrupted while writing its stored answer prints. */
function expectedLine(signal: "SIGINT" | "SIGTERM", sessionId: string): string {
  return `cachet: interrupted by ${signal} while writing the answer to stdout, which had not taken all of it: the whole answer is stored (\`cachet export ${sessionId}\` prints it)`;
}

/** A fifo in `home` opened for reading (never read), and a writer for a child's fd; `full` fills it first. */
function unreadFifo(home: string, name: string, full = false): { reader: number; writer: number } {
  const path = `${home}/${name}.fifo`;
  expect(Bun.spawnSync(["mkfifo", path]).exitCode).toBe(0);
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  if (full) {
    // Filled through a non-blocking writer of its own; the child gets a blocking one, as a shell's `2>fifo` gives.
    const filler = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    const chunk = new Uint8Array(4096).fill(46);
    try {
      for (;;) writeSync(filler, chunk);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe("EAGAIN");
    }
    closeSync(filler);
  }
  return { reader, writer: openSync(path, constants.O_WRONLY) };
}

/** The stored session `unread` of `home`, once its turn's ledger row is `ok`; undefined before. */
async function storedTurn(home: string): Promise<{ sessionId: string; status: string; output: number; incomplete: boolean; answerChars: number } | undefined> {
  const r = await cachet(["export", "unread"], { home });
  if (r.code !== 0) return undefined;
  const lines = r.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>);
  const request = lines.find((l) => l.type === "request")?.request;
  if (request?.status !== "ok") return undefined;
  const answer = lines.filter((l) => l.type === "message")[1]?.message;
  const text = (answer?.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("");
  return { sessionId: lines.find((l) => l.type === "session")!.session.id, status: request.status, output: request.usage.output, incomplete: answer?.incomplete === true, answerChars: text.length };
}

/**
 * Starts the turn in `home` with stdout a fifo nobody reads (stderr too, full already, with `stderrFull`), and waits
 * until its answer is stored whole: its ledger row `ok`, the process still running (held by stdout).
 */
async function blockedTurn(home: string, env: Record<string, string>, stderrFull = false) {
  const out = unreadFifo(home, "stdout");
  const err = stderrFull ? unreadFifo(home, "stderr", true) : undefined;
  const proc = Bun.spawn([BINARY, ...ARGS], {
    env: { ...BASE, HOME: home, CACHET_HOME: home, ...ANSWER_ENV, ...env },
    stdin: "ignore",
    stdout: out.writer,
    stderr: err?.writer ?? "pipe",
  });
  closeSync(out.writer);
  if (err) closeSync(err.writer);
  const stderr = err ? Promise.resolve("") : new Response(proc.stderr as ReadableStream<Uint8Array>).text();
  for (;;) {
    if (await storedTurn(home)) {
      expect(proc.exitCode).toBeNull();
      return {
        proc,
        // Read again: export reads the messages, then the ledger, not as one snapshot, so the read that saw the row ok
        // may hold the answer as it was a moment before; the answer is stored before its row, so this read has it whole.
        stored: (await storedTurn(home))!,
        stderr,
        close: () => {
          closeSync(out.reader);
          if (err) closeSync(err.reader);
        },
      };
    }
    if (proc.exitCode !== null) throw new Error(`the turn ended before its ledger row was ok (exit ${proc.exitCode}): ${await stderr}`);
  }
}

/** A daemon started in a new home, answering status. */
async function homeWithDaemon(): Promise<string> {
  const h = freshHome();
  daemons.push(h);
  expect((await cachet(["daemon", "start"], { home: h })).code).toBe(0);
  return h;
}

describe("a signal while stdout has not taken the whole stored answer", () => {
  for (const [signal, code] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const) {
    test(`${signal} in the turn's own process: exit ${code} and the line saying the answer is stored whole`, async () => {
      const home = freshHome();
      const turn = await blockedTurn(home, { CACHET_NO_DAEMON: "1" });
      try {
        const sent = performance.now();
        turn.proc.kill(signal);
        const exited = await turn.proc.exited;
        // Printed, not asserted (the machine is shared).
        console.log(`${signal} with stdout unread: exit ${exited} ${(performance.now() - sent).toFixed(0)} ms after the signal`);
        expect({ code: exited, lines: cachetLines(await turn.stderr) }).toEqual({ code, lines: [expectedLine(signal, turn.stored.sessionId)] });
      } finally {
        turn.close();
      }
      // Stored whole: complete, its ledger row ok with the full output.
      expect(await storedTurn(home)).toEqual({ ...turn.stored, status: "ok", output: 60000, incomplete: false });
      expect(turn.stored.answerChars).toBeGreaterThan(1 << 17);
    }, 60_000);
  }

  test("SIGTERM with stderr a full pipe nobody reads as well: the exit does not wait for stderr (143)", async () => {
    const home = freshHome();
    const turn = await blockedTurn(home, { CACHET_NO_DAEMON: "1" }, true);
    try {
      turn.proc.kill("SIGTERM");
      expect(await turn.proc.exited).toBe(143);
    } finally {
      turn.close();
    }
  }, 60_000);

  test("through a daemon: `daemon stop` and a SIGINT to the client end the turn with the in-process line and code; a full stderr does not hold the exit", async () => {
    const stopped = await homeWithDaemon();
    const byStop = await blockedTurn(stopped, {});
    try {
      const sent = performance.now();
      const stop = await cachet(["daemon", "stop"], { home: stopped });
      console.log(`daemon stop with the client's stdout unread: stop exit ${stop.code} ${(performance.now() - sent).toFixed(0)} ms after it started`);
      expect(stop.code).toBe(0);
      expect(stop.stderr).toStartWith("[info] cachet daemon: stopped (pid ");
      expect({ code: await byStop.proc.exited, lines: cachetLines(await byStop.stderr) }).toEqual({ code: 143, lines: [expectedLine("SIGTERM", byStop.stored.sessionId)] });
    } finally {
      byStop.close();
    }

    const interrupted = await homeWithDaemon();
    const bySigint = await blockedTurn(interrupted, {});
    try {
      bySigint.proc.kill("SIGINT");
      expect({ code: await bySigint.proc.exited, lines: cachetLines(await bySigint.stderr) }).toEqual({ code: 130, lines: [expectedLine("SIGINT", bySigint.stored.sessionId)] });
    } finally {
      bySigint.close();
    }
    // The client's stderr a full pipe nobody reads too: the client relays the line there, and does not wait for it.
    const mute = await homeWithDaemon();
    const muted = await blockedTurn(mute, {}, true);
    try {
      const sent = performance.now();
      muted.proc.kill("SIGTERM");
      expect(await muted.proc.exited).toBe(143);
      console.log(`SIGTERM to a daemon's client with stdout and stderr full: exit ${(performance.now() - sent).toFixed(0)} ms after the signal`);
    } finally {
      muted.close();
    }
    for (const [h, turn] of [
      [stopped, byStop],
      [interrupted, bySigint],
      [mute, muted],
    ] as const) {
      expect(await storedTurn(h)).toEqual({ ...turn.stored, status: "ok", output: 60000, incomplete: false });
    }
  }, 90_000);
});
