/**
 * Anthropic's server-side compaction (beta `compact-2026-01-12`), as the
 * emulator runs it. A request whose `context_management.edits` holds
 * `{type: "compact_20260112"}` (with the beta header, on a supported model)
 * and whose input exceeds the trigger (`trigger: {type: "input_tokens",
 * value}`, default 150,000, at least 50,000) is compacted before the answer:
 * a compaction pass reads the whole prompt and writes a summary, returned as a
 * `compaction` block at the start of the answer; the answer is then made from
 * the tools, the system prompt and that block. Usage: the top-level counts are
 * the answer's pass only; `usage.iterations` lists the `compaction` pass then
 * the `message` pass, each with its input, cache and output counts. Streamed,
 * the block is a `content_block_start`, one `compaction_delta` with the whole
 * summary, then `content_block_stop`. With `pause_after_compaction` the answer
 * is the block alone, stop reason `compaction`. A later request that carries a
 * `compaction` block (with content) is read from that block on: every block
 * before it is ignored.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 */
import { canonicalJson } from "../wire/canonical-json.ts";
import { deterministicText } from "./answer.ts";
import { invalidRequest } from "./request-error.ts";
import type { ContentItem } from "./types.ts";

/** The beta header value that enables the edit. */
export const COMPACTION_BETA = "compact-2026-01-12";
/** The edit type. */
export const COMPACTION_EDIT = "compact_20260112";
/** Trigger when the request names none, input tokens. */
export const DEFAULT_TRIGGER = 150_000;
/** Smallest trigger the API accepts, input tokens. */
export const MIN_TRIGGER = 50_000;
/** Models the compaction page lists (Claude Opus 4.6, Sonnet 4.6). */
const SUPPORTED = /opus-4-6|sonnet-4-6/;

/** The compaction edit of a request. */
export interface CompactionEdit {
  /** Compact when the input exceeds this many tokens. */
  trigger: number;
  /** Stop after the compaction block (stop reason `compaction`). */
  pause: boolean;
}

/**
 * The request's compaction edit, checked; undefined when it has none.
 * @throws EmulatorRequestError 400 for an edit without the beta header, on an
 *   unsupported model, of an unknown type or with a trigger below 50,000
 */
export function compactionEdit(body: Record<string, unknown>, headers: Headers, model: string): CompactionEdit | undefined {
  const management = body.context_management as { edits?: unknown } | undefined;
  if (management === undefined) return undefined;
  const edits = management.edits;
  if (!Array.isArray(edits)) throw invalidRequest("context_management.edits: Input should be a valid list");
  let found: CompactionEdit | undefined;
  edits.forEach((edit: Record<string, unknown>, i) => {
    if (edit?.type !== COMPACTION_EDIT) return;
    const betas = (headers.get("anthropic-beta") ?? "").split(",").map((b) => b.trim());
    if (!betas.includes(COMPACTION_BETA)) throw invalidRequest(`context_management.edits.${i}: ${COMPACTION_EDIT} requires the beta header anthropic-beta: ${COMPACTION_BETA}`);
    if (!SUPPORTED.test(model)) throw invalidRequest(`context_management.edits.${i}: compaction is not supported for model ${model}`);
    const trigger = edit.trigger as { type?: unknown; value?: unknown } | undefined;
    if (trigger !== undefined && (trigger.type !== "input_tokens" || typeof trigger.value !== "number" || !Number.isInteger(trigger.value))) {
      throw invalidRequest(`context_management.edits.${i}.trigger: expected {"type": "input_tokens", "value": <integer>}`);
    }
    const value = (trigger?.value as number | undefined) ?? DEFAULT_TRIGGER;
    if (value < MIN_TRIGGER) throw invalidRequest(`context_management.edits.${i}.trigger.value: must be at least ${MIN_TRIGGER}`);
    found = { trigger: value, pause: edit.pause_after_compaction === true };
  });
  return found;
}

/**
 * Where a request's content starts: the message and block of its last
 * `compaction` block with content (everything before it is ignored), or
 * [0, 0]. A block whose content is null is a failed compaction: a no-op.
 */
export function compactedFrom(messages: readonly Record<string, unknown>[]): [number, number] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = messages[i]!.content;
    if (!Array.isArray(content)) continue;
    for (let j = content.length - 1; j >= 0; j--) {
      const block = content[j] as Record<string, unknown>;
      if (block?.type === "compaction" && typeof block.content === "string") return [i, j];
    }
  }
  return [0, 0];
}

/** The prompt item of a compaction block (as received, or as the answer's first block). */
export function compactionItem(content: string, firstInMessage: boolean, messageEnd: boolean): ContentItem {
  return { role: firstInMessage ? "assistant>" : "assistant", text: canonicalJson({ type: "compaction", content }), messageEnd };
}

/** Tokens of an emulated summary (the API's length is the model's choice; fixed here so runs repeat). */
const SUMMARY_TOKENS = 400;

/** The emulated summary of a prompt, fixed by its seed. */
export function compactionSummary(seed: string): string {
  return `Summary of the conversation so far: ${deterministicText(`${seed}|compaction`, SUMMARY_TOKENS)}`;
}
