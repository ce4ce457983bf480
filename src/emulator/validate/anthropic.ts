/**
 * What the Anthropic Messages API refuses before generating, with its
 * messages (400 `invalid_request_error`): roles, empty and whitespace-only
 * text blocks, no messages at all or messages left empty, tool_use/tool_result pairing, thinking
 * replay (signatures; a final assistant turn that used tools while thinking
 * is on must start with its thinking block), temperature with thinking, and
 * `max_tokens` above the model's output limit, server tool blocks replayed
 * without their results. Messages as the API words
 * them in public reports (CASES.md cases 39, 40).
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use
 */
import type { ModelFacts } from "../facts/model-facts.ts";
import { invalidRequest } from "../request-error.ts";

type Block = Record<string, unknown>;

/**
 * Checks an Anthropic Messages body.
 * @throws EmulatorRequestError 400 invalid_request_error, worded as the API does.
 */
export function validateAnthropic(body: Record<string, unknown>, model: string, facts: ModelFacts): void {
  const messages = body.messages as Record<string, unknown>[];
  if (!Array.isArray(messages) || messages.length === 0) throw invalidRequest("messages: at least one message is required");
  const thinking = (body.thinking as { type?: string } | undefined)?.type;
  const thinkingOn = thinking === "enabled" || thinking === "adaptive";
  checkParameters(body, model, facts, thinkingOn);
  checkSystem(body.system);
  const contents = messages.map((message, i) => {
    if (message.role !== "user" && message.role !== "assistant") throw invalidRequest(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    return typeof message.content === "string" ? [{ type: "text", text: message.content }] : ((message.content as Block[] | undefined) ?? []);
  });
  contents.forEach((blocks, i) => {
    const finalAssistant = i === contents.length - 1 && messages[i]!.role === "assistant";
    if (blocks.length === 0 && !finalAssistant) throw invalidRequest(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    blocks.forEach((block, j) => {
      if (block.type === "text") checkText(block.text, `messages.${i}.content.${j}`);
      if (block.type === "thinking" && (typeof block.signature !== "string" || block.signature === "")) throw invalidRequest(`messages.${i}.content.${j}.thinking.signature: Field required`);
    });
  });
  checkToolPairing(messages, contents);
  contents.forEach((blocks, i) => checkServerToolReplay(String(messages[i]!.role), blocks, i));
  if (thinkingOn) checkThinkingReplay(messages, contents);
}

/**
 * Server tool blocks replayed in the history (web search): only in assistant
 * turns, each `server_tool_use` answered by the `web_search_tool_result`
 * with its id in the same turn, and every search result sent back with its
 * `encrypted_content` (a required field of `WebSearchResultBlockParam`).
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 * @see https://github.com/anthropics/anthropic-sdk-typescript (ServerToolUseBlockParam, WebSearchToolResultBlockParam, WebSearchResultBlockParam)
 */
function checkServerToolReplay(role: string, blocks: Block[], i: number): void {
  const results = new Set<string>();
  blocks.forEach((block, j) => {
    if (block.type !== "server_tool_use" && block.type !== "web_search_tool_result") return;
    if (role !== "assistant") throw invalidRequest(`messages.${i}.content.${j}: \`${String(block.type)}\` blocks may only appear in \`assistant\` messages`);
    if (block.type !== "web_search_tool_result") return;
    results.add(String(block.tool_use_id));
    if (Array.isArray(block.content)) {
      (block.content as Block[]).forEach((result, k) => {
        if (typeof result.encrypted_content !== "string") throw invalidRequest(`messages.${i}.content.${j}.content.${k}.encrypted_content: Field required`);
      });
    }
  });
  const unanswered = blocks.filter((b) => b.type === "server_tool_use" && !results.has(String(b.id))).map((b) => String(b.id));
  if (unanswered.length > 0) {
    throw invalidRequest(`messages.${i}: \`server_tool_use\` ids were found without a corresponding \`web_search_tool_result\` block in the same message: ${unanswered.join(", ")}`);
  }
}

function checkParameters(body: Record<string, unknown>, model: string, facts: ModelFacts, thinkingOn: boolean): void {
  const maxTokens = body.max_tokens;
  if (typeof maxTokens === "number" && facts.output !== undefined && maxTokens > facts.output) {
    throw invalidRequest(`max_tokens: ${maxTokens} > ${facts.output}, which is the maximum allowed number of output tokens for ${model}`);
  }
  const temperature = body.temperature;
  if (typeof temperature === "number" && (temperature < 0 || temperature > 1)) throw invalidRequest(`temperature: Input should be ${temperature < 0 ? "greater than or equal to 0" : "less than or equal to 1"}`);
  if (thinkingOn && temperature !== undefined && temperature !== 1) throw invalidRequest("`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility");
}

function checkSystem(system: unknown): void {
  if (!Array.isArray(system)) return;
  (system as Block[]).forEach((block) => {
    if (block.type === "text") checkText(block.text, "system");
  });
}

/** Empty and whitespace-only text blocks are refused everywhere (CASES.md case 40). */
function checkText(text: unknown, where: string): void {
  if (typeof text !== "string" || text === "") throw invalidRequest(`${where.startsWith("system") ? "system" : "messages"}: text content blocks must be non-empty`);
  if (text.trim() === "") throw invalidRequest(`${where.startsWith("system") ? "system" : "messages"}: text content blocks must contain non-whitespace text`);
}

/**
 * Every tool_use is answered by a tool_result in the very next message, and
 * every tool_result answers a tool_use of the message right before it.
 */
function checkToolPairing(messages: Record<string, unknown>[], contents: Block[][]): void {
  contents.forEach((blocks, i) => {
    const previous = i > 0 && messages[i - 1]!.role === "assistant" ? contents[i - 1]! : [];
    const called = new Set(previous.filter((b) => b.type === "tool_use").map((b) => String(b.id)));
    blocks.forEach((block, j) => {
      if (block.type === "tool_result" && !called.has(String(block.tool_use_id))) {
        throw invalidRequest(`messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
      }
    });
    if (messages[i]!.role !== "assistant" || i === contents.length - 1) return;
    const next = messages[i + 1]!.role === "user" ? contents[i + 1]! : [];
    const answered = new Set(next.filter((b) => b.type === "tool_result").map((b) => String(b.tool_use_id)));
    const missing = blocks.filter((b) => b.type === "tool_use" && !answered.has(String(b.id))).map((b) => String(b.id));
    if (missing.length > 0) {
      throw invalidRequest(`messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
    }
  });
}

/**
 * With thinking on, the assistant turn the request continues (the last one,
 * when the conversation ends in its tool results) must start with a
 * thinking or redacted_thinking block.
 */
function checkThinkingReplay(messages: Record<string, unknown>[], contents: Block[][]): void {
  const last = contents.length - 1;
  if (last < 1 || messages[last]!.role !== "user" || !contents[last]!.some((b) => b.type === "tool_result")) return;
  const turn = contents[last - 1]!;
  const first = turn[0];
  if (first && first.type !== "thinking" && first.type !== "redacted_thinking") {
    throw invalidRequest(
      `messages.${last - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
    );
  }
}
