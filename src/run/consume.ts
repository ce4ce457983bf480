/**
 * Consumes an adapter's event stream: assembles the assistant message,
 * enforces the liveness limits, and reports each event to the caller.
 *
 * Diagnostics are not liveness: keep-alive pings and error chatter do not
 * reset the idle timer; content does (text, thinking deltas, tool calls), and
 * so does a keep-alive while a thinking block is open, because the provider is
 * then reasoning without showing it (DESIGN.md, rules from the field; CASES.md
 * case 42). Hidden thinking has its own, longer bound (`thinkingMs`).
 */
import type { Block, TextBlock } from "../context/types.ts";
import { ProviderError } from "../errors.ts";
import { isStreamedOutput } from "../meter/cut-stream.ts";
import { signalsDelivered } from "./interrupt.ts";
import type { FinishEvent, StreamEvent, TextEvent, UsageEvent } from "../plugin/stream.ts";

/** Options of {@link consume}. */
export interface ConsumeOptions {
  /** Longest wait for progress, ms; 0: no limit. */
  idleMs: number;
  /**
   * Longest a thinking block may stay open with only keep-alives arriving, ms
   * (hidden reasoning); with `stream: false`, the longest wait for the whole
   * answer. 0 or undefined: no limit.
   */
  thinkingMs?: number;
  /**
   * False for a non-streamed request: the answer arrives in one piece, so
   * there is no progress to time and the idle limit does not apply (it would
   * cap the whole answer); `thinkingMs` bounds the wait instead. Default true.
   */
  stream?: boolean;
  /** Aborted to stop the provider call (on a stall too). */
  abort: AbortController;
  /**
   * Called for every event before its content is applied to the result (a
   * plugin's `response:event` hook): when it throws, the event's content is
   * left out, so the stored partial answer never holds text that was not
   * shown (usage and finish events are applied first, since they are billed).
   */
  onArrive?: (event: StreamEvent) => void | Promise<void>;
  /** Called for every event once applied, in order, before the next is read. */
  onEvent?: (event: StreamEvent, content: Block[]) => void | Promise<void>;
}

/** What a consumed stream produced. */
export interface ConsumeResult {
  /** The assistant content so far: text, thinking, tool_use, image and provider blocks in arrival order. */
  content: Block[];
  /** The finish event; undefined when the stream ended without one. */
  finish: FinishEvent | undefined;
  /** Epoch ms of the first content event, if any. */
  firstContentAt: number | undefined;
  /** The latest usage the provider reported before `finish` (a lower bound of the bill if the stream is cut). */
  partialUsage?: UsageEvent;
  /** How many events of generated output arrived (src/meter/cut-stream.ts): the output a cut stream's usage is raised to. */
  streamedOutput?: number;
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
  const text = new TextSignatures();
  const iterator = events[Symbol.asyncIterator]();
  const clock = new Liveness(options);
  let lastTurn = performance.now();
  try {
    for (;;) {
      const next = await nextBefore(iterator, clock.deadline(), options.abort);
      if (next.done) break;
      const event = next.value;
      clock.saw(event);
      // Generated, so billed, even when a hook then keeps it out of the answer.
      if (isStreamedOutput(event)) result.streamedOutput = (result.streamedOutput ?? 0) + 1;
      const content = event.type !== "chatter" && event.type !== "finish" && event.type !== "usage";
      // Usage and the finish are the provider's account of the bill: kept even when the hook fails.
      if (!content) apply(result, event, text);
      await options.onArrive?.(event);
      if (content) {
        result.firstContentAt ??= Date.now();
        apply(result, event, text);
      }
      await options.onEvent?.(event, result.content);
      if (event.type === "finish") break;
      if (performance.now() - lastTurn >= LOOP_TURN_MS) {
        await signalsDelivered();
        lastTurn = performance.now();
      }
    }
    if (!result.finish) {
      throw new ProviderError("PROVIDER_STREAM", "the provider's stream ended before the answer was finished", {
        retryable: result.firstContentAt === undefined,
      });
    }
    return result;
  } catch (error) {
    throw new StreamFailure(error, result);
  } finally {
    void iterator.return?.()?.catch?.(() => {});
  }
}

/**
 * Longest a stream is consumed without a turn of the event loop, ms. A fast stream's chunks settle promise after
 * promise, and the daemon's loop read nothing else meanwhile: a client's forwarded Ctrl-C and its death were read
 * only once the whole answer was in (measured: a 64,000-token emulated answer interrupted at 0.3 s was printed,
 * stored as complete and billed in full, in 5 tries of 5).
 */
const LOOP_TURN_MS = 10;

/** A deadline and the error to raise when it passes. */
interface Deadline {
  at: number;
  error: () => ProviderError;
}

/**
 * The liveness state of one stream: when the idle limit and the hidden-thinking
 * limit fall due, given the events seen so far.
 */
class Liveness {
  private idleUntil: number;
  /** Set while a thinking block is open and only keep-alives arrive: when hidden thinking must end. */
  private thinkingUntil: number | undefined;
  private thinkingOpen = false;

  constructor(private readonly options: ConsumeOptions) {
    const now = Date.now();
    this.idleUntil = options.stream === false || options.idleMs === 0 ? Infinity : now + options.idleMs;
    if (options.stream === false && options.thinkingMs) this.thinkingUntil = now + options.thinkingMs;
  }

  /** Updates the deadlines for `event`. */
  saw(event: StreamEvent): void {
    const now = Date.now();
    const { idleMs, thinkingMs } = this.options;
    const idle = idleMs === 0 ? Infinity : now + idleMs;
    // Usage is accounting, not content: it says nothing about the answer progressing.
    if (event.type === "usage") return;
    if (event.type === "chatter") {
      // A keep-alive inside an open thinking block: the provider is reasoning out of sight.
      if (this.thinkingOpen) {
        this.idleUntil = idle;
        if (thinkingMs) this.thinkingUntil ??= now + thinkingMs;
      }
      return;
    }
    this.idleUntil = idle;
    this.thinkingUntil = undefined;
    if (event.type === "thinking") this.thinkingOpen = event.signature === undefined;
    else if (event.type !== "finish") this.thinkingOpen = false;
  }

  /** The nearest deadline, or undefined when nothing bounds the wait. */
  deadline(): Deadline | undefined {
    const { idleMs, thinkingMs } = this.options;
    const thinking = this.thinkingUntil;
    if (thinking !== undefined && thinking <= this.idleUntil) {
      const waited = this.options.stream === false ? `no answer from the provider within ${seconds(thinkingMs!)}` : `the model thought for ${seconds(thinkingMs!)} without output (only keep-alives)`;
      return {
        at: thinking,
        error: () =>
          new ProviderError("PROVIDER_STALL", waited, {
            retryable: false,
            hint: "raise the limit with --thinking-timeout SECONDS (0: no limit), or lower the reasoning effort",
          }),
      };
    }
    if (this.idleUntil === Infinity) return undefined;
    return {
      at: this.idleUntil,
      error: () =>
        new ProviderError("PROVIDER_STALL", `no content from the provider for ${seconds(idleMs)}`, {
          retryable: false,
          hint: "the provider stalled; retry later, or raise the limit with --idle-timeout SECONDS (0: no limit)",
        }),
    };
  }
}

async function nextBefore(iterator: AsyncIterator<StreamEvent>, deadline: Deadline | undefined, abort: AbortController): Promise<IteratorResult<StreamEvent>> {
  if (deadline === undefined) return iterator.next();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(deadline.error());
    }, Math.max(0, deadline.at - Date.now()));
  });
  try {
    return await Promise.race([iterator.next(), stalled]);
  } finally {
    clearTimeout(timer);
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(3).replace(/0+$/, "")} s`;
}

/**
 * Where a text event's signature goes (Gemini 3 `thoughtSignature` on a
 * text part; streamed, often alone on a final part with empty text). A
 * signature belongs to the part it came on, so a signed text block is
 * closed: text after it starts a new block. A signature with an empty
 * delta lands on the answer's last text block; before any text block, or
 * when that block is already signed, it waits for the next text block
 * (and is dropped if none comes: it never makes an empty block).
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
class TextSignatures {
  private pending: string | undefined;

  apply(content: Block[], event: TextEvent): void {
    const last = content.at(-1);
    if (event.delta === "") {
      if (event.signature === undefined) {
        // An empty unsigned delta opens a text block as any delta does (a stream may start a text part empty).
        if (last?.type !== "text") content.push({ type: "text", text: "" });
        return;
      }
      const block = lastText(content);
      if (block && block.signature === undefined) block.signature = event.signature;
      else this.pending = event.signature;
      return;
    }
    const signature = event.signature ?? this.pending;
    if (last?.type === "text" && last.signature === undefined) {
      last.text += event.delta;
    } else {
      content.push({ type: "text", text: event.delta });
    }
    const block = content.at(-1) as TextBlock;
    if (signature !== undefined) {
      block.signature = signature;
      this.pending = undefined;
    }
  }
}

function lastText(content: Block[]): TextBlock | undefined {
  for (let i = content.length - 1; i >= 0; i--) {
    const block = content[i]!;
    if (block.type === "text") return block;
  }
  return undefined;
}

function apply(result: ConsumeResult, event: StreamEvent, text: TextSignatures): void {
  const last = result.content.at(-1);
  switch (event.type) {
    case "text":
      text.apply(result.content, event);
      return;
    case "thinking":
      // An empty, unsigned delta only says a thinking block opened (its text may be hidden): no block yet.
      if (event.delta === "" && event.signature === undefined) return;
      if (last?.type === "thinking" && last.signature === undefined) {
        last.text += event.delta;
        if (event.signature !== undefined) last.signature = event.signature;
      } else {
        result.content.push(event.signature === undefined ? { type: "thinking", text: event.delta } : { type: "thinking", text: event.delta, signature: event.signature });
      }
      return;
    case "tool_call":
      result.content.push(
        event.signature === undefined
          ? { type: "tool_use", id: event.id, name: event.name, arguments: event.arguments }
          : { type: "tool_use", id: event.id, name: event.name, arguments: event.arguments, signature: event.signature },
      );
      return;
    case "image":
      result.content.push({ type: "image", mediaType: event.mediaType, data: event.data });
      return;
    case "provider_block":
      result.content.push({ type: "provider", protocol: event.protocol, data: event.block });
      return;
    case "finish":
      result.finish = event;
      return;
    case "usage":
      result.partialUsage = event;
      return;
    case "chatter":
      return;
  }
}
