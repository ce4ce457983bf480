import { expect, test } from "bun:test";
import { PluginHost } from "../../src/plugin/host.ts";
import type { RequestContext } from "../../src/plugin/index.ts";
import plugin, { PRESETS } from "./index.ts";

const ctx: RequestContext = {
  model: "deepseek-chat",
  provider: "deepseek",
  prefix: { system: [], tools: [], fingerprint: "0000000000000000" },
  summary: [],
  messages: [{ id: "u1", role: "user", content: [{ type: "text", text: "Hi" }] }],
  generation: { maxTokens: 10, stream: true, providerOptions: {} },
  cache: { mode: "auto", ttl: "5m" },
};

test("presets: ids, base URLs, env vars and emulator paths", () => {
  expect(PRESETS.map((p) => [p.id, p.defaultBaseUrl, p.env[0], p.emulatorPath])).toEqual([
    ["deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY", "/deepseek"],
    ["moonshotai", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", "/moonshotai"],
    ["alibaba", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", "/alibaba"],
    ["openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "/openrouter"],
    ["xai", "https://api.x.ai/v1", "XAI_API_KEY", "/xai"],
    ["openai-compatible", "", "OPENAI_COMPATIBLE_API_KEY", "/openai-compatible/v1"],
  ]);
});

test("openai-compatible without a base URL is a BAD_FLAG with a hint; presets send max_tokens", async () => {
  const host = new PluginHost();
  expect(await host.load(plugin, "test")).toBe(true);
  const config = { providerId: "openai-compatible", apiKey: undefined, baseUrl: "", fetch, options: {} };
  let error: unknown;
  try {
    host.createAdapter("openai-compatible", config);
  } catch (e) {
    error = e;
  }
  expect(error).toMatchObject({ code: "BAD_FLAG", message: 'provider "openai-compatible" needs a base URL' });
  expect((error as { hint: string }).hint).toContain("--base-url");
  const deepseek = host.createAdapter("deepseek", { ...config, providerId: "deepseek", baseUrl: "https://api.deepseek.com" });
  const body = deepseek.render(ctx).body;
  expect(body.max_tokens).toBe(10);
  expect(body.max_completion_tokens).toBeUndefined();
});
