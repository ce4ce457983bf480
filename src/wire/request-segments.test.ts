import { describe, expect, test } from "bun:test";
import { requestSegments } from "./request-segments.ts";

const ids = (segments: ReturnType<typeof requestSegments>) => segments.map((s) => `${s.kind}:${s.nodeId}`);

describe("requestSegments: a client's body in the provider's cache order", () => {
  test("anthropic: tools, system, schema, then each message block (string content is one element)", () => {
    const body = {
      tools: [{ name: "read" }, { name: "write" }],
      system: [{ type: "text", text: "a" }],
      output_config: { format: {} },
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "thinking" }, { type: "tool_use" }] },
        { role: "user", content: [{ type: "tool_result" }, { type: "image" }] },
      ],
    };
    expect(ids(requestSegments("anthropic-messages", body))).toEqual([
      "tool:tool:read",
      "tool:tool:write",
      "system:system.0",
      "schema:schema",
      "text:messages.0",
      "thinking:messages.1.content.0",
      "tool_use:messages.1.content.1",
      "tool_result:messages.2.content.0",
      "image:messages.2.content.1",
    ]);
    expect(requestSegments("anthropic-messages", { system: "s" })[0]).toEqual({ nodeId: "system", kind: "system", path: ["system"] });
  });

  test("openai chat: leading system/developer messages, tools, response_format, then messages (user parts one by one)", () => {
    const body = {
      messages: [{ role: "system", content: "s" }, { role: "developer", content: "d" }, { role: "user", content: [{ type: "text" }, { type: "image_url" }] }, { role: "assistant", content: "x" }, { role: "tool", content: "r" }],
      tools: [{ type: "function", function: { name: "f" } }],
      response_format: { type: "json_schema" },
    };
    expect(ids(requestSegments("openai-chat", body))).toEqual(["system:messages.0", "system:messages.1", "tool:tool:f", "schema:schema", "text:messages.2.content.0", "image:messages.2.content.1", "message:messages.3", "tool_result:messages.4"]);
  });

  test("openai responses: instructions, tools, text.format, then input items", () => {
    const body = { instructions: "i", tools: [{ type: "function", name: "f" }], text: { format: { type: "json_schema" } }, input: [{ role: "user", content: "q" }, { type: "function_call" }, { type: "function_call_output" }, { type: "reasoning" }] };
    expect(ids(requestSegments("openai-responses", body))).toEqual(["system:instructions", "tool:tool:f", "schema:schema", "message:input.0", "tool_use:input.1", "tool_result:input.2", "thinking:input.3"]);
    expect(ids(requestSegments("openai-responses", { input: "just text" }))).toEqual(["text:input"]);
  });

  test("gemini: systemInstruction parts, function declarations, response schema, then content parts", () => {
    const body = {
      systemInstruction: { parts: [{ text: "s" }] },
      tools: [{ functionDeclarations: [{ name: "f" }, { name: "g" }] }, { googleSearch: {} }],
      generationConfig: { responseJsonSchema: {} },
      contents: [{ role: "user", parts: [{ text: "q" }, { inlineData: {} }] }, { role: "model", parts: [{ functionCall: {} }, { text: "t", thought: true }] }, { role: "user", parts: [{ functionResponse: {} }] }],
    };
    expect(ids(requestSegments("gemini", body))).toEqual([
      "system:system.0",
      "tool:tool:f",
      "tool:tool:g",
      "tool:tools.1",
      "schema:schema",
      "text:contents.0.parts.0",
      "image:contents.0.parts.1",
      "tool_use:contents.1.parts.0",
      "thinking:contents.1.parts.1",
      "tool_result:contents.2.parts.0",
    ]);
  });

  test("members of unexpected shapes are skipped, never thrown on", () => {
    expect(requestSegments("anthropic-messages", { messages: "nope", tools: 3, system: null })).toEqual([]);
    expect(requestSegments("gemini", { contents: [null, { parts: "x" }] })).toEqual([]);
  });
});
