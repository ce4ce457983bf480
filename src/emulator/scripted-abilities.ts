/**
 * Checks that a scripted answer asks only for what the model and request
 * allow: images from an image-output model over the Gemini protocol whose
 * `responseModalities` (when sent) include `IMAGE`; web searches from an
 * Anthropic request that declares the `web_search` server tool. A script
 * that asks for more is a test's mistake, refused like any invalid script.
 * @see https://ai.google.dev/gemini-api/docs/image-generation (responseModalities)
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool (tools: {type: "web_search_20250305", name: "web_search"})
 */
import type { ModelFacts } from "./facts/model-facts.ts";
import { EmulatorRequestError } from "./request-error.ts";
import type { Route } from "./router.ts";
import type { Answer } from "./types.ts";

/**
 * The declared web search tool of an Anthropic request (`type` starting with
 * `web_search_`), or undefined.
 */
export function webSearchTool(body: Record<string, unknown>): { name: string; max_uses?: number } | undefined {
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  const tool = tools.find((t) => typeof t?.type === "string" && t.type.startsWith("web_search_"));
  if (!tool) return undefined;
  return { name: String(tool.name), ...(typeof tool.max_uses === "number" ? { max_uses: tool.max_uses } : {}) };
}

/**
 * @throws EmulatorRequestError 400 naming what the script asks for that the request or model cannot give.
 */
export function checkScriptedAbilities(answer: Answer, route: Route, body: Record<string, unknown>, model: string, facts: ModelFacts): void {
  if (answer.images) {
    if (route.protocol !== "gemini" || !facts.outputImage) {
      throw new EmulatorRequestError(400, "invalid_request_error", `emulator script asks for images, but ${route.provider}/${model} does not output images (only Gemini image-output models do)`);
    }
    const modalities = (body.generationConfig as { responseModalities?: unknown } | undefined)?.responseModalities;
    if (Array.isArray(modalities) && !modalities.some((m) => String(m).toUpperCase() === "IMAGE")) {
      throw new EmulatorRequestError(400, "invalid_request_error", "emulator script asks for images, but generationConfig.responseModalities excludes IMAGE");
    }
  }
  if (answer.webSearches && (route.protocol !== "anthropic-messages" || webSearchTool(body) === undefined)) {
    throw new EmulatorRequestError(400, "invalid_request_error", 'emulator script asks for web searches, but the request declares no web search server tool ({"type": "web_search_20250305", "name": "web_search"})');
  }
}
