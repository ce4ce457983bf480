/**
 * The runtime's hash chains (runtime.chainOf): worked out once per request
 * object, and their token total, which follows the links that changed since
 * the conversation's previous request (tokenTotal), equals the sum of their
 * links over random conversations that grow, get edited, marked, shortened
 * and interleave with another; prefixHashes hands out the same hashes, and
 * chainBound an upper bound of the total, without counting anything. A chain
 * only bounded is not taken over uncounted, and what a runtime hashed and
 * counted is kept with its plugin host for the next runtime on it (the daemon's next command).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WireRequest, WireSegment } from "../plugin/wire.ts";
import { countOrEstimate, loadO200k, tokenBound } from "../tokenizer/o200k.ts";
import { estimateText, prefixChain, tokenTotal } from "../wire/prefix-chain.ts";
import { keepBuiltinHost } from "../plugin/loader.ts";
import { openRuntime } from "./runtime.ts";

const home = mkdtempSync(join(tmpdir(), "cachet-chain-total-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("a chain's token total equals the sum of its links, turn after turn of two interleaved conversations", async () => {
  const runtime = await openRuntime({ env: { CACHET_HOME: home }, storePath: ":memory:" });
  try {
    let random = 5;
    const next = () => (random = (random * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const word = () => ["alpha", "beta gamma", "δέλτα", "a longer sentence of several words", ""][Math.floor(next() * 5)]!;
    // Each conversation: its elements and segments, kept as objects from request to request (as the render memo does).
    const conversations = [0, 1].map((c) => ({ messages: [{ role: "user", content: [{ type: "text", text: `first of ${c}` }] }] as Record<string, unknown>[], segments: [] as WireSegment[] }));
    let checked = 0;
    for (let step = 0; step < 300; step++) {
      const conversation = conversations[step % 2]!;
      const { messages } = conversation;
      const r = next();
      if (r < 0.6) messages.push({ role: messages.length % 2 ? "assistant" : "user", content: [{ type: "text", text: `${word()} ${step}` }] });
      else if (r < 0.75 && messages.length > 2) messages.length = 1 + Math.floor(next() * (messages.length - 1));
      else {
        const at = Math.floor(next() * messages.length);
        messages[at] = { ...messages[at], content: [{ type: "text", text: `${word()} edited ${step}` }] };
      }
      while (conversation.segments.length > messages.length) conversation.segments.pop();
      for (let i = conversation.segments.length; i < messages.length; i++) conversation.segments.push({ nodeId: `m${step}-${i}`, kind: "text", path: ["messages", i] });
      // A marked copy of the last message, as a cache strategy makes it.
      const body = { system: [{ type: "text", text: "system" }], messages: messages.slice() };
      if (next() < 0.5) body.messages[body.messages.length - 1] = { ...body.messages.at(-1), cache_control: { type: "ephemeral" } };
      const segments: WireSegment[] = [{ nodeId: "sys", kind: "system", path: ["system", 0] }, ...conversation.segments];
      const wire: WireRequest = { protocol: "anthropic-messages", body, headers: {}, segments };
      // Half the requests are bounded first, as a turn's compaction check does before its request leaves.
      const bound = next() < 0.5 ? await runtime.chainBound(wire) : undefined;
      const chain = await runtime.chainOf(wire);
      await expect(runtime.chainOf(wire)).resolves.toBe(chain);
      if (bound !== undefined) expect({ step, under: tokenTotal(chain) <= bound }).toEqual({ step, under: true });
      expect(runtime.prefixHashes(wire).map((l) => l.prefix)).toEqual(chain.map((l) => l.prefix));
      expect({ step, total: tokenTotal(chain) }).toEqual({ step, total: chain.reduce((n, l) => n + l.tokens, 0) });
      checked++;
    }
    expect(checked).toBe(300);
  } finally {
    await runtime.close();
  }
});

test("chainBound bounds a chain's total without the tokenizer: nothing is counted or stored until chainOf", async () => {
  const runtime = await openRuntime({ env: { CACHET_HOME: home }, storePath: ":memory:" });
  try {
    const texts = ["plain ascii words, a few of them", "δέλτα και άλφα", "日本語のテキスト", "emoji 🎉🎉 and more"];
    const body = { messages: texts.map((text, i) => ({ role: i % 2 ? "assistant" : "user", content: [{ type: "text", text }] })) };
    const segments: WireSegment[] = texts.map((_, i) => ({ nodeId: `m${i}`, kind: "text", path: ["messages", i] }));
    const wire: WireRequest = { protocol: "anthropic-messages", body, headers: {}, segments };
    const bound = await runtime.chainBound(wire);
    const hashes = runtime.prefixHashes(wire).map((l) => l.content);
    expect([...runtime.store.nodeTokens(hashes)]).toEqual([]);
    const total = tokenTotal(await runtime.chainOf(wire));
    expect([...runtime.store.nodeTokens(hashes)]).toHaveLength(texts.length);
    expect(total).toBeGreaterThan(0);
    expect(bound).toBeGreaterThanOrEqual(total);
    // Once counted, the bound is the count itself.
    await expect(runtime.chainBound(wire)).resolves.toBe(total);
  } finally {
    await runtime.close();
  }
});

test("a request only bounded, then a copy of it (what a request:before hook gets), is counted whole", async () => {
  const runtime = await openRuntime({ env: { CACHET_HOME: home }, storePath: ":memory:" });
  try {
    const texts = ["one two three", "four five", "six seven eight nine"];
    const body = { messages: texts.map((text, i) => ({ role: i % 2 ? "assistant" : "user", content: [{ type: "text", text }] })) };
    const segments: WireSegment[] = texts.map((_, i) => ({ nodeId: `m${i}`, kind: "text", path: ["messages", i] }));
    const wire: WireRequest = { protocol: "anthropic-messages", body, headers: {}, segments };
    await runtime.chainBound(wire, true);
    // The bounded request's links were never counted: the copy's chain must not take them over uncounted.
    const chain = await runtime.chainOf(structuredClone(wire));
    expect(chain.map((l) => l.tokens > 0)).toEqual([true, true, true]);
    expect(tokenTotal(chain)).toBe(chain.reduce((n, l) => n + l.tokens, 0));
  } finally {
    await runtime.close();
  }
});

test("the counts and chains a runtime made are kept with its plugin host: the next runtime on a kept host (the daemon's next command) bounds exactly without the store", async () => {
  keepBuiltinHost();
  const texts = ["kept one", "kept two, a little longer", "kept three"];
  const request = (n: number, body?: { messages: Record<string, unknown>[] }): WireRequest => {
    const messages = (body?.messages ?? []).slice(0, n);
    for (let i = messages.length; i < n; i++) messages.push({ role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: texts[i] }] });
    return { protocol: "anthropic-messages", body: { messages }, headers: {}, segments: messages.map((_, i) => ({ nodeId: `k${i}`, kind: "text", path: ["messages", i] })) };
  };
  const first = await openRuntime({ env: { CACHET_HOME: home }, storePath: ":memory:" });
  const earlier = request(2);
  const counted = await first.chainOf(earlier);
  await first.close();
  // A new store that knows no count: what the next runtime knows of the first two texts is the kept memory's.
  const next = await openRuntime({ env: { CACHET_HOME: home }, storePath: ":memory:" });
  try {
    expect(next.host).toBe(first.host);
    const grown = request(3, earlier.body as { messages: Record<string, unknown>[] }) as WireRequest & { body: { messages: unknown[] } };
    const bound = await next.chainBound(grown);
    const chain = await next.chainOf(grown);
    // The earlier links are taken over as they were; the new one is counted, and the whole chain is what hashing
    // and counting the request afresh gives.
    expect(chain.slice(0, 2)).toEqual(counted);
    const count = await loadO200k();
    expect(chain).toEqual(prefixChain(request(3), (_, text) => countOrEstimate(text, count)));
    // Only the new text is bounded by its size: the others' counts were known without asking the store.
    expect(bound).toBe(chain[0]!.tokens + chain[1]!.tokens + tokenBound(estimateText(grown.body.messages[2], "text")));
  } finally {
    await next.close();
  }
});
