import { describe, expect, test } from "bun:test";
import type { Protocol, RequestContext, WireRequest } from "../../src/plugin/index.ts";
import { strategies } from "./cache-strategy.ts";

const [strategy] = strategies;

function context(turn: number, cache: Partial<RequestContext["cache"]> = {}): RequestContext {
  return {
    model: "gpt-4o",
    provider: "openai",
    prefix: { system: [], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages: [],
    generation: { stream: turn < 4, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m", affinityKey: "01JSESSION", ...cache },
  };
}

function chat(turn: number): WireRequest {
  const messages = [{ role: "system", content: "You are terse." }];
  for (let i = 1; i <= turn; i++) messages.push({ role: "user", content: `question ${i}` });
  const body: Record<string, unknown> = { model: "gpt-4o", messages, stream: turn < 4 };
  if (turn < 4) body.stream_options = { include_usage: true };
  return { protocol: "openai-chat", body, headers: {}, segments: [] };
}

function responses(turn: number): WireRequest {
  const input = Array.from({ length: turn }, (_, i) => ({ role: "user", content: [{ type: "input_text", text: `question ${i + 1}` }] }));
  return { protocol: "openai-responses", body: { model: "gpt-5", instructions: "You are terse.", input, stream: turn < 4 }, headers: {}, segments: [] };
}

describe("openai-prompt-cache-key (case 18)", () => {
  test("applies to the openai (chat) and openai-responses providers", () => {
    expect(strategies).toHaveLength(1);
    expect(strategy!.id).toBe("openai-prompt-cache-key");
    expect(strategy!.protocols).toEqual<Protocol[]>(["openai-chat", "openai-responses"]);
    expect(strategy!.providers).toEqual(["openai", "openai-responses"]);
  });

  for (const [name, build] of [["chat completions", chat], ["responses", responses]] as const) {
    test(`${name}: three streamed turns and one non-streamed carry the same prompt_cache_key`, () => {
      const keys = [1, 2, 3, 4].map((turn) => strategy!.apply(build(turn), context(turn)).body.prompt_cache_key);
      expect(keys).toEqual(["01JSESSION", "01JSESSION", "01JSESSION", "01JSESSION"]);
    });
  }

  test("adds only the key: the rest of the body is byte-identical and the input is not changed", () => {
    const request = chat(2);
    const before = JSON.stringify(request);
    const sent = strategy!.apply(request, context(2));
    expect(JSON.stringify(request)).toBe(before);
    const { prompt_cache_key, ...rest } = sent.body;
    expect(prompt_cache_key).toBe("01JSESSION");
    expect(JSON.stringify(rest)).toBe(JSON.stringify(request.body));
  });

  test("a key set by the user through provider options is kept", () => {
    const request = chat(1);
    request.body.prompt_cache_key = "mine";
    expect(strategy!.apply(request, context(1)).body.prompt_cache_key).toBe("mine");
  });

  test("--cache off and a missing affinity key leave the request untouched", () => {
    const request = chat(1);
    expect(strategy!.apply(request, context(1, { mode: "off" }))).toBe(request);
    expect(strategy!.apply(request, context(1, { affinityKey: undefined }))).toBe(request);
  });
});
