/**
 * Anthropic's server web search tool, as the emulator runs it. When the
 * request declares the tool and the script names queries, each query becomes
 * a `server_tool_use` block (`name: "web_search"`, `input: {query}`) followed
 * by its `web_search_tool_result` block holding `web_search_result` items
 * (`url`, `title`, `encrypted_content`, `page_age`). A search past the tool's
 * `max_uses` gets an error result (`max_uses_exceeded`) and is not billed
 * (a search that errs is not billed).
 * Usage: `server_tool_use.web_search_requests` counts the searches run; the
 * queries are output the model wrote; the results it read are input tokens.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool (response shape, max_uses, usage and pricing: $10 per 1,000 searches plus tokens; results count as input tokens)
 */
import { canonicalJson } from "../wire/canonical-json.ts";
import { webSearchTool } from "./scripted-abilities.ts";
import { countTokens } from "./tokenizer.ts";
import type { Answer } from "./types.ts";

/**
 * `answer` with its scripted searches run against the request's declared
 * tool; unchanged when it asks for none.
 * @param seed fixes the block ids and result bytes (same prompt, same blocks)
 */
export function withWebSearches(answer: Answer, body: Record<string, unknown>, seed: string): Answer {
  const queries = answer.webSearches;
  const tool = webSearchTool(body);
  if (!queries || !tool) return answer;
  const blocks: Record<string, unknown>[] = [];
  let requests = 0;
  let resultTokens = 0;
  let queryTokens = 0;
  queries.forEach((query, k) => {
    const id = `srvtoolu_emu${Bun.hash.wyhash(`${seed}|search|${k}`).toString(36)}`;
    const input = { query };
    queryTokens += countTokens(canonicalJson(input));
    blocks.push({ type: "server_tool_use", id, name: tool.name, input });
    if (tool.max_uses !== undefined && requests >= tool.max_uses) {
      blocks.push({ type: "web_search_tool_result", tool_use_id: id, content: { type: "web_search_tool_result_error", error_code: "max_uses_exceeded" } });
      return;
    }
    requests++;
    const content = [1, 2].map((n) => ({
      type: "web_search_result",
      url: `https://example.com/search/${encodeURIComponent(query)}/${n}`,
      title: `${query} (result ${n})`,
      encrypted_content: Buffer.from(`${seed}|${query}|${n}`).toString("base64"),
      page_age: "1 day ago",
    }));
    resultTokens += countTokens(canonicalJson(content));
    blocks.push({ type: "web_search_tool_result", tool_use_id: id, content });
  });
  return { ...answer, outputTokens: answer.outputTokens + queryTokens, webSearch: { blocks, requests, resultTokens } };
}
