import { describe, expect, test } from "bun:test";
import type { ProviderSpec } from "../plugin/provider.ts";
import { joinUrl, resolveProxyRoute } from "./routes.ts";

const spec = (id: string, protocol: ProviderSpec["protocol"], defaultBaseUrl: string, emulatorPath: string, catalogId?: string): ProviderSpec => ({
  id,
  protocol,
  defaultBaseUrl,
  emulatorPath,
  env: [],
  ...(catalogId ? { catalogId } : {}),
  create: () => {
    throw new Error("not used");
  },
});
const providers = new Map(
  [
    spec("anthropic", "anthropic-messages", "https://api.anthropic.com", "/anthropic"),
    spec("openai", "openai-chat", "https://api.openai.com/v1", "/openai/v1"),
    spec("openai-responses", "openai-responses", "https://api.openai.com/v1", "/openai/v1", "openai"),
    spec("google", "gemini", "https://generativelanguage.googleapis.com", "/google"),
    spec("deepseek", "openai-chat", "https://api.deepseek.com", "/deepseek"),
    spec("openrouter", "openai-chat", "https://openrouter.ai/api/v1", "/openrouter"),
    spec("openai-compatible", "openai-chat", "", "/openai-compatible/v1"),
  ].map((s) => [s.id, s] as const),
);

describe("resolveProxyRoute", () => {
  test("the usual paths go to each protocol's provider at its public base URL", () => {
    expect(resolveProxyRoute("/v1/messages", "", { providers })).toMatchObject({ provider: "anthropic", protocol: "anthropic-messages", metered: true, upstream: "https://api.anthropic.com/v1/messages" });
    expect(resolveProxyRoute("/v1/chat/completions", "", { providers })).toMatchObject({ provider: "openai", upstream: "https://api.openai.com/v1/chat/completions" });
    expect(resolveProxyRoute("/v1/responses", "", { providers })).toMatchObject({ provider: "openai-responses", protocol: "openai-responses", upstream: "https://api.openai.com/v1/responses" });
    expect(resolveProxyRoute("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "?alt=sse", { providers })).toMatchObject({
      provider: "google",
      streamingEndpoint: true,
      model: "gemini-2.5-flash",
      upstream: "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    });
  });

  test("a provider prefix stands for that provider's base URL", () => {
    expect(resolveProxyRoute("/deepseek/chat/completions", "", { providers })).toMatchObject({ provider: "deepseek", upstream: "https://api.deepseek.com/chat/completions" });
    expect(resolveProxyRoute("/openrouter/api/v1/chat/completions", "", { providers })?.upstream).toBe("https://openrouter.ai/api/v1/chat/completions");
    expect(resolveProxyRoute("/openai/responses", "", { providers })).toMatchObject({ provider: "openai-responses", upstream: "https://api.openai.com/v1/responses" });
  });

  test("--provider serves the unprefixed paths of its protocol; --upstream replaces its base URL", () => {
    expect(resolveProxyRoute("/v1/chat/completions", "", { providers, provider: "deepseek" })).toMatchObject({ provider: "deepseek", upstream: "https://api.deepseek.com/v1/chat/completions" });
    const route = resolveProxyRoute("/v1/messages", "", { providers, provider: "anthropic", upstream: "http://127.0.0.1:9000" });
    expect(route?.upstream).toBe("http://127.0.0.1:9000/v1/messages");
    expect(resolveProxyRoute("/v1/chat/completions", "", { providers, provider: "anthropic", upstream: "http://127.0.0.1:9000" })?.upstream).toBe("https://api.openai.com/v1/chat/completions");
  });

  test("--emulate: each provider under its emulator path", () => {
    const emulatorUrl = "http://127.0.0.1:5000";
    expect(resolveProxyRoute("/v1/chat/completions", "", { providers, emulatorUrl })?.upstream).toBe("http://127.0.0.1:5000/openai/v1/chat/completions");
    expect(resolveProxyRoute("/v1/messages", "", { providers, emulatorUrl })?.upstream).toBe("http://127.0.0.1:5000/anthropic/v1/messages");
    expect(resolveProxyRoute("/deepseek/chat/completions", "", { providers, emulatorUrl })?.upstream).toBe("http://127.0.0.1:5000/deepseek/chat/completions");
  });

  test("count_tokens is forwarded unmetered; unknown paths and providers without a base URL are not served", () => {
    expect(resolveProxyRoute("/v1/messages/count_tokens", "", { providers })).toMatchObject({ metered: false, upstream: "https://api.anthropic.com/v1/messages/count_tokens" });
    expect(resolveProxyRoute("/v1/models", "", { providers })).toBeUndefined();
    expect(resolveProxyRoute("/openai-compatible/v1/chat/completions", "", { providers })).toBeUndefined();
    expect(resolveProxyRoute("/openai-compatible/v1/chat/completions", "", { providers, configured: { "openai-compatible": "http://llm.local/v1" } })?.upstream).toBe("http://llm.local/v1/chat/completions");
  });
});

test("joinUrl merges a base path the request path repeats", () => {
  expect(joinUrl("https://api.openai.com/v1", ["v1", "chat", "completions"])).toBe("https://api.openai.com/v1/chat/completions");
  expect(joinUrl("https://api.openai.com/v1/", ["chat", "completions"])).toBe("https://api.openai.com/v1/chat/completions");
  expect(joinUrl("http://h:1/openai/v1", ["v1", "responses"])).toBe("http://h:1/openai/v1/responses");
  expect(joinUrl("http://h:1", ["v1", "messages"])).toBe("http://h:1/v1/messages");
});
