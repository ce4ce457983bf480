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
 * text, keeping its key order (CASES.md case 14). A signature goes back on
 * the part it came on (Gemini 3 checks the first `functionCall` part of each
 * step): a tool call's own signature on its `functionCall` part, a thinking
 * block's on its thought part, a text block's on its text part (Gemini 3
 * signs an answer's text; sending it back keeps the model's reasoning
 * across turns, as the official SDK does). Sessions stored before calls kept their own
 * signature hold it on the thinking block just before the call (text-less, or
 * merged into the thought text before it); since Gemini 3 signs the call
 * whenever a step has one, that signature is replayed on the call instead.
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
    const name = block.type === "tool_result" ? toolName(log, index, block.toolUseId) : undefined;
    const part = renderPart(block, name, signatureOf(message.content, j));
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

/**
 * The signature replayed on block `j`'s part: its own, except for a stored
 * thinking block followed by an unsigned call, whose signature is the call's.
 */
function signatureOf(content: readonly Block[], j: number): string | undefined {
  const block = content[j]!;
  if (block.type === "text") return block.signature;
  if (block.type === "thinking") return signsNextCall(block, content[j + 1]) ? undefined : block.signature;
  if (block.type !== "tool_use") return undefined;
  if (block.signature !== undefined) return block.signature;
  const previous = content[j - 1];
  return previous?.type === "thinking" && signsNextCall(previous, block) ? previous.signature : undefined;
}

/** A signed thinking block right before a call that has no signature of its own (sessions stored before calls kept theirs). */
function signsNextCall(block: Block, next: Block | undefined): boolean {
  return block.type === "thinking" && block.signature !== undefined && next?.type === "tool_use" && next.signature === undefined;
}

function renderPart(block: Block, toolName: string | undefined, signature: string | undefined): Record<string, unknown> | undefined {
  switch (block.type) {
    case "text": {
      if (block.text === "") return undefined;
      const part: Record<string, unknown> = { text: block.text };
      if (signature !== undefined) part.thoughtSignature = signature;
      return part;
    }
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
      if (signature !== undefined) part.thoughtSignature = signature;
      return part;
    }
  }
}
