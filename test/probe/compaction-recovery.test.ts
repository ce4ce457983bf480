/**
 * A request that no longer fits the window gets one recovery compaction and
 * one retry instead of a CONTEXT_TOO_LONG refusal; with compaction off the
 * refusal's hint offers `cachet compact`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OutputSink } from "../../src/run/output.ts";
import { openRuntime, type Runtime } from "../../src/run/runtime.ts";
import { runTurn } from "../../src/run/turn.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const QUIET: OutputSink = { text() {}, event() {}, async end() {} };
const WORDS = ["harbor", "lantern", "quartz", "meadow", "signal", "copper", "falcon", "tundra", "velvet", "orchard"];
// About 45,000 tokens each: three of them overflow gpt-4o's 128,000-token window.
const huge = (i: number) => `Dump ${i}: ` + Array.from({ length: 45_000 }, (_, k) => WORDS[(k * 3 + i) % WORDS.length]).join(" ");

function turn(runtime: Runtime, session: string | undefined, text: string, compact: boolean) {
  return runTurn(runtime, {
    prompt: text,
    model: "openai/gpt-4o",
    session: session === undefined ? { mode: "new" } : { mode: "named", ref: session },
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
    role: "main",
    compact,
    idleMs: 60_000,
    retries: 0,
    sink: QUIET,
  });
}

/** One streamed gpt-5 turn without retries: a new session, or the one named `session`. */
function gpt5Turn(runtime: Runtime, session: string | undefined, text: string) {
  return runTurn(runtime, {
    prompt: text,
    model: "openai/gpt-5",
    session: session === undefined ? { mode: "new" } : { mode: "named", ref: session },
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m" },
    role: "main",
    idleMs: 60_000,
    retries: 0,
    sink: QUIET,
  });
}

test("over the window: CONTEXT_TOO_LONG naming cachet compact with --no-compact; one recovery compaction and the turn goes through without", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-compaction-recovery-"));
  dirs.push(dir);
  // A trigger far above the window: only the recovery path can compact.
  writeFileSync(join(dir, "config.toml"), "[compaction]\ntrigger_tokens = 10000000\n");
  const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: dir }, storePath: join(dir, "store.db"), emulatorStatePath: null });
  try {
    let session = (await turn(runtime, undefined, huge(1), false)).sessionId;
    session = (await turn(runtime, session, huge(2), false)).sessionId;
    const refused = await turn(runtime, session, huge(3), false).catch((error: unknown) => error as { code: string; hint: string });
    expect((refused as { code: string }).code).toBe("CONTEXT_TOO_LONG");
    expect((refused as { hint: string }).hint).toContain("cachet compact");
    expect(runtime.store.compactions(session)).toHaveLength(0);

    const result = await turn(runtime, session, huge(3), true);
    expect(result.row.status).toBe("ok");
    const compactions = runtime.store.compactions(session);
    expect(compactions.map((c) => c.reason)).toEqual(["too long"]);
    // The log keeps everything; the request sent only the summary and the new message.
    expect(runtime.store.loadSession(session).messages).toHaveLength(6);
  } finally {
    await runtime.close();
  }
}, 180_000);

test("the provider's own refusal (gpt-5: a prompt under the 400,000-token window checked locally, over the 272,000-token input limit the provider enforces): the refused attempt is in the ledger, one recovery compaction, one retry that goes through", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-compaction-recovery-"));
  dirs.push(dir);
  writeFileSync(join(dir, "config.toml"), "[compaction]\ntrigger_tokens = 10000000\n");
  const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: dir }, storePath: join(dir, "store.db"), emulatorStatePath: null });
  // About 70,000 tokens each: the fourth request is ~280,000 tokens.
  const part = (i: number) => `Dump ${i}: ` + Array.from({ length: 70_000 }, (_, k) => WORDS[(k * 7 + i) % WORDS.length]).join(" ");
  const send = (session: string | undefined, text: string) => gpt5Turn(runtime, session, text);
  try {
    let session: string | undefined;
    for (let i = 1; i <= 3; i++) session = (await send(session, part(i))).sessionId;
    expect(runtime.store.requests(session!).map((r) => r.status)).toEqual(["ok", "ok", "ok"]);
    const result = await send(session, part(4));
    expect(result.row.status).toBe("ok");
    const rows = runtime.store.requests(session!);
    // The refused attempt (billed nothing, kept with its error), then the retry after the one compaction.
    expect(rows.map((r) => r.status)).toEqual(["ok", "ok", "ok", "error", "ok"]);
    expect(rows[3]!.error).toContain("maximum context length");
    expect(runtime.store.compactions(session!).map((c) => c.reason)).toEqual(["too long"]);
    expect(rows[4]!.id).toBe(result.row.id);
  } finally {
    await runtime.close();
  }
}, 180_000);

test("never two compactions in one turn: a turn that compacted on its threshold and is still refused as too long fails with the provider's error instead of compacting again", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-compaction-recovery-"));
  dirs.push(dir);
  writeFileSync(join(dir, "config.toml"), "[compaction]\ntrigger_tokens = 100000\n");
  const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: dir }, storePath: join(dir, "store.db"), emulatorStatePath: null });
  const send = (session: string | undefined, text: string) => gpt5Turn(runtime, session, text);
  try {
    let session = (await send(undefined, "First, a short question about the harbor.")).sessionId;
    session = (await send(session, "Then another one about the lantern.")).sessionId;
    // ~280,000 tokens alone: over the threshold (one compaction), and over gpt-5's input limit even after it.
    const failure = await send(session, "Dump: " + Array.from({ length: 280_000 }, (_, k) => WORDS[(k * 7) % WORDS.length]).join(" ")).catch((error: unknown) => error as Error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain("maximum context length");
    expect(runtime.store.compactions(session).map((c) => c.reason)).toEqual(["threshold"]);
    expect(runtime.store.requests(session).map((r) => r.status)).toEqual(["ok", "ok", "error"]);
  } finally {
    await runtime.close();
  }
}, 180_000);
