/**
 * A 20-turn session under `budget.session_usd`, through the real turn
 * pipeline against the in-process emulator: every turn is forecast before it
 * is sent, and the session stops exactly at the first turn whose forecast
 * would cross the limit, with nothing of that turn sent or stored.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isCachetError } from "../../src/errors.ts";
import type { OutputSink } from "../../src/run/output.ts";
import { openRuntime } from "../../src/run/runtime.ts";
import { runTurn, type TurnOptions } from "../../src/run/turn.ts";
import { variedText } from "../e2e/session-kit.ts";

const home = mkdtempSync(join(tmpdir(), "cachet-budget-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

const sink: OutputSink = { text() {}, event() {}, end: async () => {} };

/** A main turn of the session (or a new one) with `maxTokens` of output. */
function turnOptions(prompt: string, sessionId: string | undefined, maxTokens: number): TurnOptions {
  return {
    prompt,
    model: "anthropic/claude-sonnet-4-6",
    session: sessionId ? { mode: "named", ref: sessionId } : { mode: "new" },
    generation: { stream: true, providerOptions: {}, maxTokens },
    cache: { mode: "auto", ttl: "5m" },
    role: "main",
    idleMs: 30_000,
    retries: 0,
    sink,
  };
}

test("a 20-turn session stops at the turn whose forecast crosses budget.session_usd", async () => {
  // Each turn's forecast is ~$0.0151 (max_tokens 1,000 at $15/M plus the prompt); actual turns cost ~$0.0005.
  const limit = 0.03;
  writeFileSync(join(home, "config.toml"), `[budget]\nsession_usd = ${limit}\n`);
  const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: home }, budget: { allowUnpriced: false } });
  let sessionId: string | undefined;
  const spentBefore: number[] = [];
  let refusal: { turn: number; message: string; code: string } | undefined;
  try {
    for (let turn = 1; turn <= 20; turn++) {
      const spent = sessionId ? runtime.store.requests(sessionId).reduce((sum, row) => sum + (row.costUsd ?? 0), 0) : 0;
      spentBefore.push(spent);
      try {
        const result = await runTurn(runtime, turnOptions(`turn ${turn}: go on with the plan, step ${turn}`, sessionId, 1_000));
        sessionId = result.sessionId;
      } catch (error) {
        if (!isCachetError(error)) throw error;
        refusal = { turn, message: error.message, code: error.code };
        break;
      }
    }
    expect(refusal).toBeDefined();
    const { turn, message, code } = refusal!;
    expect(code).toBe("BUDGET_EXCEEDED");
    const [, spentText, forecastText] = /spent \$([\d.]+) in this session, this call's worst-case forecast \$([\d.]+)/.exec(message)!;
    const spent = Number(spentText);
    const forecast = Number(forecastText);
    // The refused turn is the first whose forecast crosses: spent + forecast > limit, and the turn before it fit.
    expect(spent + forecast).toBeGreaterThan(limit);
    expect(spent).toBeCloseTo(spentBefore[turn - 1]!, 5);
    expect(spentBefore[turn - 2]! + forecast).toBeLessThanOrEqual(limit);
    expect(turn).toBeGreaterThan(2);
    expect(turn).toBeLessThan(20);
    // Nothing of the refused turn is stored: turn - 1 requests and 2 messages per turn.
    expect(runtime.store.requests(sessionId!)).toHaveLength(turn - 1);
    expect(runtime.store.loadSession(sessionId!).messages).toHaveLength(2 * (turn - 1));
  } finally {
    await runtime.close();
  }
}, 120_000);

test("a compaction's summary call is budgeted like the main call: reserved before it is sent, settled to its cost", async () => {
  const own = mkdtempSync(join(tmpdir(), "cachet-budget-aux-"));
  try {
    writeFileSync(join(own, "config.toml"), "[compaction]\ntrigger_tokens = 9000\ntail_tokens = 800\n");
    const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: own }, budget: { maxCostUsd: 5, allowUnpriced: false } });
    try {
      let sessionId: string | undefined;
      for (let turn = 1; turn <= 16; turn++) {
        const result = await runTurn(runtime, turnOptions(`turn ${turn}: ${variedText(20, turn)}`, sessionId, 200));
        sessionId = result.sessionId;
      }
      const rows = runtime.store.requests(sessionId!);
      const summaries = rows.filter((r) => r.role === "compaction");
      expect(summaries.length).toBeGreaterThanOrEqual(1);
      const spend = runtime.store.database.query("SELECT amount_usd AS amount, state FROM spend WHERE session_id = ?").all(sessionId!) as { amount: number; state: string }[];
      // One settled reservation per call, main and summary alike, each at the call's cost.
      expect(spend).toHaveLength(rows.length);
      expect(spend.every((s) => s.state === "settled")).toBe(true);
      expect(spend.map((s) => s.amount).sort()).toEqual(rows.map((r) => r.costUsd ?? -1).sort());
    } finally {
      await runtime.close();
    }
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
}, 120_000);
