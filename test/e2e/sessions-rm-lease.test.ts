/**
 * `cachet sessions rm` while a turn of that session runs, through the binary
 * against an emulator process: rm takes the session's turn lease, so it waits
 * (saying so on stderr) for the turn to finish and store its answer and ledger
 * row, then removes the session and reports the ledger rows it deleted with
 * their cost. Every wait is on an event: the emulator's request log (its
 * `hold` fault keeps the answer back), a line on rm's stderr.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, events, freshHome, ofType, until, homeEnv } from "./harness.ts";
import { against, startEmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

const MODEL = "anthropic/claude-sonnet-4-6";
const ANSWER = "the held answer";

test("sessions rm during a running turn waits for it, then removes the session and says which ledger rows went with it", async () => {
  const fixtures = freshHome();
  writeFileSync(join(fixtures, "script.json"), JSON.stringify([{ text: ANSWER }]));
  const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_SCRIPT: join(fixtures, "script.json"), CACHET_EMULATOR_FAULT: "hold:1" });
  try {
    const home = freshHome();
    const target = against(emulator, MODEL);
    const env = { ...homeEnv(home), ...target.env };
    const turn = Bun.spawn([BINARY, ...target.args, "-m", MODEL, "--session", "r", "--json", "a question"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const turnOut = new Response(turn.stdout).text();
    const turnErr = new Response(turn.stderr).text();
    await until("the emulator to hold the turn's request", async () => (await emulator.received()).some((r) => r.fault === "hold"));

    const rm = Bun.spawn([BINARY, "sessions", "rm", "r", "--json"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const rmOut = new Response(rm.stdout).text();
    let rmErr = "";
    const decoder = new TextDecoder();
    const rmErrDone = (async () => {
      for await (const chunk of rm.stderr) rmErr += decoder.decode(chunk, { stream: true });
    })();
    await until("rm to say it waits for the turn", () => rmErr.includes("is running a turn"));
    expect(rm.exitCode).toBeNull();
    expect(rmErr).toMatch(/^cachet: session s_\w+ is running a turn \(process \d+ on .+\): waiting for it to finish before removing it\n/);

    await fetch(`${emulator.url}/_emulator/release`, { method: "POST" });
    const turnCode = await turn.exited;
    expect({ code: turnCode, stderr: await turnErr }).toEqual({ code: 0, stderr: "" });
    const list = events(await turnOut);
    expect(ofType(list, "text").map((e) => e.delta).join("")).toBe(ANSWER);
    const cost = ofType(list, "cost")[0]!.cost_usd as number;
    expect(cost).toBeGreaterThan(0);
    const session = ofType(list, "done")[0]!.session as string;

    expect(await rm.exited).toBe(0);
    await rmErrDone;
    const removal = JSON.parse(await rmOut) as Record<string, unknown> & { costExact: string };
    expect(removal).toEqual({ removed: [session], ledgerRows: 1, costUsd: cost, costExact: removal.costExact, unpricedRows: 0 });
    expect(Number(removal.costExact)).toBe(cost);
    expect((await emulator.received()).length).toBe(1);
    const gone = await cachet(["export", "r"], { home });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain('no session "r"');
  } finally {
    emulator.stop();
  }
});
