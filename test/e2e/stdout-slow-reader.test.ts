/**
 * A reader that takes stdout slowly (a pager, `| pv -L`, a busy pipeline)
 * fills the pipe, so cachet's writes to it come back short or blocked: every
 * byte must still arrive, in order. Commit 52a7537 fixed `export` printing a
 * 230 KB message line with its middle missing; these runs read far more than
 * a pipe holds (64 KB on Linux), one chunk at a time with event-loop turns
 * between, through each way cachet writes stdout: `export` (piece by piece),
 * a streamed answer, a `--no-stream` answer and a `--json` run. The assertions hold whatever the timing; a slow reader only
 * makes a lost or reordered byte likely to show.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cleanHomes, freshHome, homeEnv } from "./harness.ts";

afterAll(cleanHomes);

/** Numbered lines, so a dropped or repeated stretch shows as a gap in the numbers. */
function numbered(lines: number, prefix: string): string {
  return Array.from({ length: lines }, (_, i) => `${prefix} line ${String(i).padStart(6, "0")} ${"x".repeat(40)}`).join("\n");
}

/**
 * Runs the binary and reads its stdout a chunk at a time, yielding 200
 * event-loop turns after each: with 4 the reader kept up and the Bun.write
 * that 52a7537 replaced passed; with 200 it failed 3 runs in 3.
 */
async function slowlyRead(home: string, args: string[], env: Record<string, string> = {}, stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([BINARY, ...args], {
    env: { ...homeEnv(home), ...env },
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
    timeout: 60_000,
  });
  const stderr = new Response(proc.stderr).text();
  const reader = proc.stdout.getReader();
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    for (let turn = 0; turn < 200; turn++) await new Promise((resolve) => setImmediate(resolve));
  }
  return { code: await proc.exited, stdout: Buffer.concat(chunks).toString("utf8"), stderr: await stderr };
}

const PROMPT = numbered(3_000, "prompt"); // ~170 KB
const ANSWER = numbered(3_000, "answer");

test("a slow reader gets every byte of large outputs, in order: export, streamed, --no-stream and --json answers", async () => {
  const home = freshHome();
  const script = join(home, "answer.json");
  writeFileSync(script, JSON.stringify(Array.from({ length: 3 }, () => ({ text: ANSWER }))));
  const env = { CACHET_EMULATOR_SCRIPT: script };

  const streamed = await slowlyRead(home, ["--emulate", "--max-tokens", "64000", "-"], env, PROMPT);
  expect({ code: streamed.code, stderr: streamed.stderr }).toEqual({ code: 0, stderr: "" });
  expect(streamed.stdout).toBe(`${ANSWER}\n`);

  const whole = await slowlyRead(home, ["--emulate", "--no-stream", "-c", "-", "again"], env, PROMPT);
  expect(whole.code).toBe(0);
  expect(whole.stdout).toBe(`${ANSWER}\n`);

  const json = await slowlyRead(home, ["--emulate", "--json", "-c", "third"], env);
  expect(json.code).toBe(0);
  const events = json.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string; delta?: string });
  expect(events.filter((e) => e.type === "text").map((e) => e.delta).join("")).toBe(ANSWER);

  const exported = await slowlyRead(home, ["export"]);
  expect(exported.code).toBe(0);
  const lines = exported.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string; message?: { content: { type: string; text?: string }[] } });
  const texts = lines.filter((l) => l.type === "message").map((l) => l.message!.content.filter((b) => b.type === "text").map((b) => b.text).join(""));
  expect(texts).toEqual([`${PROMPT}`, ANSWER, `${PROMPT}\n\nagain`, ANSWER, "third", ANSWER]);
});
