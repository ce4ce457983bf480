/**
 * Consumes an adapter's event stream: assembles the assistant message,
 * enforces the idle timeout, and reports each event to the caller.
 *
 * Diagnostics are not liveness: keep-alive pings and error chatter do not
 * reset the idle timer; only content does (DESIGN.md, rules from the field).
 */
import type { Block } from "../context/types.ts";
import { ProviderError } from "../errors.ts";
import type { FinishEvent, StreamEvent } from "../plugin/stream.ts";

/** Options of {@link consume}. */
export interface ConsumeOptions {
  /** Longest wait for the next content event, ms. */
  idleMs: number;
  /** Aborted to stop the provider call (on a stall too). */
  abort: AbortController;
  /** Called for every event, in order, before the next is read. */
  onEvent?: (event: StreamEvent, content: Block[]) => void | Promise<void>;
}

/** What a consumed stream produced. */
export interface ConsumeResult {
  /** The assistant content so far: text, thinking and tool_use blocks in arrival order. */
  content: Block[];
  /** The finish event; undefined when the stream ended without one. */
  finish: FinishEvent | undefined;
  /** Epoch ms of the first content event, if any. */
  firstContentAt: number | undefined;
}

/** Thrown by {@link consume}: the failure plus whatever content arrived before it. */
export class StreamFailure extends Error {
  constructor(
    readonly error: unknown,
    readonly partial: ConsumeResult,
  ) {
    super(error instanceof Error ? error.message : String(error));
  }
}

/**
 * Reads the events to the end.
 * @throws StreamFailure wrapping ProviderError PROVIDER_STALL after `idleMs`
 *   without content, PROVIDER_STREAM when the stream ends without `finish`,
 *   or the adapter's own error; `partial` holds what arrived.
 */
export async function consume(events: AsyncIterable<StreamEvent>, options: ConsumeOptions): Promise<ConsumeResult> {
  const result: ConsumeResult = { content: [], finish: undefined, firstContentAt: undefined };
  const iterator = events[Symbol.asyncIterator]();
  let deadline = Date.now() + options.idleMs;
  try {
    for (;;) {
      const next = await nextBefore(iterator, deadline, options);
      if (next.done) break;
      const event = next.value;
      if (event.type !== "chatter") {
        deadline = Date.now() + options.idleMs;
        if (event.type !== "finish") result.firstContentAt ??= Date.now();
      }
      apply(result, event);
      await options.onEvent?.(event, result.content);
      if (event.type === "finish") break;
    }
    if (!result.finish) {
      throw new ProviderError("PROVIDER_STREAM", "the provider's stream ended before the answer was finished", {
        retryable: result.firstContentAt === undefined,
        hint: "the partial answer is kept and marked incomplete; run again with -c to continue",
      });
    }
    return result;
  } catch (error) {
    throw new StreamFailure(error, result);
  } finally {
    void iterator.return?.()?.catch?.(() => {});
  }
}

async function nextBefore(iterator: AsyncIterator<StreamEvent>, deadline: number, options: ConsumeOptions): Promise<IteratorResult<StreamEvent>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      options.abort.abort();
      reject(
        new ProviderError("PROVIDER_STALL", `no content from the provider for ${Math.round(options.idleMs / 1000)} s`, {
          retryable: false,
          hint: "the provider stalled; retry later, or raise the limit with --idle-timeout SECONDS",
        }),
      );
    }, Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([iterator.next(), stalled]);
  } finally {
    clearTimeout(timer);
  }
}

function apply(result: ConsumeResult, event: StreamEvent): void {
  const last = result.content.at(-1);
  switch (event.type) {
    case "text":
      if (last?.type === "text") last.text += event.delta;
      else result.content.push({ type: "text", text: event.delta });
      return;
    case "thinking":
      if (last?.type === "thinking" && last.signature === undefined) {
        last.text += event.delta;
        if (event.signature !== undefined) last.signature = event.signature;
      } else {
        result.content.push(event.signature === undefined ? { type: "thinking", text: event.delta } : { type: "thinking", text: event.delta, signature: event.signature });
      }
      return;
    case "tool_call":
      result.content.push({ type: "tool_use", id: event.id, name: event.name, arguments: event.arguments });
      return;
    case "finish":
      result.finish = event;
      return;
    case "chatter":
      return;
  }
}
