/**
 * Lifecycle hooks. Each hook's kind is fixed once here, by its name:
 * - `sequential`: handlers run in order; each may return a replacement value.
 * - `parallel`: handlers run concurrently for their side effects; results ignored.
 * - `collect`: handlers run in order; their defined results are collected.
 * The driver (driver.ts) has one call method per kind, so calling a hook the
 * wrong way is a type error.
 */
import type { RequestContext } from "../context/types.ts";
import type { StreamEvent } from "./stream.ts";
import type { UsageReport } from "./usage.ts";
import type { WireRequest } from "./wire.ts";

/** What `usage:record` receives after each provider call. */
export interface UsageRecordEvent {
  sessionId: string;
  /** Ledger row id. */
  requestId: string;
  /** Why the call was made: `main`, `subagent`, `compactor`, `summarizer`, `title`, `probe`, ... */
  role: string;
  /** `provider/model`. */
  model: string;
  report: UsageReport;
  /** Computed cost in USD; null when unknown. */
  costUsd: number | null;
}

/** What `session:fork` receives. */
export interface ForkEvent {
  parentId: string;
  childId: string;
  /** True when the model and the stable prefix are the same (no prefix change), so the child inherits the affinity key. */
  exact: boolean;
}

/** Every hook with its handler signature. */
export interface Hooks {
  /** Last chance to change the wire request (after cache strategies): change it in place (it is the handler's own copy) or return a replacement. */
  "request:before": (wire: WireRequest, context: RequestContext) => WireRequest | void | Promise<WireRequest | void>;
  /** Each stream event, as it arrives. */
  "response:event": (event: StreamEvent, context: RequestContext) => void | Promise<void>;
  /** After usage of a call is normalized and priced. */
  "usage:record": (event: UsageRecordEvent) => void | Promise<void>;
  /** Volatile text for this request's overlay (date, budget, plan). Collected in plugin order. */
  "context:overlay": (context: RequestContext) => string | undefined | Promise<string | undefined>;
  /**
   * After a session is forked, once the fork is kept: its first turn's request is cleared to go (the window, the
   * budget and the settings checks passed), just before its prompt or a ledger row is stored in it. A fork whose
   * first turn is refused before that, or whose `request:before` hook throws, is removed and never announced.
   */
  "session:fork": (event: ForkEvent) => void | Promise<void>;
}

/** A hook name. */
export type HookName = keyof Hooks;

/** How a hook's handlers are called. */
export type HookKind = "sequential" | "parallel" | "collect";

/** The kind of each hook, fixed by name. */
export const HOOK_KINDS = {
  "request:before": "sequential",
  "response:event": "parallel",
  "usage:record": "parallel",
  "context:overlay": "collect",
  "session:fork": "parallel",
} as const satisfies Record<HookName, HookKind>;

/** A handler, or a handler with an order relative to other plugins. */
export type HookRegistration<K extends HookName> = Hooks[K] | { handler: Hooks[K]; order?: "pre" | "post" };
