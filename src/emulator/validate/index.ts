/**
 * Request validation: the emulator refuses what the real provider refuses,
 * with its status and error shape, before any cache accounting or answer.
 * Each protocol's rules live in their own module; the context window is
 * checked once the prompt is counted ({@link checkContextWindow}).
 */
import type { ModelFacts } from "../facts/model-facts.ts";
import type { Route } from "../router.ts";
import { validateAnthropic } from "./anthropic.ts";
import { validateGemini } from "./gemini.ts";
import { validateChat } from "./openai-chat.ts";
import { validateResponses } from "./openai-responses.ts";
import { checkAnthropicFields, checkChatFields, checkResponsesFields } from "./known-fields.ts";

export { checkContextWindow } from "./context-window.ts";

/**
 * Checks a parsed-as-JSON body against its protocol's rules.
 * @throws EmulatorRequestError with the provider's status, type, message, param and code.
 */
export function validateRequest(route: Route, body: Record<string, unknown>, model: string, facts: ModelFacts): void {
  switch (route.protocol) {
    case "anthropic-messages":
      if (route.endpoint !== "messages") return;
      checkAnthropicFields(body);
      validateAnthropic(body, model, facts);
      return;
    case "openai-chat":
      checkChatFields(body, route.provider);
      validateChat(body, route.provider, facts);
      return;
    case "openai-responses":
      if (route.endpoint === "responses") checkResponsesFields(body, route.provider);
      validateResponses(body, facts);
      return;
    case "gemini":
      validateGemini(body, model);
  }
}
