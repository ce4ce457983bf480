/**
 * For tests of the built-in providers against the emulator: a model each
 * provider's emulator route serves.
 */
export const EMULATOR_MODELS: Record<string, string> = {
  anthropic: "claude-sonnet-4-5",
  openai: "gpt-4o",
  "openai-responses": "gpt-5",
  google: "gemini-2.5-flash",
  deepseek: "deepseek-chat",
  moonshotai: "kimi-k2",
  alibaba: "qwen-plus",
  openrouter: "anthropic/claude-sonnet-4.5",
  xai: "grok-4",
  "openai-compatible": "acme-1",
};
