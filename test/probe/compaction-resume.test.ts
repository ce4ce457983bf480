/**
 * After a compaction, the same session continued by a new process (a new
 * runtime over the same store and emulator cache file) and a fork of it each
 * read the cache on their first request: the summary zone is read back from
 * the store byte for byte, never recomputed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMPACTION_ROLE } from "../../src/run/stages/compact.ts";
import type { OutputSink } from "../../src/run/output.ts";
import { openRuntime, type Runtime } from "../../src/run/runtime.ts";
import { runTurn } from "../../src/run/turn.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const QUIET: OutputSink = { text() {}, event() {}, async end() {} };
const WORDS = ["harbor", "lantern", "quartz", "meadow", "signal", "copper", "falcon", "tundra", "velvet", "orchard", "glacier", "ember"];
const prompt = (i: number) => `Part ${i} of the notes. ` + Array.from({ length: 1800 }, (_, k) => WORDS[(k * 7 + i * 3) % WORDS.length]).join(" ");

function turn(runtime: Runtime, model: string, session: string | undefined, text: string, fork = false) {
  return runTurn(runtime, {
    prompt: text,
    model,
    session: session === undefined ? { mode: "new" } : { mode: "named", ref: session },
    fork,
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
    role: "main",
    idleMs: 60_000,
    retries: 0,
    sink: QUIET,
  });
}

describe.each(["anthropic/claude-sonnet-4-6", "openai/gpt-4o", "openai-responses/gpt-5", "google/gemini-2.5-flash", "deepseek/deepseek-chat"])("%s", (model) => {
  test("continue in a new process and fork after a compaction: the first request reads the cache, the summary comes from the store", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cachet-compaction-resume-"));
    dirs.push(dir);
    writeFileSync(join(dir, "config.toml"), "[compaction]\ntrigger_tokens = 9000\n");
    const options = { emulate: true, env: { ...process.env, CACHET_HOME: dir }, storePath: join(dir, "store.db"), emulatorStatePath: join(dir, "emulator.json") };
    const first = await openRuntime(options);
    let session: string | undefined;
    // Turns until one compacts, then one more that extends the compacted request.
    for (let i = 1; i <= 12 && (session === undefined || first.store.compactions(session).length === 0); i++) session = (await turn(first, model, session, prompt(i))).sessionId;
    expect(first.store.compactions(session!)).toHaveLength(1);
    await turn(first, model, session, "Short question: which part mentions the harbor first?");
    expect(first.store.compactions(session!)).toHaveLength(1);
    const summary = first.store.summary(session!);
    await first.close();

    const second = await openRuntime(options);
    try {
      const resumed = await turn(second, model, session, "And which part mentions the glacier last?");
      expect(second.store.summary(session!).messages.slice(0, summary.messages.length)).toEqual(summary.messages);
      const row = resumed.row;
      expect(row.cacheableMax ?? 0).toBeGreaterThan(0);
      expect({ read: row.usage.cacheRead ?? 0, enough: (row.usage.cacheRead ?? 0) >= 0.95 * row.cacheableMax! }).toEqual({ read: row.usage.cacheRead ?? 0, enough: true });

      const forked = await turn(second, model, session, "On a branch: list the parts in order.", true);
      expect(forked.sessionId).not.toBe(session);
      expect(second.store.summary(forked.sessionId).messages.slice(0, summary.messages.length)).toEqual(summary.messages);
      const child = forked.row;
      expect(child.cacheableMax ?? 0).toBeGreaterThan(0);
      expect({ read: child.usage.cacheRead ?? 0, enough: (child.usage.cacheRead ?? 0) >= 0.95 * child.cacheableMax! }).toEqual({ read: child.usage.cacheRead ?? 0, enough: true });
      expect(second.store.compactions(session!)).toHaveLength(1);
      console.log(`${model}: resumed first request read ${row.usage.cacheRead}/${row.cacheableMax}, fork's first read ${child.usage.cacheRead}/${child.cacheableMax}`);
      // Neither made a summary call: the summary zone was read back, not recomputed.
      expect(second.store.requests(forked.sessionId).filter((r) => r.role === COMPACTION_ROLE)).toHaveLength(0);
    } finally {
      await second.close();
    }
  }, 120_000);
});

test("a summary is content-addressed: the same span compacted again (a replay in a new session of the same store) takes it from the store, no summary call", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-compaction-replay-"));
  dirs.push(dir);
  writeFileSync(join(dir, "config.toml"), "[compaction]\ntrigger_tokens = 30000\n");
  const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: dir }, storePath: join(dir, "store.db"), emulatorStatePath: null });
  // Many lines per prompt: the extractive render keeps 4 KiB of each user message, so the span needs a summary call.
  const lines = (i: number) => Array.from({ length: 60 }, (_, l) => `Part ${i} line ${l}: ` + Array.from({ length: 25 }, (_, k) => WORDS[(k * 5 + l + i) % WORDS.length]).join(" ")).join("\n");
  const model = "anthropic/claude-sonnet-4-6";
  const replay = async () => {
    let session: string | undefined;
    for (let i = 1; i <= 20 && (session === undefined || runtime.store.compactions(session).length === 0); i++) session = (await turn(runtime, model, session, lines(i))).sessionId;
    return session!;
  };
  try {
    const first = await replay();
    const second = await replay();
    expect(second).not.toBe(first);
    const [made] = runtime.store.compactions(first);
    const [reused] = runtime.store.compactions(second);
    expect(made!.summarySource).toBe("summary");
    expect(runtime.store.requests(first).filter((r) => r.role === COMPACTION_ROLE)).toHaveLength(1);
    expect({ source: reused!.summarySource, key: reused!.summaryKey }).toEqual({ source: "stored", key: made!.summaryKey });
    expect(runtime.store.requests(second).filter((r) => r.role === COMPACTION_ROLE)).toHaveLength(0);
    // The same Z1 bytes, so the replay's requests render like the first session's.
    expect(runtime.store.summary(second).messages.map((m) => m.content)).toEqual(runtime.store.summary(first).messages.map((m) => m.content));
  } finally {
    await runtime.close();
  }
}, 120_000);
