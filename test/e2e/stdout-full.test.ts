/**
 * Stdout that refuses the writes (/dev/full: ENOSPC) is a failure of every
 * command: one line on stderr, exit 1, and a run's turn stored in full first.
 * A closed pipe (EPIPE) stays no failure (test/e2e/nothing-lost.test.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { closeSync, existsSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, homeEnv } from "./harness.ts";
import { exportSession } from "./session-kit.ts";

afterAll(cleanHomes);

/** Runs the binary with stdout on /dev/full. */
async function toFullDevice(home: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  const full = openSync("/dev/full", "w");
  try {
    const proc = Bun.spawn([BINARY, ...args], {
      env: { ...homeEnv(home), ...env },
      stdin: "ignore",
      stdout: full,
      stderr: "pipe",
      timeout: 20_000,
    });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    return { code, stderr };
  } finally {
    closeSync(full);
  }
}

const ANSWER = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");

test.skipIf(!existsSync("/dev/full"))("a full stdout: every command exits 1 with one line; each run's turn is stored with its whole answer", async () => {
  const home = freshHome();
  const script = join(home, "answer.json");
  writeFileSync(script, JSON.stringify([{ text: ANSWER }]));
  const env = { CACHET_EMULATOR_SCRIPT: script };
  const answerLine = "cachet: cannot write the answer to stdout: no space left on device (ENOSPC)";
  const outputLine = "cachet: cannot write the output to stdout: no space left on device (ENOSPC)";
  const runs = [["--emulate", "first"], ["--emulate", "--json", "second"], ["--emulate", "--no-stream", "third"], ["run", "--emulate", "fourth"]];
  for (const args of runs) {
    const r = await toFullDevice(home, args, env);
    expect({ args, code: r.code, first: r.stderr.split("\n")[0] }).toEqual({ args, code: 1, first: answerLine });
    expect(r.stderr.split("\n")[1]).toBe("  hint: make room where stdout goes (or send it elsewhere); the turn is stored in full (`cachet export` prints it) unless --no-store");
  }
  // Large outputs too (`models` is ~100 KB, `help run` ~4 KB): a piece that large is written at once, and its write,
  // not the flush after it, carries the failure (it once escaped as a raw stack trace).
  const commands = [["export"], ["sessions"], ["sessions", "--json"], ["cost"], ["cost", "--json"], ["cost", "--tree", "--json"], ["stats"], ["stats", "--by", "request", "--json"]];
  for (const args of [...commands, ["models"], ["models", "-p", "openai"], ["--version"], ["--help"], ["sessions", "--help"], ["help", "cost"], ["help", "run"], ["run", "--help"]]) {
    const r = await toFullDevice(home, args);
    expect({ args, code: r.code, stderr: r.stderr.split("\n")[0] }).toEqual({ args, code: 1, stderr: outputLine });
    expect(r.stderr).not.toContain("internal error");
  }
  const sessions = (await cachet(["sessions", "--json"], { home })).stdout.trim().split("\n").map((l) => JSON.parse(l) as { id: string });
  expect(sessions).toHaveLength(runs.length);
  for (const { id } of sessions) {
    const { messages, requests } = await exportSession(home, id);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]).not.toHaveProperty("incomplete");
    expect((messages[1]!.content as { text: string }[]).map((b) => b.text).join("")).toBe(ANSWER);
    expect(requests.map((r) => r.status)).toEqual(["ok"]);
  }
});


test.skipIf(!existsSync("/dev/full"))("a full stdout: emulate and proxy --emulate exit 1 at once when their URL line fails, instead of serving on", async () => {
  const home = freshHome();
  // No signal is ever sent: before the fix, each served until toFullDevice's 20 s timeout killed it (exit 143).
  for (const args of [["emulate"], ["proxy", "--emulate"]]) {
    const r = await toFullDevice(home, args);
    expect({ args, code: r.code, stderr: r.stderr.split("\n").filter((l) => l.startsWith("cachet:")) }).toEqual({
      args,
      code: 1,
      stderr: ["cachet: cannot write the output to stdout: no space left on device (ENOSPC)"],
    });
  }
});

test("a reader that closes the pipe after one byte of a large output (models, models --json, export): exit 0 and nothing on stderr, 8 runs of 8 each", async () => {
  const home = freshHome();
  const script = join(home, "answer.json");
  writeFileSync(script, JSON.stringify(Array.from({ length: 6 }, () => ({ text: ANSWER }))));
  for (let i = 0; i < 6; i++) expect((await cachet(["--emulate", "-q", `question ${i} ${ANSWER}`], { home, env: { CACHET_EMULATOR_SCRIPT: script } })).code).toBe(0);
  for (const command of ["models", "models --json", "export"]) {
    const results: { code: string; stderr: string }[] = [];
    for (let i = 0; i < 8; i++) {
      const proc = Bun.spawn(["bash", "-c", `"$0" ${command} | head -c1 >/dev/null; echo "\${PIPESTATUS[0]}"`, BINARY], {
        env: homeEnv(home),
        stdout: "pipe",
        stderr: "pipe",
        timeout: 20_000,
      });
      const [out, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      results.push({ code: out.trim(), stderr });
    }
    expect({ command, results }).toEqual({ command, results: Array(8).fill({ code: "0", stderr: "" }) });
  }
});
