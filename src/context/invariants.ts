/**
 * Conversation invariants every provider enforces, applied by the client in
 * one place before every send (src/run/turn.ts), whatever the adapter:
 * - every tool call of an assistant message is answered by a tool result in
 *   the next message, and no result goes without its call (CASES.md case 39);
 * - no text block that is empty or whitespace only goes on the wire, and a
 *   message left empty by that goes neither; the stored log keeps its bytes
 *   (CASES.md case 40); nor does a blank system part (`-s` refuses one, a
 *   session stored before that did not).
 * Reasoning replay is each adapter's business (it knows its provider's
 * rule); the providers' messages are in src/emulator/validate.
 */
import { CachetError } from "../errors.ts";
import { ListMemo } from "../list-memo.ts";
import type { Block, Message, StablePrefix, ToolUseBlock } from "./types.ts";

/** The stored result that answers a call the user moved on from (`--drop-pending`). */
export const DROPPED_RESULT = "no result: the user moved on";

/** The tool calls of the log's last assistant message that no later message answers, in call order. */
export function pendingCalls(messages: readonly Message[]): ToolUseBlock[] {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return [];
  return last.content.filter((b): b is ToolUseBlock => b.type === "tool_use");
}

/** True for a text block the providers refuse: empty or whitespace only. */
export function isBlankText(block: Block): boolean {
  // A search, not trim(): a 100 MB prompt is not copied.
  return block.type === "text" && !/\S/.test(block.text);
}

/**
 * The messages as they go on the wire: blank text blocks left out, and
 * messages left with nothing left out. Pure: the stored log is unchanged.
 * Deterministic, and a message's wire form is the same object every time it
 * is asked for, so adapters' render memos (src/plugin/render-memo.ts) reuse
 * what they rendered of it. The same messages as last time cost a pointer
 * compare each (src/list-memo.ts); a long session's turn works out its new ones.
 */
export function wireMessages(messages: readonly Message[]): Message[] {
  const { results, total } = wireFormLists.map(messages);
  // Most logs hold no blank text: then the wire form of every message is the message itself.
  if (total === 0) return messages.slice();
  const out: Message[] = [];
  for (let i = 0; i < results.length; i++) if (results[i] !== null) out.push(results[i]!);
  return out;
}

/** The stable prefix as it goes on the wire: blank system parts left out. Pure: the stored prefix is unchanged. */
export function wirePrefix(prefix: StablePrefix): StablePrefix {
  // A loop, not every(): a first call of it compiles the builtin, before a fresh process's request.
  let blank = false;
  for (const part of prefix.system) if (!/\S/.test(part.text)) blank = true;
  if (!blank) return prefix;
  return { ...prefix, system: prefix.system.filter((part) => /\S/.test(part.text)) };
}

// Stored messages never change, so their wire forms are computed once per process (null: left out), whichever log they are in.
const wireForms = new WeakMap<Message, Message | null>();

function wireFormOf(message: Message): Message | null {
  let wire = wireForms.get(message);
  if (wire === undefined) {
    wire = wireForm(message);
    // An incomplete answer may still grow: its form is not kept.
    if (!message.incomplete) wireForms.set(message, wire);
  }
  return wire;
}

// An incomplete answer may still grow: its form is not kept. Weight: 1 for a form other than the message.
const wireFormLists = new ListMemo<Message, Message | null>(wireFormOf, { keep: (message) => !message.incomplete, weight: (form, message) => (form === message ? 0 : 1) });

function wireForm(message: Message): Message | null {
  if (!message.content.some(isBlankText)) return message;
  const content = message.content.filter((b) => !isBlankText(b));
  // A message holding only reasoning has no answer to replay either.
  return content.some((b) => b.type !== "thinking") ? { ...message, content } : null;
}

/**
 * Checks the pairing of tool calls and results in `messages` (the wire
 * form): the last message may hold calls awaiting results only when it is
 * the assistant's (the turn is not sent then). A message found well paired
 * with the one before it is not checked again while it follows the same
 * message at the same place (a pointer compare each, src/list-memo.ts), so a
 * long session costs its new messages.
 * @throws CachetError INTERNAL naming the message and ids: a log that breaks
 *   the rule is never sent (the provider would refuse it and every later turn).
 */
export function checkToolPairing(messages: readonly Message[]): void {
  pairings.map(messages);
}

/** Checks message `i` against the calls of the message before it. */
function checkPair(message: Message, i: number, messages: readonly Message[]): true {
  const previous = messages[i - 1];
  // Plain loops: a first call of flatMap compiles the builtin (~0.3 profiled ms before a fresh process's request).
  const called = new Set<string>();
  if (previous?.role === "assistant") for (const b of previous.content) if (b.type === "tool_use") called.add(b.id);
  const answered = new Set<string>();
  for (const b of message.content) if (b.type === "tool_result") answered.add(b.toolUseId);
  if (called.size === 0 && answered.size === 0) return true;
  const orphans = [...answered].filter((id) => !called.has(id));
  const missing = [...called].filter((id) => !answered.has(id));
  if (orphans.length > 0 || missing.length > 0) {
    throw new CachetError(
      "INTERNAL",
      `the conversation breaks tool call pairing at message ${i} (${message.id}): ${missing.length ? `calls without results: ${missing.join(", ")}` : ""}${missing.length && orphans.length ? "; " : ""}${orphans.length ? `results without calls: ${orphans.join(", ")}` : ""}`,
      { hint: "nothing was sent; run `cachet export` to see the session and report the problem" },
    );
  }
  return true;
}

// An incomplete message may still grow: neither it nor the message after it stays checked.
const pairings = new ListMemo<Message, true>(checkPair, { withPrevious: true, keep: (message) => !message.incomplete });
