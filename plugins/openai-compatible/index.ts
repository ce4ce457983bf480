/**
 * Built-in OpenAI-compatible plugin: providers that speak Chat Completions
 * (protocol `openai-chat`) through the openai SDK, each with its own usage
 * mapping (providers.md §1). The chat rendering and streaming code is the
 * OpenAI plugin's (`plugins/openai/chat.ts`), not a copy.
 *
 * `openai-compatible` serves any such server; it has no default base URL, so
 * `--base-url` (or `base_url` in config) is required.
 * @see https://api-docs.deepseek.com/api/create-chat-completion
 * @see https://openrouter.ai/docs/use-cases/usage-accounting
 * @see https://docs.x.ai/developers/advanced-api-usage/prompt-caching/usage-and-pricing
 * @see https://www.alibabacloud.com/help/en/model-studio/context-cache
 */
import { definePlugin, type UsageReport } from "../../src/plugin/index.ts";
import { chatMemo, createChatAdapter, type ChatDialect } from "../openai/chat.ts";
import { openaiClients } from "../openai/client.ts";
import { compatibleCacheRules } from "../shared/cache-facts.ts";
import { strategies } from "./cache-strategy.ts";
import { deepseekUsage, moonshotUsage, openaiCompatibleUsage, openrouterUsage, qwenUsage, xaiUsage } from "./usage.ts";

/** One OpenAI-compatible provider. */
export interface Preset {
  id: string;
  name: string;
  env: string[];
  /** Empty for `openai-compatible`: the user must give one. */
  defaultBaseUrl: string;
  emulatorPath: string;
  usage: (raw: unknown) => UsageReport;
}

/** The presets, by models.dev provider id. */
export const PRESETS: readonly Preset[] = [
  { id: "deepseek", name: "DeepSeek", env: ["DEEPSEEK_API_KEY"], defaultBaseUrl: "https://api.deepseek.com", emulatorPath: "/deepseek", usage: deepseekUsage },
  { id: "moonshotai", name: "Moonshot AI (Kimi)", env: ["MOONSHOT_API_KEY"], defaultBaseUrl: "https://api.moonshot.ai/v1", emulatorPath: "/moonshotai", usage: moonshotUsage },
  {
    id: "alibaba",
    name: "Alibaba (Qwen, DashScope compatible mode)",
    env: ["DASHSCOPE_API_KEY"],
    defaultBaseUrl: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    emulatorPath: "/alibaba",
    usage: qwenUsage,
  },
  { id: "openrouter", name: "OpenRouter", env: ["OPENROUTER_API_KEY"], defaultBaseUrl: "https://openrouter.ai/api/v1", emulatorPath: "/openrouter", usage: openrouterUsage },
  { id: "xai", name: "xAI (Grok)", env: ["XAI_API_KEY"], defaultBaseUrl: "https://api.x.ai/v1", emulatorPath: "/xai", usage: xaiUsage },
  {
    id: "openai-compatible",
    name: "Any OpenAI-compatible server",
    env: ["OPENAI_COMPATIBLE_API_KEY"],
    defaultBaseUrl: "",
    emulatorPath: "/openai-compatible/v1",
    usage: openaiCompatibleUsage,
  },
];

export default definePlugin({
  name: "openai-compatible",
  api: 1,
  setup(api) {
    // One SDK client per key, base URL and fetch, shared by every preset's adapters.
    const clients = openaiClients();
    for (const preset of PRESETS) {
      const reasoningField = preset.id === "deepseek" || preset.id === "moonshotai" ? ("reasoning_content" as const) : undefined;
      const dialect: ChatDialect = { maxTokensField: "max_tokens", usage: preset.usage, ...(reasoningField ? { reasoningField } : {}) };
      // One memo per preset, shared by its adapters: a runtime creates an adapter per turn.
      const memo = chatMemo(api.services, dialect);
      api.provider({
        id: preset.id,
        name: preset.name,
        protocol: "openai-chat",
        env: preset.env,
        defaultBaseUrl: preset.defaultBaseUrl,
        emulatorPath: preset.emulatorPath,
        cacheRules: (model) => compatibleCacheRules(preset.id, model),
        create(config) {
          if (!config.baseUrl) {
            throw new api.services.CachetError("BAD_FLAG", `provider "${preset.id}" needs a base URL`, {
              hint: "pass --base-url http://host:port/v1 or set base_url for it in the config",
            });
          }
          return createChatAdapter(config, api.services, dialect, memo, clients(config));
        },
      });
    }
    for (const strategy of strategies) api.cacheStrategy(strategy);
  },
});
