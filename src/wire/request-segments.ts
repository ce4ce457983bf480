/**
 * The cacheable elements of a wire request body written by any client (not
 * rendered by cachet): where each tool, system part, schema and message block
 * sits, in the provider's cache order. With these, a body received by
 * `cachet proxy` gets the same hash chain, divergence finder and `cachet why`
 * as cachet's own requests.
 *
 * Node ids are the element's place in the body (`system.0`, `tool:NAME`,
 * `messages.3.content.1`), so two requests of one conversation name the same
 * element alike as long as it did not move.
 * @see https://docs.claude.com/en/docs/build-with-claude/prompt-caching (cache order: tools, system, messages)
 * @see https://platform.openai.com/docs/guides/prompt-caching (the prompt prefix: messages, tools, schema)
 * @see https://ai.google.dev/gemini-api/docs/caching (implicit caching of the request prefix)
 */
import type { NodeKind } from "../context/types.ts";
import type { Protocol, WireSegment } from "../plugin/wire.ts";

/**
 * The segments of `body` for `protocol`, in the provider's cache order. Pure;
 * never throws: members of unexpected shapes are skipped (the provider, not
 * the proxy, judges a request).
 */
export function requestSegments(protocol: Protocol, body: Record<string, unknown>): WireSegment[] {
  switch (protocol) {
    case "anthropic-messages":
      return anthropicSegments(body);
    case "openai-chat":
      return chatSegments(body);
    case "openai-responses":
      return responsesSegments(body);
    case "gemini":
      return geminiSegments(body);
  }
}

/** Kinds of the head of a request (system, tools, schema): a change there is a prefix change, not history. */
export const HEAD_KINDS: ReadonlySet<string> = new Set(["system", "tool", "schema"]);

function anthropicSegments(body: Record<string, unknown>): WireSegment[] {
  const out: WireSegment[] = [];
  tools(body.tools, ["tools"], out);
  const system = body.system;
  if (typeof system === "string") out.push({ nodeId: "system", kind: "system", path: ["system"] });
  else if (Array.isArray(system)) system.forEach((_, i) => out.push({ nodeId: `system.${i}`, kind: "system", path: ["system", i] }));
  // Structured output is injected into the system prompt by the API: it caches after system, before messages.
  if (body.output_config !== undefined) out.push({ nodeId: "schema", kind: "schema", path: ["output_config"] });
  arrayOf(body.messages).forEach((message, i) => {
    const content = (message as { content?: unknown } | null)?.content;
    if (typeof content === "string") out.push({ nodeId: `messages.${i}`, kind: "text", path: ["messages", i, "content"] });
    else arrayOf(content).forEach((block, j) => out.push({ nodeId: `messages.${i}.content.${j}`, kind: blockKind(block), path: ["messages", i, "content", j] }));
  });
  return out;
}

function chatSegments(body: Record<string, unknown>): WireSegment[] {
  const out: WireSegment[] = [];
  const messages = arrayOf(body.messages);
  let head = 0;
  while (head < messages.length && isSystemRole(messages[head])) {
    out.push({ nodeId: `messages.${head}`, kind: "system", path: ["messages", head] });
    head++;
  }
  tools(body.tools, ["tools"], out);
  if (body.response_format !== undefined) out.push({ nodeId: "schema", kind: "schema", path: ["response_format"] });
  for (let i = head; i < messages.length; i++) {
    const message = messages[i] as { role?: unknown; content?: unknown } | null;
    const content = message?.content;
    if (message?.role === "user" && Array.isArray(content)) {
      content.forEach((part, j) => out.push({ nodeId: `messages.${i}.content.${j}`, kind: blockKind(part), path: ["messages", i, "content", j] }));
    } else {
      out.push({ nodeId: `messages.${i}`, kind: message?.role === "tool" ? "tool_result" : "message", path: ["messages", i] });
    }
  }
  return out;
}

function responsesSegments(body: Record<string, unknown>): WireSegment[] {
  const out: WireSegment[] = [];
  if (body.instructions !== undefined && body.instructions !== null) out.push({ nodeId: "instructions", kind: "system", path: ["instructions"] });
  const input = body.input;
  const items = arrayOf(input);
  let head = 0;
  while (head < items.length && isSystemRole(items[head])) {
    out.push({ nodeId: `input.${head}`, kind: "system", path: ["input", head] });
    head++;
  }
  tools(body.tools, ["tools"], out);
  const format = (body.text as { format?: unknown } | undefined)?.format;
  if (format !== undefined) out.push({ nodeId: "schema", kind: "schema", path: ["text"] });
  if (typeof input === "string") out.push({ nodeId: "input", kind: "text", path: ["input"] });
  for (let i = head; i < items.length; i++) out.push({ nodeId: `input.${i}`, kind: itemKind(items[i]), path: ["input", i] });
  return out;
}

function geminiSegments(body: Record<string, unknown>): WireSegment[] {
  const out: WireSegment[] = [];
  const system = body.systemInstruction ?? body.system_instruction;
  const systemKey = body.systemInstruction !== undefined ? "systemInstruction" : "system_instruction";
  arrayOf((system as { parts?: unknown } | undefined)?.parts).forEach((_, i) => out.push({ nodeId: `system.${i}`, kind: "system", path: [systemKey, "parts", i] }));
  arrayOf(body.tools).forEach((tool, k) => {
    const declarations = (tool as { functionDeclarations?: unknown } | null)?.functionDeclarations;
    if (Array.isArray(declarations)) tools(declarations, ["tools", k, "functionDeclarations"], out);
    else out.push({ nodeId: `tools.${k}`, kind: "tool", path: ["tools", k] });
  });
  const config = body.generationConfig as Record<string, unknown> | undefined;
  for (const key of ["responseJsonSchema", "responseSchema"]) {
    if (config?.[key] !== undefined) out.push({ nodeId: "schema", kind: "schema", path: ["generationConfig", key] });
  }
  arrayOf(body.contents).forEach((content, i) => {
    arrayOf((content as { parts?: unknown } | null)?.parts).forEach((part, j) => out.push({ nodeId: `contents.${i}.parts.${j}`, kind: partKind(part), path: ["contents", i, "parts", j] }));
  });
  return out;
}

function tools(value: unknown, at: (string | number)[], out: WireSegment[]): void {
  arrayOf(value).forEach((tool, i) => {
    const t = tool as { name?: unknown; function?: { name?: unknown } } | null;
    const name = typeof t?.name === "string" ? t.name : typeof t?.function?.name === "string" ? t.function.name : `${i}`;
    out.push({ nodeId: `tool:${name}`, kind: "tool", path: [...at, i] });
  });
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function isSystemRole(message: unknown): boolean {
  const role = (message as { role?: unknown } | null)?.role;
  return role === "system" || role === "developer";
}

function blockKind(block: unknown): NodeKind {
  switch ((block as { type?: unknown } | null)?.type) {
    case "tool_use":
    case "server_tool_use":
      return "tool_use";
    case "tool_result":
      return "tool_result";
    case "thinking":
    case "redacted_thinking":
      return "thinking";
    case "image":
    case "image_url":
    case "document":
    case "input_audio":
    case "file":
      return "image";
    default:
      return "text";
  }
}

function itemKind(item: unknown): NodeKind {
  switch ((item as { type?: unknown } | null)?.type) {
    case "function_call":
    case "custom_tool_call":
      return "tool_use";
    case "function_call_output":
    case "custom_tool_call_output":
      return "tool_result";
    case "reasoning":
      return "thinking";
    default:
      return "message";
  }
}

function partKind(part: unknown): NodeKind {
  const p = (part ?? {}) as Record<string, unknown>;
  if (p.functionCall !== undefined) return "tool_use";
  if (p.functionResponse !== undefined) return "tool_result";
  if (p.thought === true) return "thinking";
  if (p.inlineData !== undefined || p.fileData !== undefined) return "image";
  return "text";
}
