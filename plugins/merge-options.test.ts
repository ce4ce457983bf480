/**
 * Provider options never replace or add to a part of the request cachet owns
 * (src/plugin/owned-options.ts): every built-in adapter refuses, with exit 2
 * and one line naming the option and what to use instead, an option setting
 * its system prompt, log, tools, schema, model, stream or a cache marker; the
 * user's own options still reach the body.
 */
import { describe, expect, test } from "bun:test";
import { CachetError, type RequestContext, type WireRequest } from "../src/plugin/index.ts";
import { pluginServices } from "../src/plugin/services.ts";
import { renderAnthropic } from "./anthropic/render.ts";
import { renderGemini } from "./gemini/render.ts";
import { renderChat } from "./openai/chat.ts";
import { renderResponses } from "./openai/responses.ts";
import { chatUsage } from "./openai/usage.ts";

function context(providerOptions: Record<string, unknown>): RequestContext {
  return {
    model: "m",
    provider: "p",
    prefix: { system: [{ id: "sys", text: "You are terse." }], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages: [{ id: "u1", role: "user", content: [{ type: "text", text: "hi" }] }],
    generation: { maxTokens: 64, stream: true, providerOptions },
    cache: { mode: "auto", ttl: "5m" },
  };
}

const ADAPTERS: { name: string; render: (c: RequestContext) => WireRequest; owned: Record<string, unknown> }[] = [
  { name: "anthropic", render: (c) => renderAnthropic(c, pluginServices), owned: { system: "EVIL", messages: [], cache_control: { type: "ephemeral" }, output_config: { format: { type: "json_schema" } }, metadata: { user_id: "mine" } } },
  {
    name: "openai chat",
    render: (c) => renderChat(c, pluginServices, { maxTokensField: "max_completion_tokens", usage: chatUsage }),
    owned: {
      messages: [{ role: "system", content: "EVIL" }],
      tools: [],
      response_format: { type: "json_object" },
      model: "gpt-4o",
      functions: [{ name: "f", parameters: { type: "object" } }],
      function_call: "auto",
      prompt_cache_key: "mine",
      n: 3,
      session_id: "mine",
    },
  },
  { name: "openai responses", render: (c) => renderResponses(c, pluginServices), owned: { instructions: "EVIL", input: "EVIL", previous_response_id: "resp_1", text: { format: { type: "text" } }, prompt_cache_key: "mine" } },
  {
    name: "gemini",
    render: (c) => renderGemini(c, pluginServices),
    owned: { systemInstruction: { parts: [{ text: "EVIL" }] }, system_instruction: { parts: [{ text: "EVIL" }] }, contents: [], tools: [], cachedContent: "cachedContents/x", generationConfig: { responseJsonSchema: {} }, stream: false },
  },
];

describe("owned request parts are refused as provider options on every wire", () => {
  for (const adapter of ADAPTERS) {
    test(`${adapter.name}: ${Object.keys(adapter.owned).join(", ")}`, () => {
      for (const [key, value] of Object.entries(adapter.owned)) {
        let caught: unknown;
        try {
          adapter.render(context({ [key]: value }));
        } catch (error) {
          caught = error;
        }
        expect(caught).toBeInstanceOf(CachetError);
        const error = caught as CachetError;
        expect({ key, code: error.code, exit: error.exitCode, oneLine: !error.message.includes("\n") }).toEqual({ key, code: "BAD_FLAG", exit: 2, oneLine: true });
        expect(error.message).toStartWith(`-o ${key}: cachet sets "${key}`);
        expect(error.hint).toMatch(new RegExp(`^use \\S.* instead of -o ${key}$`));
      }
    });
  }

  test("the user's own options, and the rest of a partly owned object, still reach the body", () => {
    const gemini = renderGemini(context({ generationConfig: { temperature: 0.3 }, safetySettings: [] }), pluginServices).body;
    expect(gemini.generationConfig).toEqual({ maxOutputTokens: 64, temperature: 0.3 });
    expect(gemini.safetySettings).toEqual([]);
    const responses = renderResponses(context({ text: { verbosity: "low" }, reasoning: { effort: "low" } }), pluginServices).body;
    expect([responses.text, responses.reasoning]).toEqual([{ verbosity: "low" }, { effort: "low" }]);
    const anthropic = renderAnthropic(context({ tool_choice: { type: "auto" }, top_k: 40 }), pluginServices).body;
    expect([anthropic.tool_choice, anthropic.top_k]).toEqual([{ type: "auto" }, 40]);
    const fresh = renderAnthropic(context({ metadata: {} }), pluginServices).body;
    expect(fresh.metadata).toEqual({});
  });

  test("the message names what cachet sets, and its hint what to use instead", () => {
    /** The refusal's line and hint. */
    const refusal = (render: () => unknown): { message: string; hint: string | undefined } => {
      try {
        render();
      } catch (error) {
        return { message: (error as CachetError).message, hint: (error as CachetError).hint };
      }
      throw new Error("rendered without a refusal");
    };
    const chat = { maxTokensField: "max_completion_tokens", usage: chatUsage } as const;
    expect(refusal(() => renderGemini(context({ systemInstruction: { parts: [{ text: "EVIL" }] } }), pluginServices))).toEqual({
      message: '-o systemInstruction: cachet sets "systemInstruction" itself (it is part of the session and its cached prefix)',
      hint: "use -s/--system instead of -o systemInstruction",
    });
    expect(refusal(() => renderResponses(context({ text: { format: { type: "text" } } }), pluginServices))).toEqual({
      message: '-o text: cachet sets "text.format" itself (it is part of the session and its cached prefix)',
      hint: "use --schema instead of -o text",
    });
    expect(refusal(() => renderAnthropic(context({ metadata: { user_id: "mine" } }), pluginServices))).toEqual({
      message: '-o metadata: cachet sets "metadata.user_id" itself (it is the session\'s cache affinity key)',
      hint: "use --cache auto|off (cachet places the session's affinity key) instead of -o metadata",
    });
    expect(refusal(() => renderChat(context({ n: 3 }), pluginServices, chat))).toEqual({
      message: '-o n: cachet sets "n" itself (cachet reads and stores one choice per turn)',
      hint: "use one request per answer (leave n unset) instead of -o n",
    });
    expect(refusal(() => renderChat(context({ functions: [] }), pluginServices, chat))).toEqual({
      message: '-o functions: cachet sets "functions" itself (it is part of the session and its cached prefix)',
      hint: "use --tools instead of -o functions",
    });
    expect(refusal(() => renderGemini(context({ generationConfig: { temperature: 0.3, candidateCount: 2 } }), pluginServices))).toEqual({
      message: '-o generationConfig: cachet sets "generationConfig.candidateCount" itself (cachet reads and stores one choice per turn)',
      hint: "use one request per answer (leave candidateCount unset) instead of -o generationConfig",
    });
    expect(refusal(() => renderGemini(context({ generation_config: "x" }), pluginServices)).message).toStartWith('-o generation_config: cachet sets "generation_config" itself');
  });
});
