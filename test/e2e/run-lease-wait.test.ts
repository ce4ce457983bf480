/**
 * A run that waits for another process's turn on its session says so once on
 * stderr without --verbose, naming the holder, as `sessions rm` and `compact`
 * do; a `--json` run says it there too and keeps its stdout JSON lines. Every
 * wait is on an event: the emulator's request log (its `hold` fault keeps the
 * holder's answer back), a line on each waiter's stderr.
 */
import { afterAll, expect, test } from "bun:test";
import { BINARY, cleanHomes, events, freshHome, until, homeEnv } from "./harness.ts";
import { against, startEmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

const MODEL = "anthropic/claude-sonnet-4-6";
const WAITING = /^cachet: session s_\w+ is running a turn \(process (\d+) on .+\): waiting for it to finish before sending this one$/;

test("a run waiting on a session lease says so once on stderr, naming the holder's pid; --json keeps stdout JSON", async () => {
  const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold:1" });
  try {
    const home = freshHome();
    const target = against(emulator, MODEL);
    const env = { ...homeEnv(home), ...target.env };
    const spawn = (args: string[]) => {
      const proc = Bun.spawn([BINARY, ...target.args, "-m", MODEL, "--session", "w", ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const out = { stdout: new Response(proc.stdout).text(), stderr: "" };
      const decoder = new TextDecoder();
      const drained = (async () => {
        for await (const chunk of proc.stderr) out.stderr += decoder.decode(chunk, { stream: true });
      })();
      return { proc, out, drained };
    };
    const holder = spawn(["first"]);
    await until("the emulator to hold the holder's request", async () => (await emulator.received()).some((r) => r.fault === "hold"));
    const plain = spawn(["second"]);
    const json = spawn(["--json", "third"]);
    await until("both waiters to say they wait", () => plain.out.stderr.includes("is running a turn") && json.out.stderr.includes("is running a turn"));
    await fetch(`${emulator.url}/_emulator/release`, { method: "POST" });
    expect([await holder.proc.exited, await plain.proc.exited, await json.proc.exited]).toEqual([0, 0, 0]);
    await Promise.all([holder.drained, plain.drained, json.drained]);
    const plainLines = plain.out.stderr.split("\n").filter((l) => l.includes("running a turn"));
    const jsonLines = json.out.stderr.split("\n").filter((l) => l.includes("running a turn"));
    // Each says it once, even when the lease passes to the other waiter before its own turn.
    expect([plainLines.length, jsonLines.length]).toEqual([1, 1]);
    expect(plainLines[0]).toMatch(WAITING);
    expect(jsonLines[0]).toMatch(WAITING);
    expect(Number(WAITING.exec(plainLines[0]!)![1])).toBe(holder.proc.pid);
    const jsonOut = await json.out.stdout;
    expect(jsonOut).not.toContain("running a turn");
    expect(events(jsonOut).at(-1)!.type).toBe("done");
    expect((await emulator.received()).length).toBe(3);
  } finally {
    emulator.stop();
  }
});
