/**
 * The render memo every provider adapter uses (through `api.services`), so a
 * long session's per-turn render cost grows with its new messages, not with
 * its history (DESIGN.md, "Data flow of one turn").
 *
 * A request's log is the previous request's log plus appended messages
 * (compaction and forks aside). The memo keeps the wire elements the last
 * render produced for each message and reuses them for the longest run of
 * leading messages that are the very same objects as last time; from the
 * first message that differs on, it calls the adapter's message renderer
 * again. Reuse is keyed on identity only: it never looks at contents, so it
 * can only hand back elements a fresh render of the same messages would
 * produce, provided the renderer is a pure function of its arguments.
 */
import type { Message } from "../context/types.ts";
import type { WireSegment } from "./wire.ts";

/** What one log message renders to. */
export interface RenderedMessage {
  /**
   * Elements appended to the body's list of messages (Anthropic `messages`,
   * Responses `input`, Gemini `contents`, ...), in order; may be empty (a
   * message with nothing to replay) or several (a chat message with tool results).
   */
  items: Record<string, unknown>[];
  /** The segments of those elements, with absolute paths (the first item sits at index `at`). */
  segments: WireSegment[];
}

/**
 * Renders one message. Must be a pure function of its arguments: the
 * message, the index `at` its first element takes in the body's list, and
 * the messages before it (`log[0..index]`; nothing after `index` may be read).
 */
export type MessageRenderer = (message: Message, at: number, log: readonly Message[], index: number) => RenderedMessage;

/** A rendered log: the elements and segments of every message, in order. */
export interface RenderedLog {
  /** Fresh array (the caller may push or replace elements), but its elements are shared with other renders: never mutate one, copy it. */
  items: Record<string, unknown>[];
  /** Fresh array of segments shared with other renders (never mutate a segment). */
  segments: WireSegment[];
}

/** Reuses an adapter's earlier renders of a log; see {@link renderMemo}. */
export interface RenderMemo {
  /**
   * Renders `log` (summary zone then log messages), its first element at index
   * `start` of the body's list (e.g. after the system messages on the chat
   * wire). Messages are reused from the previous call when they are the same
   * objects at the same places, with the same `start`, and not `incomplete`
   * (an incomplete answer may still grow). Messages must not be changed in
   * place once rendered (the store's are frozen); a changed message is a new object.
   */
  render(log: readonly Message[], start: number): RenderedLog;
}

/**
 * A new memo around an adapter's message renderer. Create it once per
 * provider, in `setup(api)`, and share it between the adapters `create`
 * makes (a runtime creates an adapter for every turn); call `render` from the
 * adapter's `render`. The result is byte-identical to rendering every message afresh
 * (plugins/render-memo.test.ts checks this for every built-in adapter).
 * Memory: the last render's elements and segments of each of the last 16
 * conversations (by their first message) rendered through it.
 * @example
 * const memo = api.services.renderMemo((message, at) => ({ items: [toWire(message)], segments: [{ nodeId: message.id, kind: "message", path: ["messages", at] }] }));
 * const { items, segments } = memo.render([...context.summary, ...context.messages], 0);
 */
export function renderMemo(renderMessage: MessageRenderer): RenderMemo {
  // One last render per conversation, keyed by its first message: a process serving several sessions
  // in turn (the probe, the proxy) keeps each one's. The least recently used is dropped beyond MAX_LOGS.
  const logs = new Map<Message | undefined, LastRender>();
  return {
    render(log, start) {
      const key = log[0];
      let last = logs.get(key);
      if (last) logs.delete(key);
      else last = { source: [], contents: [], items: [], segments: [], itemEnds: [], segmentEnds: [], start };
      logs.set(key, last);
      if (logs.size > MAX_LOGS) logs.delete(logs.keys().next().value);
      return renderFrom(last, log, start, renderMessage);
    },
  };
}

/** Conversations a memo keeps the last render of. */
const MAX_LOGS = 16;

/** The last render of one conversation: its messages (and their content arrays), elements, segments, and where each message's ended. */
interface LastRender {
  source: Message[];
  contents: unknown[];
  items: Record<string, unknown>[];
  segments: WireSegment[];
  itemEnds: number[];
  segmentEnds: number[];
  start: number;
}

function renderFrom(last: LastRender, log: readonly Message[], start: number, renderMessage: MessageRenderer): RenderedLog {
  const { source, contents, items, segments, itemEnds, segmentEnds } = last;
  let shared = 0;
  if (start === last.start) {
    const limit = Math.min(source.length, log.length);
    while (shared < limit && reusable(log[shared]!, source[shared]!, contents[shared])) shared++;
  }
  last.start = start;
  source.length = contents.length = itemEnds.length = segmentEnds.length = shared;
  items.length = shared > 0 ? itemEnds[shared - 1]! : 0;
  segments.length = shared > 0 ? segmentEnds[shared - 1]! : 0;
  for (let i = shared; i < log.length; i++) {
    const message = log[i]!;
    const rendered = renderMessage(message, start + items.length, log, i);
    for (const item of rendered.items) items.push(item);
    for (const segment of rendered.segments) segments.push(segment);
    source.push(message);
    contents.push(message.content);
    itemEnds.push(items.length);
    segmentEnds.push(segments.length);
  }
  // slice copies in bulk: the caller gets arrays of its own, the memo keeps its.
  return { items: items.slice(), segments: segments.slice() };
}

function reusable(now: Message, then: Message, thenContent: unknown): boolean {
  return now === then && !now.incomplete && now.content === thenContent;
}
