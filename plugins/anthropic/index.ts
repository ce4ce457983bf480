/**
 * Built-in Anthropic plugin: provider `anthropic` over the Messages API
 * (protocol `anthropic-messages`), through @anthropic-ai/sdk loaded on the
 * first request so start-up pays nothing for it.
 * @see https://docs.claude.com/en/api/messages
 */
import { definePlugin } from "../../src/plugin/index.ts";
import { anthropicCacheRules } from "../shared/cache-facts.ts";
import { strategies } from "./cache-strategy.ts";
import { DEFAULT_MAX_TOKENS, renderAnthropic, renderAnthropicMessage } from "./render.ts";
import { anthropicClients, sendAnthropic } from "./send.ts";
import { anthropicUsage, anthropicUsageExamples } from "./usage.ts";

export default definePlugin({
  name: "anthropic",
  api: 1,
  setup(api) {
    // One memo for every adapter of the provider: a runtime creates an adapter per turn.
    const memo = api.services.renderMemo(renderAnthropicMessage);
    const clients = anthropicClients();
    api.provider({
      id: "anthropic",
      name: "Anthropic",
      protocol: "anthropic-messages",
      env: ["ANTHROPIC_API_KEY"],
      defaultBaseUrl: "https://api.anthropic.com",
      emulatorPath: "/anthropic",
      cacheRules: anthropicCacheRules,
      usageExamples: anthropicUsageExamples,
      defaultMaxTokens: DEFAULT_MAX_TOKENS,
      create(config) {
        const client = clients(config);
        return {
          render: (context) => renderAnthropic(context, api.services, memo),
          send: (wire, options) => sendAnthropic(client, wire, options, api.services, config),
          usage: anthropicUsage,
        };
      },
    });
    for (const strategy of strategies) api.cacheStrategy(strategy);
  },
});
