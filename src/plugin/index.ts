/**
 * cachet's plugin API, version 1: everything a plugin author imports.
 * `import { definePlugin, type ProviderSpec } from "cachet/plugin"`.
 */
export { API_VERSION, definePlugin } from "./define-plugin.ts";
export type { Plugin, PluginApi, PluginLogger } from "./define-plugin.ts";
export type { CacheRules, ProviderAdapter, ProviderConfig, ProviderSpec, SendOptions } from "./provider.ts";
export type { CacheStrategySpec } from "./cache-strategy.ts";
export { HOOK_KINDS } from "./hooks.ts";
export type { ForkEvent, HookKind, HookName, HookRegistration, Hooks, UsageRecordEvent } from "./hooks.ts";
export type { ChatterEvent, FinishEvent, FinishReason, StreamEvent, TextEvent, ThinkingEvent, ToolCallEvent } from "./stream.ts";
export { UNKNOWN_USAGE, promptTokens, usageJson } from "./usage.ts";
export type { ModalityTokens, ServerTool, ServerToolCalls, Usage, UsageJson, UsageReport } from "./usage.ts";
export { CACHE_MARKER_KEYS, PROTOCOLS } from "./wire.ts";
export type { Protocol, WirePath, WireRequest, WireSegment } from "./wire.ts";
export type { PluginServices } from "./services.ts";
/** cachet's error type, for built-in plugins compiled into the binary (bundled third-party plugins use `api.services.CachetError`). */
export { CachetError } from "../errors.ts";
export type {
  Block,
  CacheSettings,
  GenerationSettings,
  ImageBlock,
  Message,
  MessageRole,
  NodeKind,
  OutputSchema,
  RequestContext,
  StablePrefix,
  SystemPart,
  TextBlock,
  ThinkingBlock,
  ToolDefinition,
  ToolResultBlock,
  ToolUseBlock,
} from "../context/types.ts";
