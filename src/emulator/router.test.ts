import { describe, expect, test } from "bun:test";
import { resolveRoute } from "./router.ts";

describe("resolveRoute", () => {
  test.each([
    ["/v1/messages", "anthropic", "anthropic-messages", "messages"],
    ["/anthropic/v1/messages/count_tokens", "anthropic", "anthropic-messages", "count_tokens"],
    ["/v1/chat/completions", "openai", "openai-chat", "chat"],
    ["/openai/v1/responses", "openai", "openai-responses", "responses"],
    ["/deepseek/chat/completions", "deepseek", "openai-chat", "chat"],
    ["/deepseek/v1/chat/completions", "deepseek", "openai-chat", "chat"],
    ["/openrouter/api/v1/chat/completions", "openrouter", "openai-chat", "chat"],
    ["/acme/v1/chat/completions", "unknown", "openai-chat", "chat"],
    ["/google/v1beta/models/gemini-2.5-flash:streamGenerateContent", "google", "gemini", "stream-generate"],
  ])("%s → %s %s %s", (path, provider, protocol, endpoint) => {
    expect(resolveRoute(path)).toMatchObject({ provider, protocol, endpoint });
  });

  test("the Gemini model comes from the path; unknown paths resolve to nothing", () => {
    expect(resolveRoute("/v1beta/models/gemini-3-flash-preview:generateContent")?.model).toBe("gemini-3-flash-preview");
    expect(resolveRoute("/v1/embeddings")).toBeUndefined();
    expect(resolveRoute("/nosuch/chat/completions")).toBeUndefined();
    expect(resolveRoute("/nosuch/messages")).toBeUndefined();
  });
});
