import { describe, expect, test } from "bun:test";
import type { Message, Protocol, RequestContext, WireRequest, WireSegment } from "../../src/plugin/index.ts";
import { pluginServices } from "../../src/plugin/services.ts";
import { renderChat } from "../openai/chat.ts";
import { findCacheMarks } from "../shared/breakpoints.ts";
import { CHAT_CACHE_ORDER } from "../shared/chat-breakpoints.ts";
import { LookbackCache } from "../shared/lookback-model.ts";
import { alibabaBreakpoints, moonshotPromptCacheKey, openrouterCache, strategies, xaiConversationId } from "./cache-strategy.ts";
import { qwenUsage } from "./usage.ts";

type Json = Record<string, unknown>;

function context(provider: string, model: string, cache: Partial<RequestContext["cache"]> = {}): RequestContext {
  return {
    model,
    provider,
    prefix: { system: [], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages: [],
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m", affinityKey: "sess-42", ...cache },
  };
}

const part = (text: string): Json => ({ type: "text", text });
const system: Json = { role: "system", content: [part("You are a careful assistant.")] };

/** An OpenAI-format chat request; the overlay is the last content part of the final user message. */
function chat(messages: Json[], overlay?: string, protocol: Protocol = "openai-chat"): WireRequest {
  const list = structuredClone(messages);
  const segments: WireSegment[] = [];
  if (overlay !== undefined) {
    const content = list[list.length - 1]!.content as Json[];
    segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", list.length - 1, "content", content.length] });
    content.push(part(overlay));
  }
  const tools = [{ type: "function", function: { name: "bash", parameters: { type: "object" } } }];
  return { protocol, body: { model: "m", tools, messages: list, stream: true }, headers: {}, segments };
}

/** Turn t adds an assistant message with k(t) tool calls and k(t) tool messages. */
function toolLoop(turns: number, k: (turn: number) => number): WireRequest[] {
  const log: Json[] = [system, { role: "user", content: [part("Fix the build.")] }];
  const out = [chat(log, "day 1")];
  for (let turn = 2; turn <= turns; turn++) {
    const ids = Array.from({ length: k(turn) }, (_, i) => `c${turn}_${i}`);
    log.push({ role: "assistant", content: null, tool_calls: ids.map((id) => ({ id, type: "function", function: { name: "bash", arguments: `{"cmd":"${id}"}` } })) });
    for (const id of ids) log.push({ role: "tool", tool_call_id: id, content: [part(`result ${id}`)] });
    out.push(chat(log, `day ${turn}`));
  }
  return out;
}

function marks(body: Json): string[] {
  return findCacheMarks(body, CHAT_CACHE_ORDER).map((m) => `${m.path.join(".")}:${m.ttl}`);
}

describe("alibaba-breakpoints (Qwen explicit cache)", () => {
  test("20-turn tool loop with 1 to 30 tool messages per turn reads the previous tail entry every turn", () => {
    const perTurn = [0, 30, 1, 19, 20, 21, 7, 25, 2, 14, 30, 9, 18, 3, 28, 11, 5, 22, 30, 1];
    const cache = new LookbackCache();
    let previousTail = -1;
    for (const [i, request] of toolLoop(20, (t) => perTurn[t - 1]!).entries()) {
      const sent = alibabaBreakpoints.apply(request, context("alibaba", "qwen-plus"));
      const result = cache.send(sent.body, CHAT_CACHE_ORDER);
      expect(result.breakpoints.length).toBeLessThanOrEqual(4);
      expect(result.breakpoints).not.toContain(result.blocks.length - 1);
      if (i > 0) expect(result.read).toBe(previousTail);
      previousTail = result.breakpoints.at(-1)!;
      expect(previousTail).toBe(result.blocks.length - 2);
    }
  });

  test("with the chat renderer: a 20-turn conversation (with tool turns) reads the previous tail entry every turn", () => {
    const cache = new LookbackCache();
    const log: Message[] = [];
    let previousTail = -1;
    for (let turn = 1; turn <= 20; turn++) {
      if (turn > 1) {
        const id = `call${turn}`;
        const answer: Message["content"] = turn % 3 === 0 ? [{ type: "tool_use", id, name: "bash", arguments: "{}" }] : [{ type: "text", text: `answer ${turn - 1}` }];
        log.push({ id: `a${turn}`, role: "assistant", content: answer });
        if (turn % 3 === 0) log.push({ id: `r${turn}`, role: "user", content: [{ type: "tool_result", toolUseId: id, content: "ok" }] });
      }
      log.push({ id: `u${turn}`, role: "user", content: [{ type: "text", text: `question ${turn}` }] });
      const ctx: RequestContext = { ...context("alibaba", "qwen-plus"), prefix: { system: [{ id: "s", text: "sys" }], tools: [], fingerprint: "0000000000000000" }, messages: structuredClone(log), overlay: `day ${turn}` };
      const sent = alibabaBreakpoints.apply(renderChat(ctx, pluginServices, { maxTokensField: "max_tokens", usage: qwenUsage }), ctx);
      const result = cache.send(sent.body, CHAT_CACHE_ORDER);
      expect(result.breakpoints.length).toBeLessThanOrEqual(4);
      expect(result.breakpoints).not.toContain(result.blocks.length - 1);
      if (turn > 1) expect(result.read).toBe(previousTail);
      previousTail = result.breakpoints.at(-1)!;
    }
  });

  test("marks: system part, previous tail, tail; 5m even when 1h is asked; overlay unmarked", () => {
    const log = [system, { role: "user", content: [part("q1")] }, { role: "assistant", content: [part("a1")] }, { role: "user", content: [part("q2")] }];
    const sent = alibabaBreakpoints.apply(chat(log, "overlay"), context("alibaba", "qwen-plus", { ttl: "1h" }));
    expect(marks(sent.body)).toEqual(["messages.0.content.0:5m", "messages.1.content.0:5m", "messages.3.content.0:5m"]);
    expect((sent.body.messages as Json[])[3]!.content).toEqual([{ ...part("q2"), cache_control: { type: "ephemeral" } }, part("overlay")]);
  });

  test("string content carries no mark (content is never rewritten)", () => {
    const log = [{ role: "system", content: "sys" }, { role: "user", content: "q" }];
    const request = chat(log);
    expect(alibabaBreakpoints.apply(request, context("alibaba", "qwen-plus")).body).toEqual(request.body);
  });

  test("more than 4 manual marks are refused before sending", () => {
    const log = [system, { role: "user", content: [1, 2, 3, 4, 5].map((n) => ({ ...part(`doc ${n}`), cache_control: { type: "ephemeral" } })) }];
    expect(() => alibabaBreakpoints.apply(chat(log), context("alibaba", "qwen-plus"))).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT" }));
  });
});

describe("affinity keys", () => {
  test("moonshotai: prompt_cache_key, constant across turns", () => {
    const keys = [1, 2, 3].map((n) => moonshotPromptCacheKey.apply(chat([{ role: "user", content: [part(`q${n}`)] }]), context("moonshotai", "kimi-k2")).body.prompt_cache_key);
    expect(keys).toEqual(["sess-42", "sess-42", "sess-42"]);
  });

  test("xai: x-grok-conv-id header on chat, prompt_cache_key on responses, no markers", () => {
    const onChat = xaiConversationId.apply(chat([{ role: "user", content: [part("q")] }]), context("xai", "grok-4"));
    expect(onChat.headers).toEqual({ "x-grok-conv-id": "sess-42" });
    expect(onChat.body.prompt_cache_key).toBeUndefined();
    const responses: WireRequest = { protocol: "openai-responses", body: { model: "grok-4", input: [] }, headers: {}, segments: [] };
    const onResponses = xaiConversationId.apply(responses, context("xai", "grok-4"));
    expect(onResponses.body).toEqual({ model: "grok-4", input: [], prompt_cache_key: "sess-42" });
    expect(onResponses.headers).toEqual({});
    expect(marks(onChat.body)).toEqual([]);
  });

  test("openrouter: session_id on every model; breakpoints only for anthropic/ (TTL as asked) and qwen/ (5m) upstreams", () => {
    const log = [system, { role: "user", content: [part("q1")] }, { role: "assistant", content: [part("a1")] }, { role: "user", content: [part("q2")] }];
    const openai = openrouterCache.apply(chat(log, "now"), context("openrouter", "openai/gpt-5", { ttl: "1h" }));
    expect(openai.body.session_id).toBe("sess-42");
    expect(marks(openai.body)).toEqual([]);
    const claude = openrouterCache.apply(chat(log, "now"), context("openrouter", "anthropic/claude-sonnet-4.5", { ttl: "1h" }));
    expect(claude.body.session_id).toBe("sess-42");
    expect(marks(claude.body)).toEqual(["messages.0.content.0:1h", "messages.1.content.0:1h", "messages.3.content.0:1h"]);
    expect((claude.body.messages as Json[])[0]!.content).toEqual([{ ...part("You are a careful assistant."), cache_control: { type: "ephemeral", ttl: "1h" } }]);
    const qwen = openrouterCache.apply(chat(log, "now"), context("openrouter", "qwen/qwen3-coder", { ttl: "1h" }));
    expect(marks(qwen.body)).toEqual(["messages.0.content.0:5m", "messages.1.content.0:5m", "messages.3.content.0:5m"]);
    const tooLong = openrouterCache.apply(chat(log), context("openrouter", "openai/gpt-5", { affinityKey: "k".repeat(257) }));
    expect(tooLong.body.session_id).toBeUndefined();
  });

  test("registers moonshotai, xai, openrouter and alibaba; none for deepseek", () => {
    expect(strategies.map((s) => s.providers)).toEqual([["moonshotai"], ["xai"], ["openrouter"], ["alibaba"]]);
  });
});
