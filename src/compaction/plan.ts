/**
 * Where a compaction cuts the log (shared/compaction.md, "What is summarized vs
 * kept"): the kept tail starts at a turn boundary (a user message that answers
 * no tool call), so a tool call and its result are never separated, and holds
 * the newest complete turns within the tail budget.
 */
import type { Message } from "../context/types.ts";

/** A cut of the visible log. */
export interface CutPlan {
  /** Messages the summary zone takes over, oldest first (never empty). */
  summarized: Message[];
  /** The kept tail (Z2), oldest first, starting at a turn boundary. */
  kept: Message[];
}

/**
 * Plans the cut of `visible` (the log after the summary zone, without the
 * incoming message). The tail keeps the newest turns whose tokens, with the
 * incoming message's, fit `tailTokens`; when even the last turn does not fit,
 * the tail is the last turn alone.
 * @param incoming the message about to be sent; a tool result needs its call in the kept tail
 * @param tokensOf estimated tokens of a message
 * @returns undefined when nothing can be summarized (no boundary leaves an older span)
 */
export function planCut(visible: readonly Message[], incoming: Message | undefined, tailTokens: number, tokensOf: (message: Message) => number): CutPlan | undefined {
  // Nothing precedes the incoming message: nothing to summarize (and no need to count a large prompt).
  if (visible.length === 0) return undefined;
  const boundaries: number[] = [];
  visible.forEach((message, i) => {
    if (i > 0 && isTurnStart(message)) boundaries.push(i);
  });
  // The incoming message starts a turn of its own: everything before it may be summarized.
  if (incoming && isTurnStart(incoming)) boundaries.push(visible.length);
  if (boundaries.length === 0) return undefined;
  let tail = incoming ? tokensOf(incoming) : 0;
  let cut = boundaries.at(-1)!;
  let k = visible.length;
  for (let b = boundaries.length - 1; b >= 0; b--) {
    const at = boundaries[b]!;
    for (; k > at; k--) tail += tokensOf(visible[k - 1]!);
    if (tail > tailTokens) break;
    cut = at;
  }
  if (cut === 0) return undefined;
  return { summarized: visible.slice(0, cut), kept: visible.slice(cut) };
}

/** A user message that answers no tool call: the start of a turn. */
export function isTurnStart(message: Message): boolean {
  return message.role === "user" && !message.content.some((b) => b.type === "tool_result");
}

/**
 * The log after the message the summary covers through (all of it when it
 * covers nothing), then `next` when given, as a new array: copied once, in bulk.
 */
export function afterSummary(messages: readonly Message[], coversThrough: string | null, next?: Message): Message[] {
  const at = coversThrough === null ? -1 : messages.findIndex((m) => m.id === coversThrough);
  if (next === undefined) return messages.slice(at + 1);
  return (at < 0 ? messages : messages.slice(at + 1)).concat([next]);
}
