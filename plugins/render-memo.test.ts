/**
 * The render memo (src/plugin/render-memo.ts) never changes the bytes sent:
 * for every built-in adapter, over random sessions that grow, fork, edit a
 * message, compact (summary rewritten, oldest log dropped) and carry an
 * incomplete answer, a render through the adapter's long-lived memo is
 * byte-identical (body and segments) to a fresh render of the same context,
 * and the hash chain computed with the chain's own memory of the previous
 * request (which skips elements by identity) equals a chain computed afresh.
 */
import { describe, expect, test } from "bun:test";
import type { Block, Message, RequestContext, WireRequest } from "../src/plugin/index.ts";
import { renderMemo } from "../src/plugin/render-memo.ts";
import { pluginServices } from "../src/plugin/services.ts";
import { buildPrefix } from "../src/context/prefix.ts";
import { chainMemo, prefixChain } from "../src/wire/prefix-chain.ts";
import { renderAnthropic, renderAnthropicMessage } from "./anthropic/render.ts";
import { renderGemini, renderGeminiContent } from "./gemini/render.ts";
import { chatMemo, renderChat, type ChatDialect } from "./openai/chat.ts";
import { renderResponses, renderResponsesItems } from "./openai/responses.ts";
import { chatUsage } from "./openai/usage.ts";
import { deepseekUsage } from "./openai-compatible/usage.ts";
import { prng } from "../test/prng.ts";

const openaiDialect: ChatDialect = { maxTokensField: "max_completion_tokens", usage: chatUsage };
const deepseekDialect: ChatDialect = { maxTokensField: "max_tokens", usage: deepseekUsage, reasoningField: "reasoning_content" };

/** Each adapter's render with a long-lived memo, and its render from scratch. */
const ADAPTERS: { name: string; memoized: () => (c: RequestContext) => WireRequest; fresh: (c: RequestContext) => WireRequest }[] = [
  {
    name: "anthropic",
    memoized: () => {
      const memo = pluginServices.renderMemo(renderAnthropicMessage);
      return (c) => renderAnthropic(c, pluginServices, memo);
    },
    fresh: (c) => renderAnthropic(c, pluginServices),
  },
  {
    name: "openai chat",
    memoized: () => {
      const memo = chatMemo(pluginServices, openaiDialect);
      return (c) => renderChat(c, pluginServices, openaiDialect, memo);
    },
    fresh: (c) => renderChat(c, pluginServices, openaiDialect),
  },
  {
    name: "deepseek (openai-compatible chat)",
    memoized: () => {
      const memo = chatMemo(pluginServices, deepseekDialect);
      return (c) => renderChat(c, pluginServices, deepseekDialect, memo);
    },
    fresh: (c) => renderChat(c, pluginServices, deepseekDialect),
  },
  {
    name: "openai responses",
    memoized: () => {
      const memo = pluginServices.renderMemo(renderResponsesItems);
      return (c) => renderResponses(c, pluginServices, memo);
    },
    fresh: (c) => renderResponses(c, pluginServices),
  },
  {
    name: "gemini",
    memoized: () => {
      const memo = pluginServices.renderMemo(renderGeminiContent);
      return (c) => renderGemini(c, pluginServices, memo);
    },
    fresh: (c) => renderGemini(c, pluginServices),
  },
];

const WORDS = ["alpha", "beta", " ", "", "gamma ray", "δέλτα", "emoji 🎉", "quote \" and \\ slash", "\n"];

/** Random sessions: each step yields the context of one request. */
function* session(seed: number, steps: number): Generator<RequestContext> {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  let n = 0;
  const id = (p: string) => `${p}${seed}-${n++}`;
  const text = (): Block => ({ type: "text", text: pick(WORDS) + pick(WORDS) });
  let log: Message[] = [];
  let summary: Message[] = [];
  const branches: Message[][] = [];
  const prefix = buildPrefix({
    system: ["You are terse.", "Second part."],
    tools: [{ name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } } } }],
  });
  for (let step = 0; step < steps; step++) {
    const r = random();
    if (r < 0.45 || log.length < 2) {
      // A normal turn: maybe tool results for the last answer's calls, then the user's text.
      const last = log.at(-1);
      const calls = last?.role === "assistant" ? last.content.filter((b) => b.type === "tool_use") : [];
      const results: Block[] = calls.map((c) => ({ type: "tool_result", toolUseId: (c as { id: string }).id, content: pick(WORDS), ...(random() < 0.2 ? { isError: true } : {}) }));
      if (last?.role === "user") log = [...log, { id: id("a"), role: "assistant", content: [text()] }];
      log = [...log, { id: id("u"), role: "user", content: [...results, text(), ...(random() < 0.2 ? [text()] : [])] }];
    } else if (r < 0.7) {
      // An answer: text (signed or not), thinking (signed or not), tool calls; sometimes cut (incomplete).
      if (log.at(-1)?.role === "assistant") continue;
      const content: Block[] = [];
      if (random() < 0.3) content.push({ type: "thinking", text: random() < 0.3 ? "" : pick(WORDS), ...(random() < 0.6 ? { signature: id("sig") } : {}) });
      if (random() < 0.8) content.push(random() < 0.3 ? { type: "text", text: pick(WORDS), signature: id("tsig") } : text());
      if (random() < 0.4) content.push({ type: "tool_use", id: id("call"), name: pick(["read", "write"]), arguments: pick(['{"path":"a"}', '{"b":1,"a":2}', "{}"]) });
      const answer: Message = { id: id("a"), role: "assistant", content, ...(random() < 0.1 ? { incomplete: true } : {}) };
      log = [...log, answer];
      if (random() < 0.5) yield* requests(log);
      // The user answers (tool results where calls are pending).
      const calls = content.filter((b) => b.type === "tool_use");
      log = [...log, { id: id("u"), role: "user", content: calls.length ? calls.map((c) => ({ type: "tool_result", toolUseId: (c as { id: string }).id, content: "ok" })) : [text()] }];
    } else if (r < 0.8) {
      // Fork: go back to a shorter branch that shares the leading message objects, or keep this one for later.
      branches.push(log);
      const cut = 1 + Math.floor(random() * (log.length - 1));
      log = random() < 0.5 && branches.length > 1 ? pick(branches) : log.slice(0, cut);
    } else if (r < 0.9) {
      // Edit: a message replaced by a new object with other content (what a resumed or rewritten log looks like).
      const at = Math.floor(random() * log.length);
      const old = log[at]!;
      log = [...log.slice(0, at), { ...old, content: old.content.map((b) => (b.type === "text" ? { ...b, text: b.text + "!" } : b)) }, ...log.slice(at + 1)];
    } else {
      // Compaction-style rewrite: the summary zone is appended to, the oldest log messages dropped.
      const drop = Math.max(1, Math.floor(log.length / 2));
      summary = [...summary, { id: id("s"), role: "user", content: [{ type: "text", text: `summary of ${drop}` }] }];
      log = log.slice(drop);
      while (log.length > 0 && log[0]!.role === "user" && log[0]!.content.some((b) => b.type === "tool_result")) log = log.slice(1);
    }
    yield* requests(log);
  }

  function* requests(messages: Message[]): Generator<RequestContext> {
    const overlay = random() < 0.5 ? `overlay ${n}` : undefined;
    yield {
      model: "m",
      provider: "p",
      prefix,
      summary,
      messages,
      ...(overlay ? { overlay } : {}),
      generation: { stream: true, providerOptions: random() < 0.2 ? { top_k: 3 } : {} },
      cache: { mode: "auto", ttl: "5m" },
    };
  }
}

describe("render memo", () => {
  for (const adapter of ADAPTERS) {
    test(`${adapter.name}: every render through the memo is byte-identical to a fresh render (80 random sessions)`, () => {
      let requests = 0;
      for (let seed = 1; seed <= 80; seed++) {
        const render = adapter.memoized();
        const chains = chainMemo();
        for (const context of session(seed, 40)) {
          const memoized = render(context);
          const fresh = adapter.fresh(context);
          const same = JSON.stringify(memoized.body) === JSON.stringify(fresh.body) && JSON.stringify(memoized.segments) === JSON.stringify(fresh.segments);
          if (!same) expect({ seed, request: requests, body: memoized.body, segments: memoized.segments }).toEqual({ seed, request: requests, body: fresh.body, segments: fresh.segments });
          const chain = JSON.stringify(prefixChain(memoized, (_, text) => text.length, chains));
          if (chain !== JSON.stringify(prefixChain(fresh, (_, text) => text.length))) expect({ seed, request: requests, chain }).toEqual({ seed, request: requests, chain: JSON.stringify(prefixChain(fresh, (_, text) => text.length)) });
          requests++;
        }
      }
      expect(requests).toBeGreaterThan(80 * 40);
    });
  }

  test("renders only the messages after the longest run of the same leading objects", () => {
    const rendered: string[] = [];
    const memo = renderMemo((message, at) => {
      rendered.push(message.id);
      return { items: [{ id: message.id }], segments: [{ nodeId: message.id, kind: "message", path: ["messages", at] }] };
    });
    const m = (id: string): Message => ({ id, role: "user", content: [{ type: "text", text: id }] });
    const [a, b, c, d] = [m("a"), m("b"), m("c"), m("d")];
    expect(memo.render([a, b], 1).items).toEqual([{ id: "a" }, { id: "b" }]);
    expect(memo.render([a, b, c], 1).segments.map((s) => s.path)).toEqual([["messages", 1], ["messages", 2], ["messages", 3]]);
    expect(rendered).toEqual(["a", "b", "c"]);
    // A fork from b: c is dropped, d rendered; an edited b (new object) is rendered again, and so is what follows it.
    memo.render([a, b, d], 1);
    memo.render([a, { ...b }, d], 1);
    expect(rendered).toEqual(["a", "b", "c", "d", "b", "d"]);
    // Another start index (a changed system prompt count) renders everything again.
    memo.render([a], 0);
    expect(rendered.slice(6)).toEqual(["a"]);
    // An incomplete message is rendered every time.
    const cut: Message = { ...m("e"), incomplete: true };
    memo.render([a, cut], 0);
    memo.render([a, cut], 0);
    expect(rendered.slice(7)).toEqual(["e", "e"]);
  });

  test("conversations rendered in turn each keep their render (a process serving several sessions)", () => {
    const rendered: string[] = [];
    const memo = renderMemo((message, at) => {
      rendered.push(message.id);
      return { items: [{ id: message.id }], segments: [{ nodeId: message.id, kind: "message", path: ["messages", at] }] };
    });
    const m = (id: string): Message => ({ id, role: "user", content: [] });
    const [a1, a2, b1, b2] = [m("a1"), m("a2"), m("b1"), m("b2")];
    memo.render([a1], 0);
    memo.render([b1], 0);
    memo.render([a1, a2], 0);
    memo.render([b1, b2], 0);
    expect(rendered).toEqual(["a1", "b1", "a2", "b2"]);
  });

  test("the arrays it returns are the caller's: pushing onto them does not reach the next render", () => {
    const memo = renderMemo((message, at) => ({ items: [{ id: message.id }], segments: [{ nodeId: message.id, kind: "message", path: ["messages", at] }] }));
    const a: Message = { id: "a", role: "user", content: [] };
    const first = memo.render([a], 0);
    first.items.push({ id: "overlay" });
    first.segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", 1] });
    expect(memo.render([a], 0)).toEqual({ items: [{ id: "a" }], segments: [{ nodeId: "a", kind: "message", path: ["messages", 0] }] });
  });
});
