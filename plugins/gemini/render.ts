/**
 * Renders a RequestContext into a Gemini `generateContent` request body.
 *
 * Layout: `systemInstruction` (one part per system part), `tools` (one
 * `functionDeclarations` list, JSON Schema in `parametersJsonSchema`),
 * `contents` with roles user/model, then `generationConfig`. The body also
 * carries `model` and `stream`: on this wire they name the endpoint
 * (`models/{model}:streamGenerateContent`), and the adapter moves them
 * into the URL instead of the JSON it sends.
 *
 * Tool calls: `functionCall.args` is parsed from the model's raw argument
 * text, keeping its key order (CASES.md case 14). A thinking block with a
 * signature and no text, right before a tool call, is the call's
 * `thoughtSignature` (Gemini 3 requires it back on the same part).
 * @see https://ai.google.dev/api/generate-content
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
import { refuseServerTools } from "../shared/server-tools.ts";
import type { Block, Message, PluginServices, RenderMemo, RenderedMessage, RequestContext, WireRequest, WireSegment } from "../../src/plugin/index.ts";
import { toWireSchema } from "../../src/plugin/index.ts";
import { mergeOptions } from "../merge-options.ts";
import { parseArguments } from "../parse-arguments.ts";

/**
 * Builds the body and its segments (system parts, tools, schema, then content parts).
 * The log goes through `memo` (one per adapter: only new messages are
 * rendered); without one every message is rendered afresh.
 * @throws CachetError SCHEMA_CONTRACT when the output schema breaks Gemini's schema subset.
 */
export function renderGemini(context: RequestContext, services: PluginServices, memo: RenderMemo = services.renderMemo(renderGeminiContent)): WireRequest {
  const segments: WireSegment[] = [];
  const { prefix, generation } = context;
  const body: Record<string, unknown> = { model: context.model };
  if (prefix.system.length > 0) {
    body.systemInstruction = {
      parts: prefix.system.map((part, i) => {
        segments.push({ nodeId: part.id, kind: "system", path: ["systemInstruction", "parts", i] });
        return { text: part.text };
      }),
    };
  }
  refuseServerTools(context, services);
  if (prefix.tools.length > 0) {
    const declarations = prefix.tools.map((tool, i) => {
      segments.push({ nodeId: `tool:${tool.name}`, kind: "tool", path: ["tools", 0, "functionDeclarations", i] });
      const out: Record<string, unknown> = { name: tool.name };
      if (tool.description !== undefined) out.description = tool.description;
      out.parametersJsonSchema = services.canonicalize(tool.parameters);
      return out;
    });
    body.tools = [{ functionDeclarations: declarations }];
  }
  const generationConfig: Record<string, unknown> = {};
  if (generation.maxTokens !== undefined) generationConfig.maxOutputTokens = generation.maxTokens;
  if (generation.temperature !== undefined) generationConfig.temperature = generation.temperature;
  if (prefix.schema) {
    const { schema } = toWireSchema("gemini", prefix.schema.schema);
    segments.push({ nodeId: "schema", kind: "schema", path: ["generationConfig", "responseJsonSchema"] });
    generationConfig.responseMimeType = "application/json";
    generationConfig.responseJsonSchema = services.canonicalize(schema);
  }
  const log = memo.render(context.summary.length === 0 ? context.messages : context.summary.concat(context.messages), 0);
  const contents = log.items;
  for (const segment of log.segments) segments.push(segment);
  if (context.overlay) {
    const last = contents[contents.length - 1];
    const lastLog = context.messages[context.messages.length - 1];
    if (last?.role === "user" && lastLog?.role === "user") {
      const parts = last.parts as Record<string, unknown>[];
      segments.push({ nodeId: "overlay", kind: "overlay", path: ["contents", contents.length - 1, "parts", parts.length] });
      // A new content: the rendered one is shared with later requests, which must not see this overlay.
      contents[contents.length - 1] = { ...last, parts: [...parts, { text: context.overlay }] };
    } else {
      segments.push({ nodeId: "overlay", kind: "overlay", path: ["contents", contents.length, "parts", 0] });
      contents.push({ role: "user", parts: [{ text: context.overlay }] });
    }
  }
  body.contents = contents;
  if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
  body.stream = generation.stream;
  return { protocol: "gemini", body: mergeOptions(body, generation.providerOptions), headers: {}, segments };
}

/**
 * One log message as a Gemini content at index `at` (none when no part of it
 * is sent); `log[0..index]` names the calls its tool results answer.
 */
export function renderGeminiContent(message: Message, at: number, log: readonly Message[], index: number): RenderedMessage {
  const parts: Record<string, unknown>[] = [];
  const segments: WireSegment[] = [];
  message.content.forEach((block, j) => {
    const next = message.content[j + 1];
    if (isCarriedSignature(block) && next?.type === "tool_use") return;
    const previous = message.content[j - 1];
    const name = block.type === "tool_result" ? toolName(log, index, block.toolUseId) : undefined;
    const part = renderPart(block, name, previous && isCarriedSignature(previous) ? previous.signature : undefined);
    if (!part) return;
    segments.push({ nodeId: `${message.id}#${j}`, kind: block.type, path: ["contents", at, "parts", parts.length] });
    parts.push(part);
  });
  return parts.length === 0 ? { items: [], segments: [] } : { items: [{ role: message.role === "assistant" ? "model" : "user", parts }], segments };
}

/**
 * The name of the call a tool result answers: the nearest call with its id at
 * or before message `index` (the one just before, in a well-paired log), else the id itself.
 */
function toolName(log: readonly Message[], index: number, toolUseId: string): string {
  for (let i = index; i >= 0; i--) {
    for (const block of log[i]!.content) if (block.type === "tool_use" && block.id === toolUseId) return block.name;
  }
  return toolUseId;
}

/** A thinking block that only carries the signature of the tool call after it. */
function isCarriedSignature(block: Block): block is Extract<Block, { type: "thinking" }> & { signature: string } {
  return block.type === "thinking" && block.text === "" && block.signature !== undefined;
}

function renderPart(block: Block, toolName: string | undefined, signature: string | undefined): Record<string, unknown> | undefined {
  switch (block.type) {
    case "text":
      return block.text === "" ? undefined : { text: block.text };
    case "image":
      return { inlineData: { mimeType: block.mediaType, data: block.data } };
    case "tool_use": {
      const part: Record<string, unknown> = { functionCall: { id: block.id, name: block.name, args: parseArguments(block.arguments) } };
      if (signature !== undefined) part.thoughtSignature = signature;
      return part;
    }
    case "tool_result":
      return {
        functionResponse: {
          id: block.toolUseId,
          name: toolName ?? block.toolUseId,
          response: block.isError ? { error: block.content } : { output: block.content },
        },
      };
    case "thinking": {
      if (block.text === "") return undefined;
      const part: Record<string, unknown> = { text: block.text, thought: true };
      if (block.signature !== undefined) part.thoughtSignature = block.signature;
      return part;
    }
  }
}
