/**
 * The run command's body, callable from tests: opens a runtime, runs one
 * turn, prints the cost line, and maps failures to exit codes. Ctrl-C aborts
 * the stream; the partial answer is stored and marked incomplete.
 */
import type { OutputSchema, ToolDefinition } from "../context/types.ts";
import { EXIT, isCachetError } from "../errors.ts";
import { getLogLevel, info, warn } from "../log.ts";
import { jsonSink, textSink } from "./output.ts";
import { openRuntime } from "./runtime.ts";
import { runTurn, type SessionChoice } from "./turn.ts";

/** Parsed run flags. */
export interface RunCommandOptions {
  prompt: string | undefined;
  stdinTimedOut: boolean;
  toolResult?: { id: string; content: string };
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
  idleMs: number;
  retries: number;
  json: boolean;
  emulate: boolean;
  quiet: boolean;
}

/**
 * Runs one turn and returns the process exit code. Errors before the turn
 * started are thrown (the top level prints them); errors after it started
 * are reported on the sink and mapped to an exit code, with the answer so
 * far already on stdout and in the store.
 */
export async function runCommand(o: RunCommandOptions): Promise<number> {
  if (o.stdinTimedOut) void info("stdin stayed open with no data for 2 s; going on with the PROMPT argument alone (pass `-` to wait for stdin)");
  let schema: OutputSchema | undefined;
  if (o.schemaArg !== undefined) {
    const { resolveSchemaArg } = await import("../schema/index.ts");
    schema = await resolveSchemaArg(o.schemaArg);
  }
  const runtime = await openRuntime({ emulate: o.emulate }, (m) => void warn(m));
  const sink = o.json ? jsonSink() : textSink(process.stdout, (line) => (o.quiet ? undefined : void process.stderr.write(`${line}\n`)));
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort();
  process.on("SIGINT", onSigint);
  process.on("SIGTERM", onSigint);
  try {
    const result = await runTurn(runtime, {
      prompt: o.prompt,
      ...(o.toolResult ? { toolResult: o.toolResult } : {}),
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
      cache: { mode: o.cacheMode ?? runtime.config.cache?.mode ?? "auto", ttl: o.cacheTtl ?? runtime.config.cache?.ttl ?? "5m" },
      role: "main",
      ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
      idleMs: o.idleMs,
      retries: o.retries,
      sink,
      signal: interrupt.signal,
      notice: (m) => void warn(m),
    });
    if (result.answer !== undefined && !o.json) process.stdout.write(`${JSON.stringify(result.answer, null, 2)}\n`);
    if (!o.json && !o.quiet && getLogLevel() !== "quiet" && process.stderr.isTTY) {
      const { formatCostLine } = await import("../meter/index.ts");
      process.stderr.write(`${formatCostLine(result.row)}\n`);
    }
    return EXIT.ok;
  } catch (error) {
    if (interrupt.signal.aborted) {
      // One line, so a script's log shows why the answer stops short and that it was kept.
      if (getLogLevel() !== "quiet") process.stderr.write(`cachet: ${isCachetError(error) && error.code === "INTERRUPTED" ? error.message : "interrupted"}\n`);
      return EXIT.interrupted;
    }
    throw error;
  } finally {
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigint);
    await runtime.close();
    if (runtime.config.export?.otlp_url !== undefined) {
      // Off the answer's path: a detached exporter, never awaited (src/telemetry/export-in-background.ts).
      const { exportInBackground } = await import("../telemetry/export-in-background.ts");
      exportInBackground(runtime.config, runtime.env, (m) => void warn(m));
    }
  }
}
