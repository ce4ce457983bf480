/**
 * The run command's body, callable from tests: runs one turn in the runtime
 * opened while stdin was read (prepareRunCommand), prints the cost line, and
 * maps failures to exit codes. SIGINT or
 * SIGTERM (the `interrupt` signal) aborts whatever the turn waits for; the
 * partial answer is stored and marked incomplete. A turn stored whole waits
 * here, its handlers still installed, until stdout took the answer, so a
 * signal meanwhile says what was kept too.
 */
import type { OutputSchema, ToolDefinition } from "../context/types.ts";
import { EXIT, isCachetError } from "../errors.ts";
import { getLogLevel, info, warn } from "../log.ts";
import { interruptedAt, interruptedBeforeSend, interruptExitCode, untilInterrupted } from "./interrupt.ts";
import { stdout, stdoutDrained } from "../stdout.ts";
import { jsonSink, textSink, type JsonEvent, type OutputSink } from "./output.ts";
import { prepareRun, type PreparedRun } from "./prepare.ts";
import type { Runtime } from "./runtime.ts";
import type { StdinResult } from "./stdin.ts";
import { needsStoredSession } from "./stages/session.ts";
import { runTurn, type SessionChoice } from "./turn.ts";
import { edges } from "../edges.ts";

/** Parsed run flags. */
export interface RunCommandOptions {
  prompt: string | undefined;
  /** What stdin gave; after a time-out it reports bytes that came late. */
  stdin: Pick<StdinResult, "timedOut" | "settleLate">;
  /** Aborted by SIGINT / SIGTERM (see interrupt.ts). */
  interrupt: AbortSignal;
  /** `--tool-result` values resolved to their contents. */
  toolResults?: { id: string; content: string }[];
  /** `--drop-pending`. */
  dropPending?: boolean;
  model?: string;
  system?: string[];
  tools?: ToolDefinition[];
  schemaArg?: string;
  overlay?: string;
  session: SessionChoice;
  fork: boolean;
  maxTokens?: number;
  temperature?: number;
  stream: boolean;
  baseUrl?: string;
  providerOptions: Record<string, unknown>;
  cacheMode?: "auto" | "off";
  cacheTtl?: "5m" | "1h";
  /** Longest wait for progress, ms; 0: no limit. */
  idleMs: number;
  /** Longest hidden thinking (a thinking block open, only pings arriving), ms; 0: no limit. */
  thinkingMs: number;
  /** Longest plugin hook call, ms; undefined: config `hook_timeout`, else the default. */
  hookMs?: number;
  retries: number;
  json: boolean;
  emulate: boolean;
  quiet: boolean;
  /** `--max-cost USD`: the most this run's calls may cost together. */
  maxCostUsd?: number;
  /** `--allow-unpriced`: under a limit, send calls whose price is unknown, uncounted. */
  allowUnpriced?: boolean;
  /** `--no-store` or `CACHET_NO_STORE=1`: write nothing to the state directory. */
  noStore?: boolean;
  /** The runtime {@link prepareRunCommand} started opening from these flags; runCommand closes it. */
  prepared: PreparedRun;
  /** False with `--no-compact`. */
  compact?: boolean;
}

/**
 * Runs one turn and returns the process exit code. Errors before the turn
 * started are thrown (the top level prints them); errors after it started
 * are reported on the sink and mapped to an exit code, with the answer so
 * far already on stdout and in the store.
 */
export async function runCommand(o: RunCommandOptions): Promise<number> {
  if (o.stdin.timedOut) void info("stdin stayed open with no data; going on with the PROMPT alone (pass `-` or --stdin wait to wait for stdin, --stdin skip to ignore it)");
  const late = lateStdinCheck(o.stdin);
  let code: number | undefined;
  try {
    code = await runOne(o, late);
  } finally {
    // Stdin left behind after the first-byte wait: bytes that came since were dropped, so say it even with --quiet.
    if (await late.settle()) {
      edges().writeStderr(`cachet: ${lateStdin(o.noStore).message}\n  hint: ${LATE_STDIN_HINT}\n`);
      if (code === EXIT.ok) code = EXIT.lateInput;
    }
  }
  return code;
}

const LATE_STDIN_HINT = "pass `-` among the prompt words or --stdin wait to wait for a slow producer, --stdin skip to ignore stdin";

/** The late-stdin message; under --no-store the turn went without the data but was not stored. */
function lateStdin(noStore: boolean | undefined): { message: string; hint: string } {
  return {
    message: `data arrived on stdin after cachet went on without it; it was NOT sent (${noStore ? "the turn went without it; nothing was stored: --no-store" : "the turn is stored without it"})`,
    hint: LATE_STDIN_HINT,
  };
}

/** Asks stdin once, at the turn's end, whether bytes came after cachet went on without them. */
interface LateStdinCheck {
  /** Stops listening (the first call) and says whether bytes came. */
  settle(): Promise<boolean>;
}

function lateStdinCheck(stdin: RunCommandOptions["stdin"]): LateStdinCheck {
  let settled: Promise<boolean> | undefined;
  return {
    settle: () =>
      (settled ??= stdin.timedOut
        ? // A non-blocking peek: one turn of the event loop through its I/O poll (a due timer makes the poll not wait),
          // so bytes already waiting in the pipe reach the pending read before it is cancelled. setImmediate runs before that poll.
          new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => stdin.settleLate())
        : Promise.resolve(false)),
  };
}

/**
 * A `--json` sink that holds the `done` line back until the turn ended, so
 * stdin that came late gets its `error` line before `done`, as any failure's
 * (README: a failing --json run prints an error line whatever the exit code).
 */
function jsonSinkCheckingLateStdin(late: LateStdinCheck, noStore: boolean | undefined): OutputSink & { flush(): Promise<void> } {
  const sink = jsonSink();
  let done: JsonEvent | undefined;
  let failed = false;
  return {
    text: (delta) => sink.text(delta),
    event(event) {
      if (event.type === "error") failed = true;
      if (event.type === "done") done = event;
      else sink.event(event);
    },
    end: () => sink.end(),
    async flush() {
      if (done === undefined) return;
      if (!failed && (await late.settle())) sink.event({ type: "error", code: "STDIN_LATE", ...lateStdin(noStore), incomplete: false });
      sink.event(done);
      done = undefined;
    },
  };
}

/**
 * Starts opening the run's runtime, and the early work of its turn (src/run/prepare.ts),
 * from the flags alone: call it before reading stdin, then pass the result to {@link runCommand}.
 */
export function prepareRunCommand(o: Pick<RunCommandOptions, "emulate" | "hookMs" | "interrupt" | "noStore" | "maxCostUsd" | "allowUnpriced" | "model" | "baseUrl" | "session" | "fork">): PreparedRun {
  return prepareRun(
    {
      emulate: o.emulate,
      ...(o.hookMs !== undefined ? { hookTimeoutMs: o.hookMs } : {}),
      signal: o.interrupt,
      noStore: o.noStore === true,
      storedSessionOnly: needsStoredSession(o),
      budget: { ...(o.maxCostUsd !== undefined ? { maxCostUsd: o.maxCostUsd } : {}), allowUnpriced: o.allowUnpriced === true },
    },
    { ...(o.model ? { model: o.model } : {}), ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}), session: o.session, fork: o.fork },
    (m) => void warn(m),
  );
}

/**
 * Says what an interrupted run kept and returns its exit code. The stage the
 * signal stopped names it in an INTERRUPTED error of its own; the signal's
 * bare reason (a lease wait, a hook, the runtime still opening) comes from
 * before the request was sent.
 */
function reportInterrupt(signal: AbortSignal, error: unknown): number {
  const stopped = isCachetError(error) && error.code === "INTERRUPTED" && error !== signal.reason ? error : interruptedBeforeSend(signal);
  if (getLogLevel() !== "quiet") edges().writeStderr(`cachet: ${stopped.message}\n${stopped.hint ? `  hint: ${stopped.hint}\n` : ""}`);
  return interruptExitCode(signal);
}

async function runOne(o: RunCommandOptions, late: LateStdinCheck): Promise<number> {
  let schema: OutputSchema | undefined;
  if (o.schemaArg !== undefined) {
    const { resolveSchemaArg } = await import("../schema/index.ts");
    try {
      // A schema file that is a pipe (`--schema <(…)`) may take its time: a signal stops its read, as stdin's.
      schema = await untilInterrupted(resolveSchemaArg(o.schemaArg), o.interrupt);
    } catch (error) {
      if (o.interrupt.aborted) {
        void o.prepared.discard();
        return reportInterrupt(o.interrupt, error);
      }
      await o.prepared.discard();
      throw error;
    }
  }
  let runtime: Runtime;
  try {
    // Opening the runtime (plugins, the store, --emulate's emulator) is not stopped by a signal, but the run is.
    runtime = await untilInterrupted(o.prepared.runtime, o.interrupt);
  } catch (error) {
    if (!o.interrupt.aborted) throw error;
    void o.prepared.discard();
    return reportInterrupt(o.interrupt, error);
  }
  const json = o.json ? jsonSinkCheckingLateStdin(late, o.noStore) : undefined;
  const sink = json ?? textSink(stdout, (line) => (o.quiet ? undefined : edges().writeStderr(`${line}\n`)));
  let sessionId: string;
  try {
    const result = await runTurn(runtime, {
      prompt: o.prompt,
      ...(o.toolResults?.length ? { toolResults: o.toolResults } : {}),
      ...(o.dropPending ? { dropPending: true } : {}),
      ...(o.model ? { model: o.model } : {}),
      ...(o.system ? { system: o.system } : {}),
      ...(o.tools ? { tools: o.tools } : {}),
      ...(schema ? { schema } : {}),
      ...(o.overlay !== undefined ? { overlay: o.overlay } : {}),
      session: o.session,
      fork: o.fork,
      generation: {
        stream: o.stream,
        providerOptions: o.providerOptions,
        ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
        ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
      },
      cache: { ...(o.cacheMode ? { mode: o.cacheMode } : {}), ...(o.cacheTtl ? { ttl: o.cacheTtl } : {}) },
      role: "main",
      ...(o.compact === false ? { compact: false } : {}),
      ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
      idleMs: o.idleMs,
      thinkingMs: o.thinkingMs,
      retries: o.retries,
      sink,
      signal: o.interrupt,
      notice: (m) => void warn(m),
    });
    if (result.answer !== undefined && !o.json) stdout().write(`${JSON.stringify(result.answer, null, 2)}\n`);
    if (!o.json && !o.quiet && getLogLevel() !== "quiet" && edges().isTerminal(2)) {
      const { formatCostLine } = await import("../meter/index.ts");
      edges().writeStderr(`${formatCostLine(result.row)}\n`);
    }
    sessionId = result.sessionId;
  } catch (error) {
    if (o.interrupt.aborted) return reportInterrupt(o.interrupt, error);
    // The provider's contract is checked as the request is rendered, where the schema's file is not known.
    if (o.schemaArg !== undefined) throw (await import("../schema/index.ts")).withSchemaSource(error, o.schemaArg);
    throw error;
  } finally {
    await json?.flush();
    await runtime.close();
    if (runtime.config.export?.otlp_url !== undefined && !runtime.ephemeral) {
      // Off the answer's path: a detached exporter, never awaited (src/telemetry/export-in-background.ts).
      const { exportInBackground } = await import("../telemetry/export-in-background.ts");
      exportInBackground(runtime.config, runtime.env, (m) => void warn(m));
    }
  }
  // The store is closed (its session lease released) before this wait, which lasts as long as stdout's reader makes it.
  return answerWritten(o.interrupt, runtime.ephemeral ? undefined : sessionId);
}

/**
 * Waits until stdout took the whole answer: the turn is complete and stored
 * by then, but a reader that stopped reading (a full pipe) holds the writes.
 * A SIGINT or SIGTERM meanwhile ends the wait with the interrupted line
 * saying the answer is stored whole and how to read it (README "Exit codes").
 * The exit that follows does not wait for stdout, nor for stderr: a write to
 * a full pipe is queued, not waited for, in the process's own edges and the
 * daemon's client alike.
 * @param sessionId the session the answer is stored in; undefined under --no-store (nothing was stored)
 * @returns EXIT.ok once stdout took everything (or failed: reported at the command's end, src/stdout.ts), else 130/143
 */
async function answerWritten(signal: AbortSignal, sessionId: string | undefined): Promise<number> {
  let written = false;
  // Set before the race settles when stdout had already taken everything, whether or not a signal came too.
  const drained = stdoutDrained().then(() => {
    written = true;
  });
  let onAbort = () => {};
  const interrupted = new Promise<void>((resolve) => {
    onAbort = resolve;
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  await Promise.race([drained, interrupted]);
  signal.removeEventListener("abort", onAbort);
  // Through the daemon a piece stdout takes at once is acknowledged a round trip later: asked, not assumed stuck.
  if (!written && (await edges().stdoutTaken?.())) written = true;
  // A signal that came once stdout had taken everything stops nothing: the command ends as it would have.
  if (written) return EXIT.ok;
  const kept = sessionId === undefined ? "the answer came whole but nothing was stored (--no-store), so what stdout did not take is lost" : `the whole answer is stored (\`cachet export ${sessionId}\` prints it)`;
  return reportInterrupt(signal, interruptedAt(signal, `while writing the answer to stdout, which had not taken all of it: ${kept}`));
}
