/**
 * The usage of a stream that ended before the provider's final usage: the
 * counts the provider reported so far (Anthropic `message_start` and
 * `message_delta`, Gemini's `usageMetadata` on each chunk), with the output
 * raised to what visibly streamed. A run that stopped reading (SIGINT, a cut
 * or stalled stream) and `cachet proxy` (a client that went away, an upstream
 * that cut the stream) both record it this way, priced as a flagged lower
 * bound (CASES.md case 44).
 */
import type { StreamEvent } from "../plugin/stream.ts";
import type { UsageReport } from "../plugin/usage.ts";

/**
 * Whether `event` is output the model generated that the client saw: a
 * non-empty text or thinking delta, a tool call, an image. Each carries at
 * least one generated token, since a provider streams a delta once a token
 * is decoded, so their number is a lower bound of the output tokens billed.
 * A provider block (a server tool's call or result) is left out: its result
 * is not the model's output.
 */
export function isStreamedOutput(event: StreamEvent): boolean {
  switch (event.type) {
    case "text":
    case "thinking":
      return event.delta !== "";
    case "tool_call":
    case "image":
      return true;
    default:
      return false;
  }
}

/**
 * `report` (the partial usage of a cut stream, already mapped by the
 * provider's adapter) with its output at least `streamedOutput`, the number
 * of {@link isStreamedOutput} events that arrived: Anthropic's
 * `message_start` says `output_tokens: 1` however much streamed after it.
 * A raised count is named in `estimates`. Pure; `report` is not changed.
 */
export function cutStreamReport(report: UsageReport, streamedOutput: number): UsageReport {
  const reported = report.usage.output;
  if (reported === undefined ? streamedOutput === 0 : reported >= streamedOutput) return report;
  // With no input count the request stays unpriced whatever its output: nothing to raise.
  if (report.usage.input === undefined) return report;
  const note = `output counted as ${streamedOutput} from the content events streamed before the cut (the provider had reported ${reported ?? "none"})`;
  return { ...report, usage: { ...report.usage, output: streamedOutput }, estimates: [...(report.estimates ?? []), note] };
}
