/**
 * The built-in plugins. Each uses only the public plugin API (src/plugin);
 * their modules load lazily so start-up pays for none of them.
 */
export const builtinPlugins: Record<string, () => Promise<unknown>> = {
  anthropic: () => import("./anthropic/index.ts"),
  openai: () => import("./openai/index.ts"),
  gemini: () => import("./gemini/index.ts"),
  "openai-compatible": () => import("./openai-compatible/index.ts"),
};
