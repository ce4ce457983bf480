/**
 * SIGINT through the binary, against an emulator process, at the three
 * moments that keep different things (README "Exit codes" and the run
 * command): before the request is sent (nothing is sent or stored), after it
 * was sent and before any answer (the request is aborted, the prompt rolled
 * back, the attempt kept in the ledger), and mid-answer (the partial answer
 * stored and marked incomplete, its usage kept as a lower bound). Each stderr
 * message must say exactly what was kept.
 *
 * Every wait is on an event: a file the test plugin writes, the emulator's
 * request log, answer text on stdout. The time from the signal to the exit is
 * printed, not asserted (the machine is shared).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, until, homeEnv } from "./harness.ts";
import { against, exportSession, startEmulatorProcess, type EmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

const MODEL = "anthropic/claude-sonnet-4-6";
const ANSWER = Array.from({ length: 48 }, (_, i) => `step${i + 1}`).join(" ");

/**
 * The test plugin: names the emulator fault SIG_EMU in the request's `x-emulator-fault` header; with SIG_GATE_DIR,
 * its `request:before` hook writes `ready` there and then blocks the thread (a synchronous plugin step, which no
 * signal can stop) until `go` exists.
 */
const PLUGIN = `import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
export default { name: "signal-gate", api: 1, setup(api) {
  const fault = process.env.SIG_EMU;
  const dir = process.env.SIG_GATE_DIR;
  api.hook("request:before", (wire) => {
    if (dir) {
      writeFileSync(join(dir, "ready"), "");
      while (!existsSync(join(dir, "go"))) Bun.sleepSync(5);
    }
    return fault ? { ...wire, headers: { ...wire.headers, "x-emulator-fault": fault } } : wire;
  });
} };
`;

let fixtures = "";
let emulator: EmulatorProcess;

beforeAll(async () => {
  fixtures = freshHome();
  writeFileSync(join(fixtures, "signal-gate.mjs"), PLUGIN);
  writeFileSync(join(fixtures, "script.json"), JSON.stringify(Array.from({ length: 4 }, () => ({ text: ANSWER }))));
  emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_SCRIPT: join(fixtures, "script.json") });
});

afterAll(() => emulator?.stop());

/** A home whose session `z` holds one good turn; the emulator's log is reset after it. */
async function sessionWithOneTurn(): Promise<{ home: string; target: ReturnType<typeof against> }> {
  const home = freshHome();
  const target = against(emulator, MODEL);
  const first = await cachet([...target.args, "-m", MODEL, "--session", "z", "first question"], { home, env: target.env });
  expect(first.code).toBe(0);
  await fetch(`${emulator.url}/_emulator/reset`, { method: "POST" });
  return { home, target };
}

/** Starts the faulted run of session `z` in the background. */
function start(home: string, target: ReturnType<typeof against>, env: Record<string, string>, flags: string[] = []) {
  const proc = Bun.spawn([BINARY, ...target.args, "--session", "z", ...flags, "second question"], {
    env: { ...homeEnv(home), ...target.env, CACHET_PLUGINS: join(fixtures, "signal-gate.mjs"), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stdout = "";
  const decoder = new TextDecoder();
  const pump = (async () => {
    for await (const chunk of proc.stdout) stdout += decoder.decode(chunk, { stream: true });
  })();
  const stderr = new Response(proc.stderr).text();
  return {
    proc,
    alive: () => proc.exitCode === null && proc.signalCode === null,
    stdout: () => stdout,
    /** Sends SIGINT and waits for the exit: exit code, stderr, ms from the signal to the exit. */
    async interrupt(after?: () => void): Promise<{ code: number; stderr: string; ms: number }> {
      const sent = performance.now();
      proc.kill("SIGINT");
      after?.();
      const code = await proc.exited;
      const ms = performance.now() - sent;
      await pump;
      return { code, stderr: await stderr, ms };
    },
  };
}

test("SIGINT while a synchronous plugin step runs before the send: nothing is sent or stored, exit 130, and the message says so", async () => {
  const { home, target } = await sessionWithOneTurn();
  const gate = join(home, "gate");
  mkdirSync(gate);
  const run = start(home, target, { SIG_GATE_DIR: gate });
  await until("the plugin's gate", () => existsSync(join(gate, "ready")), run.alive);
  // The signal lands while the hook blocks the thread; the run sees it only once the hook returns.
  const { code, stderr, ms } = await run.interrupt(() => writeFileSync(join(gate, "go"), ""));
  console.log(`SIGINT before send: exit ${code} ${ms.toFixed(0)} ms after the signal`);
  expect(code).toBe(130);
  expect(stderr).toContain("cachet: interrupted by SIGINT before the request was sent: nothing was sent, and the prompt was not stored");
  expect(stderr).not.toContain("partial answer");
  expect(run.stdout()).toBe("");
  expect(await emulator.received()).toEqual([]);
  const after = await exportSession(home, "z");
  expect(after.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  expect(after.requests.length).toBe(1);
  expect(after.requests[0]!.status).toBe("ok");
});

test("SIGINT after the request was sent, before any answer: the request is aborted, the prompt rolled back, the attempt kept in the ledger, exit 130", async () => {
  const { home, target } = await sessionWithOneTurn();
  const run = start(home, target, { SIG_EMU: "hold:1" });
  await until("the emulator to receive the request", async () => (await emulator.received()).some((r) => r.fault === "hold"), run.alive);
  const { code, stderr, ms } = await run.interrupt();
  console.log(`SIGINT before the first byte: exit ${code} ${ms.toFixed(0)} ms after the signal`);
  // The provider never answered the aborted request: released now, it has no one to answer.
  await fetch(`${emulator.url}/_emulator/release`, { method: "POST" });
  expect(code).toBe(130);
  expect(stderr).toContain("cachet: interrupted by SIGINT after the request was sent, before any answer came: there was no answer to store");
  expect(stderr).toContain("the prompt was not kept in the session");
  expect(stderr).not.toContain("partial answer is stored");
  expect(run.stdout()).toBe("");
  expect((await emulator.received()).length).toBe(1);
  const after = await exportSession(home, "z");
  expect(after.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  expect(after.requests.length).toBe(2);
  const row = after.requests[1]!;
  expect(row.status).toBe("error");
  expect(row.error).toContain("interrupted by SIGINT after the request was sent");
  expect(row.messageId).toBeNull();
  expect(row.costUsd).toBeNull();
});

test("SIGINT mid-answer: the partial answer is stored as shown, its usage kept as a lower bound, exit 130", async () => {
  const { home, target } = await sessionWithOneTurn();
  const run = start(home, target, { SIG_EMU: "stall:1" }, ["--idle-timeout", "600"]);
  await until("answer text on stdout", () => run.stdout().trim() !== "", run.alive);
  const { code, stderr, ms } = await run.interrupt();
  console.log(`SIGINT mid-answer: exit ${code} ${ms.toFixed(0)} ms after the signal`);
  expect(code).toBe(130);
  expect(stderr).toContain("cachet: interrupted by SIGINT mid-answer: the partial answer is stored and marked incomplete");
  const shown = run.stdout().replace(/\n$/, "");
  expect(ANSWER.startsWith(shown)).toBe(true);
  const received = await emulator.received();
  expect(received.length).toBe(1);
  const after = await exportSession(home, "z");
  expect(after.messages.length).toBe(4);
  const answer = after.messages[3]!;
  expect(answer.incomplete).toBe(true);
  expect((answer.content as { type: string; text: string }[]).map((b) => b.text).join("")).toBe(shown);
  const row = after.requests[1]!;
  expect(row.status).toBe("incomplete");
  expect(row.usageLowerBound).toBe(true);
  expect(row.usage.input).toBe(received[0]!.usage.input_tokens);
  expect(row.messageId).toBe(answer.id);
});

test("SIGKILL mid-answer leaves the attempt's in-flight ledger row (usage unknown); stats and cost count it as unpriced, a budget at its worst-case forecast; the next -c marks it lost and does not take it for the previous request", async () => {
  const { home, target } = await sessionWithOneTurn();
  // Under a day limit, so the budget's view of the killed attempt is seen too.
  writeFileSync(join(home, "config.toml"), `[budget]\ntime_zone = "UTC"\ndaily_usd = 100\n`);
  const run = start(home, target, { SIG_EMU: "stall:1" }, ["--idle-timeout", "600"]);
  await until("answer text on stdout", () => run.stdout().trim() !== "", run.alive);
  run.proc.kill("SIGKILL");
  expect(await run.proc.exited).toBe(137);
  expect((await emulator.received()).length).toBe(1);
  const killed = await exportSession(home, "z");
  expect(killed.requests.length).toBe(2);
  const flight = killed.requests[1]!;
  expect(flight.status).toBe("in_flight");
  expect(flight.usage).toEqual({});
  expect(flight.costUsd).toBeNull();
  expect(flight.attempt).toBeUndefined(); // attempt 1 is stored as the default
  expect(typeof flight.startedAt).toBe("number");
  expect(flight.finishedAt).toBeNull();

  // Counted as an attempt whose cost is unknown, never as free.
  const stats = await cachet(["stats", "--session", "z", "--json"], { home });
  expect(stats.code).toBe(0);
  const group = JSON.parse(stats.stdout).groups[0];
  expect({ requests: group.requests, unpricedRequests: group.unpricedRequests, costUsd: group.costUsd }).toEqual({ requests: 2, unpricedRequests: 1, costUsd: killed.requests[0]!.costUsd });
  // The budget keeps counting the killed attempt at its worst-case forecast (its reservation is never settled).
  const standing = await cachet(["stats", "--budget", "--json"], { home });
  expect(standing.code).toBe(0);
  const day = (JSON.parse(standing.stdout) as { lines: { limit: string; spentUsd: number }[] }).lines.find((l) => l.limit === "daily")!;
  expect(day.spentUsd).toBeGreaterThan(0);
  console.log(`budget after the kill: day spent $${day.spentUsd} (the killed attempt's reservation)`);
  const cost = await cachet(["cost", "z"], { home });
  expect(cost.code).toBe(0);
  expect(cost.stdout.split("\n")).toContain(`${flight.id}  main  ${MODEL}  cost unknown  in ? · read ? · write ? · out ?  (status in_flight)`);
  expect(cost.stdout).toContain("total 2 requests");
  expect(cost.stdout).toContain("(+1 unpriced)");

  const next = await cachet([...target.args, "--session", "z", "third question"], { home, env: target.env });
  expect(next.code).toBe(0);
  expect(next.stderr).toContain("1 request(s) of an earlier run of this session never finished (its process was stopped): their ledger rows are kept as lost, usage unknown");
  const after = await exportSession(home, "z");
  expect(after.requests.map((r) => r.status)).toEqual(["ok", "lost", "ok"]);
  expect(after.requests[1]!.id).toBe(flight.id);
  expect((await cachet(["cost", "z"], { home })).stdout.split("\n")).toContain(`${flight.id}  main  ${MODEL}  cost unknown  in ? · read ? · write ? · out ?  (status lost)`);
  expect(after.requests[1]!.error).toContain("the process ended before the answer did");
  // The new turn's previous request is the first turn's, not the lost row (which holds no chain).
  expect(after.requests[2]!.cacheableMax).not.toBeNull();
  // `why` has nothing to compare for a lost row, and compares the next request with the first turn's.
  const whyLost = await cachet(["why", flight.id], { home });
  expect(whyLost.code).toBe(2);
  expect(whyLost.stderr).toContain(`request ${flight.id} never finished (status lost): its wire chain and usage were not recorded`);
  const whyNext = await cachet(["why", after.requests[2]!.id], { home });
  expect(whyNext.code).toBe(0);
  expect(whyNext.stdout).toContain(`previous  ${after.requests[0]!.id}`);
  const again = await cachet([...target.args, "--session", "z", "fourth question"], { home, env: target.env });
  expect(again.code).toBe(0);
  expect(again.stderr).not.toContain("never finished");
});
