/**
 * The summary zone's entries (Z1: `[Summary baseline]`, then `[Summary update i]`,
 * each a user message appended once and never re-rendered), their content keys,
 * the instruction of a summary call and the check of its answer
 * (shared/compaction.md, "Summary call" and "Content-addressed summary cache").
 */
import type { Block, Message, SummaryState } from "../context/types.ts";
import { byteLength, RENDER_VERSION, truncateBytes } from "./extractive.ts";

/** Version of the summary prompt and entry format; part of every content key. */
export const SUMMARY_PROMPT_VERSION = 1;
/** Output cap of a summary call, tokens. */
export const SUMMARY_MAX_TOKENS = 2048;
/** A render up to this many tokens is the entry itself: no call is made. */
export const VERBATIM_RENDER_TOKENS = 800;
/** A rejected or failed summary falls back to the render cut to this many bytes. */
export const FALLBACK_BYTES = 3 * 1024;

/** System text of a cold summary call (no warm prefix to fork). */
export const SUMMARIZER_SYSTEM =
  "You condense the earlier part of a conversation between a user and an assistant with tools. Keep decisions, facts found, files and identifiers touched, open tasks and exact user instructions. Write plain text, no tool calls.";

/**
 * The instruction appended to a summary call: what to summarize (up to the cut
 * anchor), that earlier summaries are already in the conversation, the cap.
 */
export function summaryInstruction(anchorId: string, hasPrevious: boolean, render: string | undefined): string {
  return [
    `[compaction request] Everything in this conversation up to and including message ${anchorId} is about to be replaced by a summary.`,
    hasPrevious ? "Earlier summaries are already above: write only the update for what happened after them, up to that message." : "Write the summary of everything up to that message.",
    "Keep decisions, facts found, files and identifiers touched, open tasks and exact user instructions. Plain text, no tool calls, at most 2,000 tokens.",
    ...(render !== undefined ? ["", "The span, rendered:", render] : []),
  ].join("\n");
}

/**
 * The content key of a summary entry: a hash of the protocol version, purpose,
 * provider, model, prompt and render versions, the previous summary state and
 * the render of the span. Independent of how the call would be made, so a
 * resumed or forked session and a replay find it.
 */
export function summaryKey(parts: { provider: string; model: string; previous: SummaryState; render: string }): string {
  const hash = new Bun.CryptoHasher("sha256");
  for (const part of ["cpc-summary-v1", "compaction", parts.provider, parts.model, String(SUMMARY_PROMPT_VERSION), String(RENDER_VERSION), sha(JSON.stringify(parts.previous)), sha(parts.render)]) {
    hash.update(part).update("\u0000");
  }
  return hash.digest("hex");
}

/** The Z1 entry appended by a compaction: a user message of one text block. */
export function summaryEntry(id: string, previous: SummaryState, text: string): Message {
  const title = previous.messages.length === 0 ? "[Summary baseline]" : `[Summary update ${previous.messages.length}]`;
  return { id, role: "user", content: [{ type: "text", text: `${title}\n${text}` }] };
}

/**
 * The text of a summary answer when it is usable: non-empty, no tool calls,
 * not cut at the output cap; else undefined (the caller falls back to the render).
 */
export function acceptedSummary(content: readonly Block[], finishReason: string | null | undefined): string | undefined {
  if (content.some((b) => b.type === "tool_use")) return undefined;
  if (finishReason === "length" || finishReason === "max_tokens") return undefined;
  const text = content
    .filter((b): b is Extract<Block, { type: "text" }> => b.type === "text")
    .map((b) => b.text)
    .join("")
    .trim();
  return text === "" ? undefined : text;
}

/** The render cut to {@link FALLBACK_BYTES} on a character boundary. */
export function fallbackText(render: string): string {
  const bytes = byteLength(render);
  if (bytes <= FALLBACK_BYTES) return render;
  return `${truncateBytes(render, FALLBACK_BYTES)}\n[… render cut at ${FALLBACK_BYTES} bytes of ${bytes}]`;
}

// Bun's hasher, not node:crypto's createHash (the same digest): this module loads on every run, and node:crypto's load cost ms before the request.
function sha(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
