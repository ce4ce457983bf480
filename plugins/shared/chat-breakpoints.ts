/**
 * Breakpoints on OpenAI-format chat bodies, for providers that take
 * Anthropic-style `cache_control` on message content parts: Alibaba Qwen in
 * explicit mode, and OpenRouter for Anthropic and Qwen upstream models.
 *
 * Same plan as on Anthropic Messages (plugins/shared/breakpoints.ts): tail,
 * previous tail, last system part, at most 4 marks with manual ones counted.
 * Only parts of array `content` can carry a mark; a message whose content is
 * a string has none (the strategy never rewrites content, so adapters that
 * want explicit caching render content as parts).
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 * @see https://openrouter.ai/docs/guides/best-practices/prompt-caching
 */
import type { WirePath, WireRequest } from "../../src/plugin/index.ts";
import { applyMarks, assertBreakpoints, findCacheMarks, isOverlay, planBreakpoints, rollingPositions, type MarkableMessage, type Ttl } from "./breakpoints.ts";

/** Cache order of an OpenAI-format chat body: tool definitions, then messages. */
export const CHAT_CACHE_ORDER: readonly string[] = ["tools", "messages"];

/** Breakpoints allowed per request (Qwen; OpenRouter passes Anthropic's 4 through). */
export const CHAT_MAX_BREAKPOINTS = 4;

/** Options of {@link addChatBreakpoints}. */
export interface ChatBreakpointOptions {
  /** TTL of the automatic marks. */
  ttl: Ttl;
  /** Provider name for error messages. */
  provider: string;
}

/**
 * Returns a copy of `wire` with `cache_control` on the tail, the previous
 * tail and the last part of the leading system messages.
 * @throws CachetError CACHE_CONTRACT when manual marks exceed 4 or put a 1h mark after a 5m one.
 */
export function addChatBreakpoints(wire: WireRequest, options: ChatBreakpointOptions): WireRequest {
  const body = wire.body;
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  const markable = markableChatMessages(wire, messages);
  const { tail, previousTail } = rollingPositions(markable);
  const candidates = [tail, previousTail, lastSystemPart(markable)].filter((p): p is WirePath => p !== undefined);
  const marks = planBreakpoints({
    candidates,
    manual: findCacheMarks(body, CHAT_CACHE_ORDER),
    ttl: options.ttl,
    max: CHAT_MAX_BREAKPOINTS,
    sections: CHAT_CACHE_ORDER,
    provider: options.provider,
  });
  const marked = applyMarks(body, marks, (ttl) => (ttl === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" }));
  assertBreakpoints(marked, CHAT_CACHE_ORDER, CHAT_MAX_BREAKPOINTS, options.provider);
  return { ...wire, body: marked };
}

function markableChatMessages(wire: WireRequest, messages: unknown[]): MarkableMessage[] {
  return messages.map((message, i) => {
    const record = (message ?? {}) as Record<string, unknown>;
    const blocks: WirePath[] = [];
    if (Array.isArray(record.content)) {
      record.content.forEach((part, j) => {
        const path: WirePath = ["messages", i, "content", j];
        if (isMarkablePart(part) && !isOverlay(wire, path)) blocks.push(path);
      });
    }
    return { role: String(record.role), blocks };
  });
}

function isMarkablePart(part: unknown): boolean {
  if (part === null || typeof part !== "object") return false;
  const { type, text } = part as Record<string, unknown>;
  return typeof type === "string" && !(type === "text" && text === "");
}

/** Last markable part of the leading run of system/developer messages. */
function lastSystemPart(messages: readonly MarkableMessage[]): WirePath | undefined {
  let found: WirePath | undefined;
  for (const message of messages) {
    if (message.role !== "system" && message.role !== "developer") break;
    if (message.blocks.length > 0) found = message.blocks[message.blocks.length - 1];
  }
  return found;
}
