/**
 * Contract suite run against every built-in cache strategy: pure, deterministic,
 * only adds markers and keys, leaves the overlay unmarked, does nothing with
 * `--cache off`; and implicit-cache providers (Gemini, DeepSeek) get none.
 */
import { describe, expect, test } from "bun:test";
import type { CacheStrategySpec, Protocol, RequestContext, WireRequest } from "../../src/plugin/index.ts";
import { strategies as anthropic } from "../anthropic/cache-strategy.ts";
import { strategies as openaiCompatible } from "../openai-compatible/cache-strategy.ts";
import { strategies as openai } from "../openai/cache-strategy.ts";
import { elementAt } from "./breakpoints.ts";

const ALL: CacheStrategySpec[] = [...anthropic, ...openai, ...openaiCompatible];

/** Which strategies the host would run (same rule as PluginHost.strategiesFor). */
function applicable(protocol: Protocol, provider: string): string[] {
  return ALL.filter((s) => s.protocols.includes(protocol) && (!s.providers || s.providers.includes(provider))).map((s) => s.id);
}

const MODELS: Record<string, string> = { anthropic: "claude-sonnet-4-5", openai: "gpt-5", moonshotai: "kimi-k2", xai: "grok-4", openrouter: "anthropic/claude-sonnet-4.5", alibaba: "qwen-plus" };

function context(provider: string, mode: "auto" | "off" = "auto"): RequestContext {
  return {
    model: MODELS[provider] ?? provider,
    provider,
    prefix: { system: [], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages: [],
    generation: { stream: true, providerOptions: {} },
    cache: { mode, ttl: "1h", affinityKey: "session-7" },
  };
}

/** A three-message request of the protocol's documented shape, the overlay last. */
function request(protocol: Protocol): WireRequest {
  const text = (t: string) => ({ type: protocol === "openai-responses" ? "input_text" : "text", text: t });
  const messages = [
    { role: "user", content: [text("q1")] },
    { role: "assistant", content: [{ type: protocol === "openai-responses" ? "output_text" : "text", text: "a1" }] },
    { role: "user", content: [text("q2"), text("OVERLAY")] },
  ];
  const overlay = { nodeId: "overlay", kind: "overlay" as const, path: [protocol === "openai-responses" ? "input" : "messages", 2, "content", 1] };
  if (protocol === "anthropic-messages") {
    return { protocol, body: { model: "m", max_tokens: 10, tools: [{ name: "t", input_schema: { type: "object" } }], system: [text("sys")], messages }, headers: {}, segments: [overlay] };
  }
  if (protocol === "openai-responses") return { protocol, body: { model: "m", instructions: "sys", input: messages }, headers: {}, segments: [overlay] };
  return { protocol, body: { model: "m", messages: [{ role: "system", content: [text("sys")] }, ...messages] }, headers: {}, segments: [{ ...overlay, path: ["messages", 3, "content", 1] }] };
}

const ADDED_BODY_KEYS = ["prompt_cache_key", "session_id", "metadata"];

function stripAdded(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === "cache_control" ? undefined : v)));
}

describe("cache strategy contract", () => {
  const pairs = ALL.flatMap((s) => s.protocols.map((protocol) => [s, protocol, s.providers?.[0] ?? "anthropic"] as const));
  for (const [strategy, protocol, provider] of pairs) {
    describe(`${strategy.id} on ${protocol} (${provider})`, () => {
      test("pure, deterministic, adds something, and only adds", () => {
        const wire = request(protocol);
        const before = JSON.stringify(wire);
        const a = strategy.apply(wire, context(provider));
        const b = strategy.apply(wire, context(provider));
        expect(JSON.stringify(wire)).toBe(before);
        expect(JSON.stringify(a)).toBe(JSON.stringify(b));
        expect(JSON.stringify(a)).not.toBe(before);
        const body = stripAdded(a.body) as Record<string, unknown>;
        for (const key of ADDED_BODY_KEYS) if (!(key in wire.body)) delete body[key];
        expect(body).toEqual(wire.body);
        for (const [name, value] of Object.entries(wire.headers)) expect(a.headers[name]).toBe(value);
        expect(a.segments).toEqual(wire.segments);
      });

      test("never marks the overlay", () => {
        const wire = request(protocol);
        const sent = strategy.apply(wire, context(provider));
        for (const segment of wire.segments) expect(elementAt(sent.body, segment.path)?.cache_control).toBeUndefined();
      });

      test("--cache off returns the request untouched", () => {
        const wire = request(protocol);
        expect(strategy.apply(wire, context(provider, "off"))).toBe(wire);
      });
    });
  }

  test("implicit-cache providers get no strategy: gemini (google), deepseek", () => {
    expect(applicable("gemini", "google")).toEqual([]);
    expect(applicable("openai-chat", "deepseek")).toEqual([]);
    expect(applicable("openai-responses", "deepseek")).toEqual([]);
  });

  test("each provider gets exactly its own strategy", () => {
    expect(applicable("anthropic-messages", "anthropic")).toEqual(["anthropic-breakpoints"]);
    expect(applicable("openai-chat", "openai")).toEqual(["openai-prompt-cache-key"]);
    expect(applicable("openai-responses", "openai")).toEqual(["openai-prompt-cache-key"]);
    expect(applicable("openai-chat", "moonshotai")).toEqual(["moonshotai-prompt-cache-key"]);
    expect(applicable("openai-chat", "xai")).toEqual(["xai-conversation-id"]);
    expect(applicable("openai-chat", "openrouter")).toEqual(["openrouter-cache"]);
    expect(applicable("openai-chat", "alibaba")).toEqual(["alibaba-breakpoints"]);
    expect(applicable("openai-chat", "acme")).toEqual([]);
  });
});
