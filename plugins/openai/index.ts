/**
 * Built-in OpenAI plugin. Registers two providers over the same key and base URL:
 * - `openai`: Chat Completions (protocol `openai-chat`), the default because
 *   every OpenAI-compatible server speaks it too;
 * - `openai-responses`: the Responses API (protocol `openai-responses`), for
 *   models or features only served there (`openai-responses/gpt-5`); with
 *   `incremental = true` in its config, a request that only appends is sent
 *   as `previous_response_id` plus the new input (responses.ts continueResponses).
 * The openai SDK loads on the first request.
 * @see https://platform.openai.com/docs/api-reference/chat
 * @see https://platform.openai.com/docs/api-reference/responses
 */
import { definePlugin } from "../../src/plugin/index.ts";
import { openaiCacheRules } from "../shared/cache-facts.ts";
import { strategies } from "./cache-strategy.ts";
import { chatMemo, createChatAdapter } from "./chat.ts";
import { openaiClients } from "./client.ts";
import { continueResponses, isPreviousResponseLost, renderResponses, renderResponsesItems, sendResponses } from "./responses.ts";
import { chatUsage, chatUsageExamples, responsesUsage, responsesUsageExamples } from "./usage.ts";

const common = {
  env: ["OPENAI_API_KEY"],
  defaultBaseUrl: "https://api.openai.com/v1",
  emulatorPath: "/openai/v1",
  cacheRules: openaiCacheRules,
};

export default definePlugin({
  name: "openai",
  api: 1,
  setup(api) {
    // One memo per provider, shared by its adapters: a runtime creates an adapter per turn.
    const chat = { maxTokensField: "max_completion_tokens", usage: chatUsage } as const;
    const chatRenders = chatMemo(api.services, chat);
    const responsesRenders = api.services.renderMemo(renderResponsesItems);
    // One SDK client per key, base URL and fetch, shared by both providers' adapters.
    const clients = openaiClients();
    api.provider({
      id: "openai",
      name: "OpenAI",
      protocol: "openai-chat",
      ...common,
      usageExamples: chatUsageExamples,
      create: (config) => createChatAdapter(config, api.services, chat, chatRenders, clients(config)),
    });
    api.provider({
      id: "openai-responses",
      name: "OpenAI (Responses API)",
      protocol: "openai-responses",
      catalogId: "openai",
      ...common,
      usageExamples: responsesUsageExamples,
      create(config) {
        const client = clients(config);
        return {
          render: (context) => renderResponses(context, api.services, responsesRenders),
          send: (wire, options) => sendResponses(client, wire, options, api.services, config),
          usage: responsesUsage,
          continueFrom: continueResponses,
          isContinuationLost: isPreviousResponseLost,
        };
      },
    });
    for (const strategy of strategies) api.cacheStrategy(strategy);
  },
});
