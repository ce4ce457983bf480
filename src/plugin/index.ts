/**
 * cachet's plugin API: everything a plugin author imports, published as the
 * npm package `cachet-plugin-api` (build/plugin-api.ts builds it from this
 * file: an ESM runtime and its .d.ts, no Bun types needed). The built-in
 * plugins import nothing else from src/ (plugins/imports.test.ts).
 * `import { definePlugin, type ProviderSpec } from "cachet-plugin-api"`.
 */
export { API_VERSION, definePlugin } from "./define-plugin.ts";
export type { Plugin, PluginApi, PluginLogger } from "./define-plugin.ts";
export type { CacheRules, PreviousCall, ProviderAdapter, ProviderConfig, ProviderSpec, SendOptions, UsageExample } from "./provider.ts";
export type { CacheStrategySpec } from "./cache-strategy.ts";
export { HOOK_KINDS } from "./hooks.ts";
export type { ForkEvent, HookKind, HookName, HookRegistration, Hooks, UsageRecordEvent } from "./hooks.ts";
export type { ChatterEvent, FinishEvent, FinishReason, ImageEvent, ProviderBlockEvent, StreamEvent, TextEvent, ThinkingEvent, ToolCallEvent, UsageEvent } from "./stream.ts";
export { UNKNOWN_USAGE, promptTokens, usageJson } from "./usage.ts";
export type { ModalityTokens, ServerTool, ServerToolCalls, Usage, UsageJson, UsagePass, UsageReport } from "./usage.ts";
export { CACHE_MARKER_KEYS, PROTOCOLS } from "./wire.ts";
export { ownedOption, refuseOwnedOptions } from "./owned-options.ts";
export type { Protocol, WirePath, WireRequest, WireSegment } from "./wire.ts";
export type { PluginServices } from "./services.ts";
export type { MessageRenderer, RenderMemo, RenderedLog, RenderedMessage } from "./render-memo.ts";
export { ListMemo } from "../list-memo.ts";
export type { ListMemoOptions, ListResults } from "../list-memo.ts";
/**
 * cachet's error types. A bundled plugin's copy of them is recognised by the
 * host by its `code` (a ProviderError keeps status and retryability); plugins
 * may equally use `api.services.CachetError` / `ProviderError`.
 */
export { CachetError, ProviderError } from "../errors.ts";
export type { CachetErrorOptions, ErrorCode } from "../errors.ts";
/** Structured output: a session's JSON schema checked against the provider's contract and made ready for the wire. */
export { SchemaContractError, checkSchema, toWireSchema } from "../schema/wire-schema.ts";
export type { SchemaCheck, WireSchema, WireSchemaOptions } from "../schema/wire-schema.ts";
export type { SchemaTarget, SchemaViolation } from "../schema/contract.ts";
export type {
  Block,
  CacheSettings,
  GenerationSettings,
  ImageBlock,
  ProviderBlock,
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
