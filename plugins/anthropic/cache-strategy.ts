/**
 * The Anthropic cache strategy: `cache_control` breakpoints and the affinity
 * key on Anthropic Messages requests.
 *
 * Breakpoints (at most 4 per request, counted at block level, manual marks
 * included): the last block of the newest message whatever its type (the
 * overlay excluded), the previous request's tail (see plugins/shared/breakpoints.ts),
 * the last system block and the last tool (with a summary zone: the end of
 * the summary zone, and the last system block or else the last tool). With `--cache-ttl 1h` every
 * automatic breakpoint is `{"type":"ephemeral","ttl":"1h"}`; 1h marks always
 * precede 5m ones in the walk order tools → system → messages.
 *
 * 1h support rule: every current Claude model accepts `ttl: "1h"`, so 1h is
 * sent for any model whose id contains `claude`; on another model served over
 * this protocol (a compatible third-party server) a 1h mark is refused before
 * sending, since the server may reject it or bill it as 5m.
 *
 * Affinity key: `metadata.user_id`. Anthropic documents it only as an opaque
 * end-user id used to detect abuse, not as a cache routing key; it is sent so
 * every request of a session carries the same id (unset when the body
 * already has one).
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching
 * @see https://docs.claude.com/en/api/messages (metadata.user_id)
 */
import { CachetError, ListMemo, type CacheStrategySpec, type RequestContext, type WirePath, type WireRequest } from "../../src/plugin/index.ts";
import {
  applyMarks,
  assertMarks,
  describePath,
  findCacheMarks,
  isOverlay,
  planBreakpoints,
  rollingPositions,
  type MarkableMessage,
  type Ttl,
} from "../shared/breakpoints.ts";

/** Breakpoints allowed per request. @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching */
export const ANTHROPIC_MAX_BREAKPOINTS = 4;

/** Cache order of an Anthropic Messages body. */
export const ANTHROPIC_CACHE_ORDER: readonly string[] = ["tools", "system", "messages"];

/** Content block types that cannot carry `cache_control` themselves. */
const UNMARKABLE_BLOCKS = new Set(["thinking", "redacted_thinking"]);

/** Breakpoints, TTL and `metadata.user_id` for every provider speaking `anthropic-messages`. */
export const anthropicBreakpoints: CacheStrategySpec = {
  id: "anthropic-breakpoints",
  protocols: ["anthropic-messages"],
  apply: applyAnthropicBreakpoints,
};

/** The strategies this plugin registers. */
export const strategies: CacheStrategySpec[] = [anthropicBreakpoints];

/**
 * Adds the breakpoints and affinity key to a copy of the wire request; the
 * input is not changed. With `cache.mode === "off"` returns `wire` itself.
 * @throws CachetError CACHE_CONTRACT when manual marks exceed 4, put a 1h mark
 *   after a 5m one, sit on a message instead of a block, or ask for 1h on a
 *   model that is not Claude.
 */
export function applyAnthropicBreakpoints(wire: WireRequest, context: RequestContext): WireRequest {
  if (context.cache.mode === "off") return wire;
  const body = wire.body;
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  assertNoMessageMarks(messages);
  const manual = findCacheMarks(body, ANTHROPIC_CACHE_ORDER);
  const { tail, previousTail } = rollingPositions(markableMessages(wire, messages, rollingStart(messages)));
  // With a summary zone, its end is a zone boundary (shared/compaction.md): the first request after a
  // compaction reads Z0 + Z1 from it. Z0 then keeps one mark, on the system prompt (which follows the tools).
  const summaryEnd = lastSummaryBlock(messages, context.summary.length);
  const zones = summaryEnd ? [summaryEnd, lastSystemBlock(body.system) ?? lastTool(body.tools)] : [lastSystemBlock(body.system), lastTool(body.tools)];
  const candidates = [tail, previousTail, ...zones].filter((p): p is WirePath => p !== undefined);
  const marks = planBreakpoints({
    candidates,
    manual,
    ttl: context.cache.ttl,
    max: ANTHROPIC_MAX_BREAKPOINTS,
    sections: ANTHROPIC_CACHE_ORDER,
    provider: context.provider,
  });
  const long = [...manual, ...marks].find((m) => m.ttl === "1h");
  if (long && !supportsOneHourTtl(context.model)) {
    throw new CachetError("CACHE_CONTRACT", `model ${context.model} of provider ${context.provider} is not known to support a 1h cache TTL (mark at ${describePath(long.path)})`, {
      hint: "use --cache-ttl 5m with this model",
    });
  }
  const marked = applyMarks(body, marks, anthropicMarker);
  // The client-side assert before sending (CASES.md cases 15, 16), on the marks now in the body.
  assertMarks([...manual, ...marks], ANTHROPIC_CACHE_ORDER, ANTHROPIC_MAX_BREAKPOINTS, context.provider);
  const key = context.cache.affinityKey;
  if (key !== undefined) {
    const metadata = marked.metadata !== null && typeof marked.metadata === "object" ? (marked.metadata as Record<string, unknown>) : {};
    if (metadata.user_id === undefined) marked.metadata = { ...metadata, user_id: key };
  }
  return { ...wire, body: marked };
}

/**
 * Refuses `cache_control` on a message itself. Messages are never changed
 * once rendered (marks go on copies), so one found without it at the same
 * place in the last request is not looked at again: a long session's check
 * costs its new messages.
 * @throws CachetError CACHE_CONTRACT naming the message
 */
function assertNoMessageMarks(messages: readonly unknown[]): void {
  checkedMessages.map(messages);
}

const checkedMessages = new ListMemo((message: unknown, i: number): true => {
  if (message !== null && typeof message === "object" && "cache_control" in message) {
    throw new CachetError("CACHE_CONTRACT", `cache_control is set on messages[${i}] itself; Anthropic takes it only on content blocks`, {
      hint: "put the mark on the last content block of that message",
    });
  }
  return true;
});

/**
 * True for the models that accept `ttl: "1h"`: every Claude model (the id
 * contains `claude`, which also covers Bedrock and Vertex spellings).
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (1-hour cache duration)
 */
export function supportsOneHourTtl(model: string): boolean {
  return /claude/i.test(model);
}

/** `cache_control` value for a TTL; 5m is the API default and is sent without `ttl`. */
export function anthropicMarker(ttl: Ttl): Record<string, unknown> {
  return ttl === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" };
}

/**
 * Where the rolling positions can lie: from the last message with a markable
 * block before the newest assistant message on. Looking no further back keeps
 * planning a long session as cheap as a short one.
 */
function rollingStart(messages: unknown[]): number {
  let i = messages.length - 1;
  while (i >= 0 && (messages[i] as { role?: unknown } | null)?.role !== "assistant") i--;
  for (i--; i >= 0; i--) {
    const content = (messages[i] as { content?: unknown } | null)?.content;
    if (Array.isArray(content) && content.some(isMarkableBlock)) return i;
  }
  return 0;
}

function markableMessages(wire: WireRequest, all: unknown[], start: number): MarkableMessage[] {
  return all.slice(start).map((message, k) => {
    const i = start + k;
    const record = (message ?? {}) as Record<string, unknown>;
    const blocks: WirePath[] = [];
    // String content has no block to carry a mark; the adapters render arrays.
    if (Array.isArray(record.content)) {
      record.content.forEach((block, j) => {
        const path: WirePath = ["messages", i, "content", j];
        if (isMarkableBlock(block) && !isOverlay(wire, path)) blocks.push(path);
      });
    }
    return { role: String(record.role), blocks };
  });
}

/** Thinking blocks and empty text cannot be marked. @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (What cannot be cached) */
function isMarkableBlock(block: unknown): boolean {
  if (block === null || typeof block !== "object") return false;
  const { type, text } = block as Record<string, unknown>;
  if (typeof type !== "string" || UNMARKABLE_BLOCKS.has(type)) return false;
  return !(type === "text" && text === "");
}

/** The last markable block of the summary zone: the adapter renders each summary message as one wire message, first. */
function lastSummaryBlock(messages: unknown[], summaryMessages: number): WirePath | undefined {
  if (summaryMessages === 0 || messages.length < summaryMessages) return undefined;
  const i = summaryMessages - 1;
  const content = (messages[i] as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return undefined;
  for (let j = content.length - 1; j >= 0; j--) if (isMarkableBlock(content[j])) return ["messages", i, "content", j];
  return undefined;
}

function lastSystemBlock(system: unknown): WirePath | undefined {
  if (!Array.isArray(system)) return undefined;
  for (let i = system.length - 1; i >= 0; i--) if (isMarkableBlock(system[i])) return ["system", i];
  return undefined;
}

function lastTool(tools: unknown): WirePath | undefined {
  return Array.isArray(tools) && tools.length > 0 ? ["tools", tools.length - 1] : undefined;
}
