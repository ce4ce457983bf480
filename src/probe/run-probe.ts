/**
 * Runs a scenario through the run command's own pipeline (openRuntime +
 * runTurn, role `probe`), once per model and cache setting, each in a fresh
 * store and (with the emulator) a fresh in-memory emulator cache, and returns
 * every ledger row of the run with the scenario's annotations.
 *
 * With the emulator the clock is the scenario's: request k is sent at a fixed
 * emulated instant (start + k × pace + clock advances), so TTLs and
 * per-minute routing give the same outcome on every run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Message, OutputSchema, ToolDefinition } from "../context/types.ts";
import { CachetError, isCachetError } from "../errors.ts";
import type { JsonEvent, OutputSink } from "../run/output.ts";
import { openRuntime, type Runtime } from "../run/runtime.ts";
import { runTurn } from "../run/turn.ts";
import type { CacheRules } from "../plugin/provider.ts";
import type { LedgerRow } from "../session/types.ts";
import { DEFAULT_CACHE_RULES } from "../wire/divergence.ts";
import type { Scenario, ScenarioStep } from "./scenario.ts";

/** Environment variables of the emulator the probe drives (see src/emulator/index.ts). */
const CLOCK_ENV = "CACHET_EMULATOR_CLOCK_OFFSET_MS";
const SCRIPT_ENV = "CACHET_EMULATOR_SCRIPT";

/** Emulated instant of a scenario's first request: fixed, so runs repeat exactly. */
export const PROBE_EPOCH_MS = Date.UTC(2026, 0, 1);

/** Options of {@link runProbe}. */
export interface ProbeOptions {
  /** Send every request to an in-process emulator (fresh cache state per variant). */
  emulate: boolean;
  /** Models to run instead of the scenario's. */
  models?: string[];
  /** Cache settings to run instead of the scenario's. */
  cache?: ("auto" | "off")[];
  /** Base environment (default `process.env`); never mutated. */
  env?: Record<string, string | undefined>;
  /** Injected fetch (tests). */
  fetch?: typeof fetch;
  /** One-line diagnostics for stderr. */
  notice?: (message: string) => void;
  /** The pipeline's own per-turn notices (prefix changes, retries); the report already shows prefix changes. */
  turnNotice?: (message: string) => void;
}

/** A ledger row of a probe run with what the scenario knows about it. */
export interface ProbeRow {
  row: LedgerRow;
  /** Emulated (or, without the emulator, scenario) time of the call, ms since the epoch. */
  at: number;
  /** The deliberate change that preceded the call: "system changed", "clock +6m", ...; null for none. */
  change: string | null;
  /** Why the call's answer was not usable (an invalid structured answer), else null. */
  problem: string | null;
}

/** The rows of one model and cache setting. */
export interface ProbeVariantRun {
  model: string;
  cache: "auto" | "off";
  rows: ProbeRow[];
  /** Parent session of each forked session id. */
  parents: Map<string, string>;
  /** Cache rules of a provider's model, from its provider spec (DEFAULT_CACHE_RULES when it declares none). */
  rulesOf(provider: string, model: string): CacheRules;
}

/**
 * Runs `scenario` once per model × cache setting, sequentially.
 * @throws CachetError MISSING_ARGUMENT when neither the scenario nor `options.models` names a model;
 *   CachetError naming the step for a scenario that cannot run (a
 *   `tool_result` with no tool call to answer); the run's own errors
 *   (provider, plugin, config) with the step prefixed.
 */
export async function runProbe(scenario: Scenario, options: ProbeOptions): Promise<ProbeVariantRun[]> {
  const models = options.models?.length ? options.models : scenario.models;
  if (models.length === 0) {
    throw new CachetError("MISSING_ARGUMENT", `scenario ${scenario.name} names no models and no --model was given`, { hint: 'pass --model provider/model, or add "models": ["provider/model"] to the scenario' });
  }
  const caches = options.cache?.length ? options.cache : scenario.cache;
  if (!options.emulate && scenario.answers.length > 0) options.notice?.("the scenario's answers are used only with --emulate; the real model answers instead");
  const runs: ProbeVariantRun[] = [];
  for (const model of models) for (const cache of caches) runs.push(await runVariant(scenario, model, cache, options));
  return runs;
}

interface Cursor {
  sessionId: string | undefined;
  /** The next turn forks the current session (first turn inside a `fork` step). */
  fork: boolean;
  /** Role of the calls of the current fork, overriding the steps' own. */
  role: string | undefined;
  system: string[];
  tools: ToolDefinition[];
  schema: OutputSchema | undefined;
  overlay: string | undefined;
  /** Scenario time elapsed, ms. */
  clock: number;
  /** Clock advances since the previous turn, for the next call's annotation. */
  advanced: string[];
  /** `{{i}}` of the innermost repeat. */
  vars: Record<string, string>;
}

async function runVariant(scenario: Scenario, model: string, cache: "auto" | "off", options: ProbeOptions): Promise<ProbeVariantRun> {
  const dir = mkdtempSync(join(tmpdir(), "cachet-probe-"));
  const env: Record<string, string | undefined> = { ...(options.env ?? process.env) };
  if (options.emulate && scenario.answers.length > 0) {
    const script = join(dir, "answers.json");
    writeFileSync(script, JSON.stringify(scenario.answers));
    env[SCRIPT_ENV] = script;
  }
  try {
    const runtime = await openRuntime(
      { emulate: options.emulate, env, storePath: join(dir, "probe.db"), emulatorStatePath: null, ...(options.fetch ? { fetch: options.fetch } : {}) },
      options.notice,
    );
    try {
      const rows: ProbeRow[] = [];
      const cursor: Cursor = { sessionId: undefined, fork: false, role: undefined, system: scenario.system, tools: scenario.tools, schema: scenario.schema, overlay: undefined, clock: 0, advanced: [], vars: {} };
      const run: Run = { scenario, model, cache, options, runtime, env, rows, seen: new Set(), turns: 0 };
      await runSteps(run, scenario.steps, cursor);
      const parents = new Map<string, string>();
      for (const session of runtime.store.listSessions()) if (session.parentId) parents.set(session.id, session.parentId);
      const host = runtime.host;
      return { model, cache, rows, parents, rulesOf: (provider, m) => host.providers.get(provider)?.value.cacheRules?.(m) ?? DEFAULT_CACHE_RULES };
    } finally {
      await runtime.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Run {
  scenario: Scenario;
  model: string;
  cache: "auto" | "off";
  options: ProbeOptions;
  runtime: Runtime;
  env: Record<string, string | undefined>;
  rows: ProbeRow[];
  seen: Set<string>;
  turns: number;
}

async function runSteps(run: Run, steps: ScenarioStep[], cursor: Cursor): Promise<void> {
  for (const step of steps) {
    switch (step.kind) {
      case "user":
        await turn(run, cursor, step.at, { prompt: fill(step.prompt, cursor), role: step.role });
        break;
      case "tool_result": {
        const id = step.id === "last" ? lastToolCall(run, cursor, step.at) : step.id;
        await turn(run, cursor, step.at, {
          prompt: step.prompt === undefined ? undefined : fill(step.prompt, cursor),
          toolResults: [{ id, content: fill(step.content, cursor), ...(step.isError ? { isError: true } : {}) }],
          role: step.role,
        });
        break;
      }
      case "overlay":
        cursor.overlay = step.text === undefined ? undefined : fill(step.text, cursor);
        break;
      case "system":
        cursor.system = step.system.map((part) => fill(part, cursor));
        break;
      case "tools":
        cursor.tools = step.tools;
        break;
      case "schema":
        cursor.schema = step.schema;
        break;
      case "advance_clock":
        cursor.clock += step.ms;
        cursor.advanced.push(step.text);
        if (!run.options.emulate) {
          run.options.notice?.(`${step.at}: waiting ${step.text} for real (advance_clock shifts only the emulator's clock)`);
          await Bun.sleep(step.ms);
        }
        break;
      case "fork": {
        // The fork's calls branch from the current session; afterwards the scenario goes on in the parent.
        if (cursor.sessionId === undefined) throw new CachetError("INPUT_INVALID", `scenario ${run.scenario.name}: ${step.at}: nothing to fork yet; put a user step first`);
        const inner: Cursor = { ...cursor, fork: true, role: step.role ?? cursor.role, advanced: [...cursor.advanced] };
        await runSteps(run, step.steps, inner);
        cursor.clock = inner.clock;
        cursor.advanced = inner.fork ? inner.advanced : [];
        break;
      }
      case "repeat": {
        const outer = cursor.vars;
        for (let i = 1; i <= step.times; i++) {
          cursor.vars = { ...outer, i: String(i) };
          await runSteps(run, step.steps, cursor);
        }
        cursor.vars = outer;
        break;
      }
    }
  }
}

interface TurnInput {
  prompt: string | undefined;
  toolResults?: { id: string; content: string; isError?: boolean }[];
  role: string;
}

/** The pause between two calls of a scenario on the emulated clock. */
const PACE_MS = 5_000;

async function turn(run: Run, cursor: Cursor, at: string, input: TurnInput): Promise<void> {
  if (run.turns > 0) cursor.clock += PACE_MS;
  run.turns++;
  const now = PROBE_EPOCH_MS + cursor.clock;
  if (run.options.emulate) run.env[CLOCK_ENV] = String(now - Date.now());
  const since = Date.now();
  const sink = collectingSink();
  const sessionEvent = () => sink.events.find((e): e is Extract<JsonEvent, { type: "session" }> => e.type === "session");
  let problem: string | null = null;
  let requestId: string | undefined;
  const compactionsBefore = cursor.sessionId === undefined || cursor.fork ? 0 : run.runtime.store.compactions(cursor.sessionId).length;
  try {
    const result = await runTurn(run.runtime, {
      prompt: input.prompt,
      ...(input.toolResults ? { toolResults: input.toolResults } : {}),
      model: run.model,
      system: cursor.system,
      tools: cursor.tools,
      ...(cursor.schema ? { schema: cursor.schema } : {}),
      ...(cursor.overlay !== undefined ? { overlay: cursor.overlay } : {}),
      session: cursor.sessionId === undefined ? { mode: "new" } : { mode: "named", ref: cursor.sessionId },
      fork: cursor.fork,
      generation: { stream: true, providerOptions: {} },
      cache: { mode: run.cache, ttl: run.runtime.config.cache?.ttl ?? "5m" },
      role: cursor.role ?? input.role,
      idleMs: 120_000,
      retries: 2,
      sink,
      notice: (m) => run.options.turnNotice?.(`${at}: ${m}`),
    });
    cursor.sessionId = result.sessionId;
    requestId = result.requestId;
  } catch (error) {
    // An answer that fails the output schema is a fact about the call, not a reason to stop the experiment.
    if (!isCachetError(error) || error.code !== "ANSWER_INVALID") throw atStep(error, run, at);
    problem = error.message;
    cursor.sessionId = sessionEvent()?.id ?? cursor.sessionId;
    requestId = sink.events.find((e): e is Extract<JsonEvent, { type: "cost" }> => e.type === "cost")?.request_id;
  }
  cursor.fork = false;
  const prefixChange = sessionEvent()?.prefix_change;
  // A compaction before this call rewrote the request after Z0 + Z1 on purpose.
  const compacted = cursor.sessionId === undefined ? 0 : run.runtime.store.compactions(cursor.sessionId).length - compactionsBefore;
  const changes = [...(prefixChange ? [prefixChange] : []), ...(compacted > 0 ? [compacted === 1 ? "compacted" : `compacted ×${compacted}`] : []), ...cursor.advanced.map((d) => `clock +${d}`)];
  cursor.advanced = [];
  // Every call of the turn counts, auxiliary ones (other roles, other sessions) included.
  for (const row of run.runtime.store.ledger({ since })) {
    if (run.seen.has(row.id)) continue;
    run.seen.add(row.id);
    const main = row.id === requestId;
    run.rows.push({ row, at: now, change: main && changes.length ? changes.join("; ") : null, problem: main ? problem : null });
  }
}

function lastToolCall(run: Run, cursor: Cursor, at: string): string {
  const last: Message | undefined = cursor.sessionId === undefined ? undefined : run.runtime.store.loadSession(cursor.sessionId).messages.at(-1);
  const call = last?.role === "assistant" ? last.content.findLast((b) => b.type === "tool_use") : undefined;
  if (!call || call.type !== "tool_use") {
    throw new CachetError("INPUT_INVALID", `scenario ${run.scenario.name}: ${at}: tool_result "last": the previous answer made no tool call`, {
      hint: run.options.emulate ? "script one in the scenario's answers (tool_calls) for this turn" : "the model answered without a tool call; adjust the prompt or the tools",
    });
  }
  return call.id;
}

/** Replaces `{{name}}` with the repeat's variables (`{{i}}`: 1-based iteration); other text is left as it is. */
function fill(text: string, cursor: Cursor): string {
  return text.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => cursor.vars[name] ?? whole);
}

function atStep(error: unknown, run: Run, at: string): unknown {
  if (!isCachetError(error)) return error;
  const wrapped = new CachetError(error.code, `probe ${run.scenario.name} (${run.model}, cache ${run.cache}) at ${at}: ${error.message}`, {
    cause: error,
    exitCode: error.exitCode,
    ...(error.hint ? { hint: error.hint } : {}),
  });
  return wrapped;
}

function collectingSink(): OutputSink & { events: JsonEvent[] } {
  const events: JsonEvent[] = [];
  return {
    events,
    text() {},
    event(event) {
      events.push(event);
    },
    async end() {},
  };
}
