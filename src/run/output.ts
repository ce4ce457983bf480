/**
 * What the run command writes on stdout: the answer text as it streams, or
 * JSON lines with `--json`. Nothing else ever goes to stdout.
 */
import { edges } from "../edges.ts";
import { printable } from "../printable.ts";
import { stdout as defaultStdout } from "../stdout.ts";
import { storableRaw } from "../plugin/raw-token-counts.ts";
import { usageJson, type Usage, type UsageJson } from "../plugin/usage.ts";

/** One `--json` line. Every line is an object with a `type`. */
export type JsonEvent =
  | { type: "session"; id: string; name: string | null; model: string; forked_from?: string; prefix_version: number; prefix_change?: string }
  | { type: "text"; delta: string }
  | { type: "tool_call"; id: string; name: string; arguments: string }
  | { type: "image"; media_type: string; data: string }
  | { type: "provider_block"; block: Record<string, unknown> }
  | ({ type: "usage"; request_id: string; raw: unknown } & UsageJson)
  | { type: "cost"; request_id: string; cost_usd: number | null; provider_cost_usd?: number; reason?: string }
  | {
      type: "compaction";
      id: string;
      reason: string;
      summarized: { messages: number; first: string; last: string };
      kept: { messages: number; first: string | null };
      summary_source: string;
      tokens_before: number;
      tokens_after: number;
      calls: CompactionCall[];
      cost_usd: number | null;
    }
  | { type: "answer"; value: unknown }
  | { type: "error"; code: string; message: string; hint?: string; incomplete?: boolean }
  /** `hint`: for an answer ending in tool calls, the `--tool-result` flags that answer them all (src/run/tool-result-hint.ts). */
  | { type: "done"; session: string; request_id: string | null; finish_reason: string | null; incomplete: boolean; hint?: string };

/** A call a compaction made (ledger role `compaction`): `summary`, or `boundary` (DeepSeek's prefix unit at the end of Z1). */
export interface CompactionCall {
  request_id: string;
  purpose: "summary" | "boundary";
  /** USD; null when unpriced. */
  cost_usd: number | null;
}

/** Where answer text and events go. */
export interface OutputSink {
  /** A piece of answer text. */
  text(delta: string): void;
  /** A structured event; ignored in text mode except where noted. */
  event(event: JsonEvent): void;
  /** Ends the output (text mode: a final newline if the answer lacked one). */
  end(): Promise<void>;
}

/** What the sinks write to: src/stdout.ts, which stops quietly once the reader closed the pipe (`| head`) and records any other failure. */
type Out = { write(chunk: string): unknown };

/**
 * Plain answer text on stdout, streamed as it arrives. A tool call is not
 * answer text: it is named on `diagnostics` (stderr unless `--quiet`) with
 * its id, and after the last one the flags that answer them all; so are an image the model output
 * (media type and size) and a server tool's call (name and input).
 */
export function textSink(stdout: () => Out = defaultStdout, diagnostics: (line: string) => void = (line) => edges().writeStderr(`${line}\n`)): OutputSink {
  const out = { write: (chunk: string) => void stdout().write(chunk) };
  let last = "";
  let wrote = false;
  return {
    text(delta) {
      if (delta === "") return;
      out.write(delta);
      last = delta;
      wrote = true;
    },
    event(event) {
      // Parallel calls are answered together: the flags that answer them all come once, with `done`.
      if (event.type === "tool_call") diagnostics(printable(`tool call ${event.name} ${event.arguments} (id ${event.id})`));
      if (event.type === "done" && event.hint) diagnostics(printable(event.hint));
      // Not text: an image is named with its size (its data is in --json output and `cachet export`), a server tool's call with its input.
      if (event.type === "image") diagnostics(`image ${printable(event.media_type)}, ${Buffer.from(event.data, "base64").length} bytes (its data: --json or cachet export)`);
      if (event.type === "provider_block" && event.block.type === "server_tool_use") diagnostics(printable(`server tool ${String(event.block.name)} ${JSON.stringify(event.block.input ?? {})}`));
      if (event.type === "provider_block" && event.block.type === "compaction") diagnostics("the provider compacted the conversation: it reads its summary instead of the earlier messages from now on (the session keeps them all)");
    },
    async end() {
      if (wrote && !last.endsWith("\n")) out.write("\n");
    },
  };
}

/** JSON lines on stdout, one per event; text deltas become `text` events. */
export function jsonSink(stdout: () => Out = defaultStdout): OutputSink {
  const out = { write: (chunk: string) => void stdout().write(chunk) };
  return {
    text(delta) {
      if (delta !== "") out.write(`${JSON.stringify({ type: "text", delta })}\n`);
    },
    event(event) {
      if (event.type === "error") errorLineWritten = true;
      out.write(`${JSON.stringify(event)}\n`);
    },
    async end() {},
  };
}

let errorLineWritten = false;

/**
 * Whether a `--json` sink of this command wrote an `error` line: the top
 * level (src/cli/dispatch.ts) writes one for a failure that came before the
 * turn (a usage or input error), never a second.
 */
export function jsonErrorLineWritten(): boolean {
  return errorLineWritten;
}

/** Forgets the previous command's `error` line: called as a command starts (a resident process runs many). */
export function resetJsonErrorLine(): void {
  errorLineWritten = false;
}

/** The `usage` JSON event of a normalized usage; unknown counts are null. */
export function usageEvent(requestId: string, usage: Usage, raw: unknown): JsonEvent {
  return {
    type: "usage",
    request_id: requestId,
    ...usageJson(usage),
    raw: storableRaw(raw),
  };
}
