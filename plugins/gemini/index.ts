/**
 * Built-in Gemini plugin: provider `google` (the models.dev id) over
 * `generateContent` / `streamGenerateContent` (protocol `gemini`), sent
 * with the runtime's fetch (send.ts).
 * @see https://ai.google.dev/api/generate-content
 */
import { definePlugin } from "../../src/plugin/index.ts";
import { geminiCacheRules } from "../shared/cache-facts.ts";
import { strategies } from "./cache-strategy.ts";
import { renderGemini, renderGeminiContent } from "./render.ts";
import { sendGemini } from "./send.ts";
import { geminiUsage, geminiUsageExamples } from "./usage.ts";

export default definePlugin({
  name: "gemini",
  api: 1,
  setup(api) {
    // One memo for every adapter of the provider: a runtime creates an adapter per turn.
    const memo = api.services.renderMemo(renderGeminiContent);
    api.provider({
      id: "google",
      name: "Google Gemini",
      protocol: "gemini",
      env: ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
      defaultBaseUrl: "https://generativelanguage.googleapis.com",
      emulatorPath: "/google",
      cacheRules: geminiCacheRules,
      usageExamples: geminiUsageExamples,
      create: (config) => ({
        render: (context) => renderGemini(context, api.services, memo),
        send: (wire, options) => sendGemini(wire, options, api.services, config),
        usage: geminiUsage,
      }),
    });
    for (const strategy of strategies) api.cacheStrategy(strategy);
  },
});
