import { afterEach, describe, expect, test } from "bun:test";
import { bindEdges, edges, processEdges, type ChunkReader, type Edges } from "./edges.ts";
import { dispatch } from "./cli/dispatch.ts";
import { handleInterrupts } from "./run/interrupt.ts";
import { readStdin } from "./run/stdin.ts";
import { noteStdoutFailure, resetStdout, settleStdout, stdout, stdoutStopped } from "./stdout.ts";

/** Thrown by the fake exit: a command's exit never returns. */
class Exited extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Edges that record what a command did to them, as a resident process's client's would. */
function fakeEdges(stdinText = "", options: { stuckStdout?: boolean } = {}) {
  const seen = { stdout: [] as string[], stderr: "", exits: [] as number[], finishes: [] as number[], signals: new Map<NodeJS.Signals, () => void>(), flushes: 0 };
  const bytes = new TextEncoder().encode(stdinText);
  let sent = false;
  const reader: ChunkReader = {
    read: async () => (sent || bytes.byteLength === 0 ? { done: true } : ((sent = true), { done: false, value: bytes })),
    cancel: async () => {},
    releaseLock: () => {},
  };
  const e: Edges = {
    stdin: () => ({ isTTY: false, open: async () => reader }),
    isTerminal: () => false,
    stdoutSink: () => ({
      write(chunk) {
        seen.stdout.push(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk));
        // A reader that never takes what it is given.
        return options.stuckStdout ? new Promise<number>(() => {}) : chunk.length;
      },
      flush: () => (options.stuckStdout ? new Promise<number>(() => {}) : ++seen.flushes && 0),
    }),
    writeStderr(text) {
      seen.stderr += text;
    },
    onSignal(name, handler) {
      seen.signals.set(name, handler);
      return () => void seen.signals.delete(name);
    },
    exit(code) {
      seen.exits.push(code);
      throw new Exited(code);
    },
    // As a daemon client's: the code is kept, and the command returns.
    finish(code) {
      seen.finishes.push(code);
    },
    get finished() {
      return seen.finishes[0];
    },
    pid: process.pid,
  };
  return { e, seen };
}

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

describe("bound edges (src/edges.ts)", () => {
  test("a write through src/stdout.ts reaches the bound stdout sink, whole and flushed", async () => {
    const { e, seen } = fakeEdges();
    restore = bindEdges(e);
    resetStdout();
    stdout().write("first answer\n");
    stdout().write("second\n");
    await settleStdout("answer");
    expect(seen.stdout).toEqual(["first answer\n", "second\n"]);
    expect(seen.flushes).toBe(2);
  });

  test("a failed command line reports on the bound stderr and finishes with its code there: dispatch returns, nothing exits", async () => {
    const { e, seen } = fakeEdges();
    restore = bindEdges(e);
    await dispatch(["--version", "extra"]);
    expect(seen.finishes).toEqual([2]);
    expect(seen.exits).toEqual([]);
    expect(seen.stderr).toBe("cachet: --version takes no other arguments\n  hint: run `cachet --version` alone\n");
    expect(seen.stdout).toEqual([]);
  });

  test("a --json run's usage error: its error line on the bound stdout, then it finishes with exit 2, its stdout not waited for", async () => {
    // Its own process would exit without waiting for the writes its stdout never took.
    const { e, seen } = fakeEdges("", { stuckStdout: true });
    restore = bindEdges(e);
    await dispatch(["--json", "--no-such-flag", "hi"]);
    expect(seen.finishes).toEqual([2]);
    expect(seen.exits).toEqual([]);
    expect(seen.stdout).toHaveLength(1);
    expect(JSON.parse(seen.stdout[0]!)).toMatchObject({ type: "error", code: "UNKNOWN_FLAG" });
    expect(seen.stderr).toStartWith("cachet: ");
  });

  test("a second SIGINT exits 130 through the bound edges, with its one line on their stderr", () => {
    const { e, seen } = fakeEdges();
    restore = bindEdges(e);
    const interrupt = handleInterrupts(60_000);
    expect([...seen.signals.keys()].sort()).toEqual(["SIGINT", "SIGTERM"]);
    const sigint = seen.signals.get("SIGINT")!;
    sigint();
    expect(interrupt.signal.aborted).toBe(true);
    expect(seen.exits).toEqual([]);
    expect(() => sigint()).toThrow(Exited);
    expect(seen.exits).toEqual([130]);
    expect(seen.stderr).toBe("cachet: interrupted; stopped what was still running (what was stored so far is kept)\n");
    interrupt.dispose();
    expect(seen.signals.size).toBe(0);
  });

  test("stdin is read from the bound edges by default", async () => {
    const { e } = fakeEdges("piped through the client\n");
    restore = bindEdges(e);
    const read = await readStdin({ mode: "wait", terminal: false, firstByteWaitMs: 0, encoding: "strict", maxBytes: 1 << 20 });
    expect(read.text).toBe("piped through the client\n");
    expect(read.bytes).toBe(25);
  });

  test("a command's closed stdout does not leak into the next: dispatch starts each with the bound edges' own", async () => {
    const first = fakeEdges();
    restore = bindEdges(first.e);
    resetStdout();
    noteStdoutFailure(Object.assign(new Error("EPIPE: broken pipe, write"), { code: "EPIPE" }));
    expect(stdoutStopped()).toBe(true);
    restore();
    const next = fakeEdges();
    restore = bindEdges(next.e);
    await dispatch(["help"]);
    expect(next.seen.exits).toEqual([]);
    expect(next.seen.stdout.join("")).toStartWith("cachet");
    expect(next.seen.stdout.join("")).toContain("sessions");
    expect(first.seen.stdout).toEqual([]);
  });

  test("restoring puts the process's own edges back", () => {
    const { e } = fakeEdges();
    const undo = bindEdges(e);
    expect(edges()).toBe(e);
    undo();
    expect(edges()).toBe(processEdges);
  });
});
