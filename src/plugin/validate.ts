/**
 * The shapes the host checks at its boundary with plugin code (valibot),
 * both at load time (a plugin, a provider spec, a cache strategy) and on every
 * call (an adapter, a wire request, a stream event, a usage report, a hook's
 * result). Plugin code is never trusted: a wrong result is reported as one
 * line naming the plugin and the call instead of reaching the ledger.
 *
 * Objects are loose (extra keys pass) so a plugin built against a later minor
 * API version, which may set fields this host does not know, still loads.
 */
import * as v from "valibot";
import { deferred, once } from "../deferred-schema.ts";
import { ListMemo } from "../list-memo.ts";
import { HOOK_KINDS } from "./hooks.ts";
import type { FinishReason } from "./stream.ts";
import { USAGE_COUNTS } from "./usage.ts";
import { PROTOCOLS, type WireRequest } from "./wire.ts";

// Every shape is built on its first use (src/deferred-schema.ts): a run whose plugins behave parses only
// AdapterShape before its request, and the per-call shapes once answers come.
const base = once(() => ({
  Fn: v.custom<(...args: unknown[]) => unknown>((value) => typeof value === "function"),
  Text: v.pipe(v.string(), v.minLength(1)),
  /** A token count: a whole number from 0 to 2^53 − 1. NaN, Infinity, fractions, negative numbers and strings are refused. */
  Count: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
}));

/** The default export of a plugin module. */
export const PluginShape = deferred(() => {
  const { Fn, Text } = base();
  return v.looseObject({
    name: Text,
    api: v.union([v.pipe(v.number(), v.integer(), v.minValue(0)), Text]),
    setup: Fn,
  });
});

/** `api.provider(spec)`. */
export const ProviderSpecShape = deferred(() => {
  const { Fn, Text, Count } = base();
  return v.looseObject({
    id: Text,
    protocol: v.picklist(PROTOCOLS),
    name: v.optional(v.string()),
    catalogId: v.optional(Text),
    env: v.array(Text),
    defaultBaseUrl: v.string(),
    emulatorPath: v.pipe(v.string(), v.startsWith("/")),
    cacheRules: v.optional(Fn),
    models: v.optional(v.array(Text)),
    usageExamples: v.optional(
      v.array(v.looseObject({ raw: v.unknown(), usage: v.record(v.string(), v.nullish(Count)), source: v.optional(v.string()) })),
    ),
    create: Fn,
  });
});

/** `api.cacheStrategy(spec)`. */
export const CacheStrategyShape = deferred(() => {
  const { Fn, Text } = base();
  return v.looseObject({
    id: Text,
    protocols: v.pipe(v.array(v.picklist(PROTOCOLS)), v.minLength(1)),
    providers: v.optional(v.array(Text)),
    apply: Fn,
  });
});

/** The name passed to `api.hook(name, ...)`. */
export const HookNameShape = deferred(() => v.picklist(Object.keys(HOOK_KINDS) as (keyof typeof HOOK_KINDS)[]));

/** What `create(config)` returns. */
export const AdapterShape = deferred(() => {
  const { Fn } = base();
  return v.looseObject({ render: Fn, send: Fn, usage: Fn });
});

/**
 * True only for values {@link AdapterShape} accepts: an object with `render`,
 * `send` and `usage` functions. The check of what every run's `create(config)`
 * returns, before its request, without valibot (whose first run cost ~1.5
 * profiled ms there); anything else is left to valibot, which describes what is wrong.
 */
export function isAdapter(value: unknown): boolean {
  if (!isObject(value)) return false;
  const { render, send, usage } = value as Record<string, unknown>;
  return typeof render === "function" && typeof send === "function" && typeof usage === "function";
}

/** A rendered wire request, as `render`, a cache strategy or `request:before` returns it. */
export const WireRequestShape = deferred(() =>
  v.looseObject({
    protocol: v.picklist(PROTOCOLS),
    body: v.record(v.string(), v.unknown()),
    headers: v.record(v.string(), v.string()),
    segments: v.array(
      v.looseObject({
        nodeId: v.string(),
        kind: v.string(),
        path: v.array(v.union([v.string(), v.number()])),
      }),
    ),
  }),
);

const PROTOCOL_SET: ReadonlySet<unknown> = new Set(PROTOCOLS);

// Segments found well formed (and frozen then): an adapter hands the same segment objects back turn after turn.
const checkedSegments = new WeakSet<object>();

/**
 * {@link check} with {@link WireRequestShape}, for the calls made on every
 * request (render, cache strategies, `request:before`): a well-formed request
 * comes back as the very same object, segments included (valibot would copy
 * them, and their identity lets the hash chain skip a long session's unchanged
 * segments); a segment already checked is not checked again (it was frozen
 * when first checked; its `path` array must not be changed either), and the
 * segments at the places they held in the conversation's last request cost a
 * pointer compare each (src/list-memo.ts), so the check costs the request's new segments.
 * A wrong request gets valibot's description.
 */
export function checkWire(value: unknown): { ok: true; value: WireRequest } | { ok: false; problem: string } {
  if (isWire(value)) return { ok: true, value };
  const result = check(WireRequestShape, value);
  return result.ok ? { ok: true, value: result.value as WireRequest } : result;
}

function isWire(value: unknown): value is WireRequest {
  if (!isObject(value)) return false;
  const { protocol, body, headers, segments } = value as Record<string, unknown>;
  if (!PROTOCOL_SET.has(protocol) || !isObject(body) || !isObject(headers) || !Array.isArray(segments)) return false;
  for (const key in headers) if (typeof (headers as Record<string, unknown>)[key] !== "string") return false;
  // A cache strategy returns the request with the very segments array it was given: checked already.
  if (checkedLists.get(segments) === segments.length) return true;
  if (segmentLists.map(segments).total > 0) return false;
  checkedLists.set(segments, segments.length);
  return true;
}

function wellFormed(segment: unknown): boolean {
  if (!isObject(segment)) return false;
  if (checkedSegments.has(segment)) return true;
  const { nodeId, kind, path } = segment as Record<string, unknown>;
  if (typeof nodeId !== "string" || typeof kind !== "string" || !Array.isArray(path)) return false;
  for (const key of path) if (typeof key !== "string" && typeof key !== "number") return false;
  // The segment is frozen, its path array is not: JSC reads a frozen array's elements several times slower.
  checkedSegments.add(Object.freeze(segment));
  return true;
}

// Each conversation's last segment list: the segments at the places they held then cost a pointer compare each.
// A wrong segment is not kept (checked again next time) and weighs 1.
const segmentLists = new ListMemo<unknown, boolean>(wellFormed, { keep: (_, ok) => ok, weight: (ok) => (ok ? 0 : 1) });

// Segment lists found well formed, with their length then (an array pushed to since is checked again).
const checkedLists = new WeakMap<object, number>();

function isObject(value: unknown): value is object {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** What {@link check} says about a spec registered at load time; the checked value is the spec itself. */
export type SpecCheck = { ok: true } | { ok: false; problem: string };

/**
 * {@link check} with {@link PluginShape}, {@link ProviderSpecShape} and
 * {@link CacheStrategyShape}, for what every plugin hands the host on every
 * start: a well-formed spec is recognized by a plain predicate ({@link isPluginSpec},
 * {@link isProviderSpec}, {@link isCacheStrategySpec}), since valibot's first
 * run over them cost 4-12 ms before each run's request (the built-in plugins'
 * 4 plugin objects, 10 providers and 6 strategies, measured on the bench
 * machine; 0.4 ms once warm). A predicate only ever accepts what the shape
 * accepts; anything else is left to valibot, which describes what is wrong.
 */
export function checkSpec(kind: "plugin" | "provider" | "cache strategy", value: unknown): SpecCheck {
  const [fast, shape] = SPEC_CHECKS[kind];
  if (fast(value)) return { ok: true };
  const result = check(shape, value);
  return result.ok ? { ok: true } : result;
}

const SPEC_CHECKS = {
  plugin: [isPluginSpec, PluginShape],
  provider: [isProviderSpec, ProviderSpecShape],
  "cache strategy": [isCacheStrategySpec, CacheStrategyShape],
} satisfies Record<string, [(value: unknown) => boolean, v.GenericSchema]>;

/** True only for values {@link PluginShape} accepts. */
export function isPluginSpec(value: unknown): boolean {
  if (!isObject(value)) return false;
  const { name, api, setup } = value as Record<string, unknown>;
  return isText(name) && ((typeof api === "number" && Number.isInteger(api) && api >= 0) || isText(api)) && typeof setup === "function";
}

/** True only for values {@link ProviderSpecShape} accepts. */
export function isProviderSpec(value: unknown): boolean {
  if (!isObject(value)) return false;
  const s = value as Record<string, unknown>;
  return (
    isText(s.id) &&
    PROTOCOL_SET.has(s.protocol) &&
    (s.name === undefined || typeof s.name === "string") &&
    (s.catalogId === undefined || isText(s.catalogId)) &&
    isListOf(s.env, isText) &&
    typeof s.defaultBaseUrl === "string" &&
    typeof s.emulatorPath === "string" &&
    s.emulatorPath.startsWith("/") &&
    (s.cacheRules === undefined || typeof s.cacheRules === "function") &&
    (s.models === undefined || isListOf(s.models, isText)) &&
    (s.usageExamples === undefined || isListOf(s.usageExamples, isUsageExample)) &&
    typeof s.create === "function"
  );
}

/** True only for values {@link CacheStrategyShape} accepts. */
export function isCacheStrategySpec(value: unknown): boolean {
  if (!isObject(value)) return false;
  const s = value as Record<string, unknown>;
  return (
    isText(s.id) &&
    isListOf(s.protocols, (p) => PROTOCOL_SET.has(p)) &&
    (s.protocols as unknown[]).length > 0 &&
    (s.providers === undefined || isListOf(s.providers, isText)) &&
    typeof s.apply === "function"
  );
}

function isUsageExample(value: unknown): boolean {
  if (!isObject(value)) return false;
  const { usage, source } = value as Record<string, unknown>;
  if (!isObject(usage) || (source !== undefined && typeof source !== "string")) return false;
  for (const key in usage) {
    const count = (usage as Record<string, unknown>)[key];
    if (count !== null && count !== undefined && !(typeof count === "number" && Number.isFinite(count) && count >= 0)) return false;
  }
  return true;
}

function isText(value: unknown): boolean {
  return typeof value === "string" && value.length > 0;
}

/** An array whose every index (holes included) holds an item `ok` accepts. */
function isListOf(value: unknown, ok: (item: unknown) => boolean): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!ok(value[i])) return false;
  return true;
}

const FINISH_REASONS = ["stop", "length", "tool_calls", "content_filter", "refusal", "error", "other"] as const satisfies readonly FinishReason[];
const FINISH_REASON_SET: ReadonlySet<unknown> = new Set(FINISH_REASONS);

/** One event of `send`. */
export const StreamEventShape = deferred(() => {
  const { Text } = base();
  return v.variant("type", [
    v.looseObject({ type: v.literal("text"), delta: v.string(), signature: v.optional(v.string()) }),
    v.looseObject({ type: v.literal("thinking"), delta: v.string(), signature: v.optional(v.string()) }),
    v.looseObject({ type: v.literal("tool_call"), id: v.string(), name: Text, arguments: v.string(), signature: v.optional(v.string()) }),
    v.looseObject({ type: v.literal("image"), mediaType: v.pipe(v.string(), v.minLength(1)), data: v.string() }),
    v.looseObject({ type: v.literal("provider_block"), protocol: v.string(), block: v.record(v.string(), v.unknown()) }),
    v.looseObject({ type: v.literal("chatter"), detail: v.string() }),
    v.looseObject({ type: v.literal("usage"), rawUsage: v.unknown(), requestId: v.optional(v.string()) }),
    v.looseObject({
      type: v.literal("finish"),
      reason: v.picklist(FINISH_REASONS),
      rawReason: v.optional(v.string()),
      rawUsage: v.unknown(),
      requestId: v.optional(v.string()),
      serviceTier: v.optional(v.string()),
    }),
  ]);
});

/**
 * True only for values {@link StreamEventShape} accepts: the check of every
 * event of every answer, without valibot (whose first run over them cost
 * ~2.5 profiled ms between a run's first answer byte and its first output,
 * and each later event costs it a parse); anything else is left to valibot,
 * which describes what is wrong.
 */
export function isStreamEvent(value: unknown): boolean {
  if (!isObject(value)) return false;
  const e = value as Record<string, unknown>;
  switch (e.type) {
    case "text":
    case "thinking":
      return typeof e.delta === "string" && isOptionalString(e.signature);
    case "tool_call":
      return typeof e.id === "string" && isText(e.name) && typeof e.arguments === "string" && isOptionalString(e.signature);
    case "image":
      return isText(e.mediaType) && typeof e.data === "string";
    case "provider_block":
      return typeof e.protocol === "string" && isObject(e.block);
    case "chatter":
      return typeof e.detail === "string";
    case "usage":
      return "rawUsage" in e && isOptionalString(e.requestId);
    case "finish":
      return FINISH_REASON_SET.has(e.reason) && isOptionalString(e.rawReason) && "rawUsage" in e && isOptionalString(e.requestId) && isOptionalString(e.serviceTier);
    default:
      return false;
  }
}

/**
 * True only for values {@link UsageReportShape} accepts whose `usage`
 * {@link UsageShape} accepts too, in the form most reports take (no server
 * tool calls, modalities or passes: those are left to valibot, as is anything
 * wrong). The check of every request's usage, without valibot's first run
 * (~1 profiled ms after each run's answer).
 */
export function isPlainUsageReport(value: unknown): boolean {
  if (!isObject(value)) return false;
  const r = value as Record<string, unknown>;
  return (
    isObject(r.usage) &&
    USAGE_COUNTS.every((key) => isOptionalCount((r.usage as Record<string, unknown>)[key])) &&
    "raw" in r &&
    (r.providerCostUsd === undefined || isAmount(r.providerCostUsd)) &&
    (r.routerFeeUsd === undefined || isAmount(r.routerFeeUsd)) &&
    (r.estimates === undefined || isListOf(r.estimates, (item) => typeof item === "string")) &&
    isOptionalString(r.serviceTier) &&
    r.serverToolCalls === undefined &&
    r.modalities === undefined &&
    (r.cacheMode === undefined || r.cacheMode === "explicit" || r.cacheMode === "implicit") &&
    r.passes === undefined
  );
}

function isOptionalString(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

/** A whole number from 0 to 2^53 − 1 (Count in the shapes). */
function isCount(value: unknown): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** A finite number ≥ 0: an amount of USD. */
function isAmount(value: unknown): boolean {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

function isOptionalCount(value: unknown): boolean {
  return value === undefined || value === null || isCount(value);
}

/** Normalized usage: every count optional; a left-out or null count is unknown. */
const usageShape = once(() => {
  const { Count } = base();
  return v.looseObject({
    input: v.nullish(Count),
    cacheRead: v.nullish(Count),
    cacheWrite5m: v.nullish(Count),
    cacheWrite1h: v.nullish(Count),
    output: v.nullish(Count),
    reasoning: v.nullish(Count),
  });
});
export const UsageShape = deferred(usageShape);

/** What `usage(raw)` returns. */
export const UsageReportShape = deferred(() => {
  const { Count } = base();
  return v.looseObject({
    usage: v.looseObject({}),
    raw: v.unknown(),
    providerCostUsd: v.optional(v.pipe(v.number(), v.finite(), v.minValue(0))),
    routerFeeUsd: v.optional(v.pipe(v.number(), v.finite(), v.minValue(0))),
    estimates: v.optional(v.array(v.string())),
    serviceTier: v.optional(v.string()),
    serverToolCalls: v.optional(v.record(v.picklist(["web_search", "web_fetch", "code_execution", "grounding"]), Count)),
    modalities: v.optional(
      v.looseObject({
        input: v.optional(v.looseObject({ image: v.optional(Count), audio: v.optional(Count) })),
        output: v.optional(v.looseObject({ image: v.optional(Count), audio: v.optional(Count) })),
      }),
    ),
    cacheMode: v.optional(v.picklist(["explicit", "implicit"])),
    passes: v.optional(v.array(v.looseObject({ role: v.pipe(v.string(), v.minLength(1)), usage: usageShape(), raw: v.unknown() }))),
  });
});

/** What a `context:overlay` handler returns. */
export const OverlayShape = deferred(() => v.nullish(v.string()));

/**
 * Checks `value` against `shape`; on failure, one phrase saying what was
 * wrong and where: `input NaN (expected number)`, every missing field at
 * once (`missing render, send`), or both.
 */
export function check<S extends v.GenericSchema>(shape: S, value: unknown): { ok: true; value: v.InferOutput<S> } | { ok: false; problem: string } {
  const result = v.safeParse(shape, value);
  if (result.success) return { ok: true, value: result.output };
  const isMissing = (issue: v.BaseIssue<unknown>) => issue.input === undefined && v.getDotPath(issue) !== null;
  const missing = result.issues.filter(isMissing).map((issue) => v.getDotPath(issue));
  const wrong = result.issues.find((issue) => !isMissing(issue));
  const parts = [...(missing.length > 0 ? [`missing ${missing.join(", ")}`] : []), ...(wrong ? [describeIssue(wrong)] : [])];
  return { ok: false, problem: parts.join("; ") };
}

function describeIssue(issue: v.BaseIssue<unknown>): string {
  const subject = v.getDotPath(issue) ?? "the value";
  if (issue.kind !== "schema") {
    // A failed check (finite, min value, starts with, ...): valibot's expectation reads as "≥ 0", "!Infinity", ...
    return `${subject} ${issue.received} (expected ${EXPECTED[issue.type] ?? issue.expected})`;
  }
  return `${subject} ${issue.received} (expected ${issue.expected === "unknown" ? "a function" : issue.expected})`;
}

const EXPECTED: Record<string, string> = {
  finite: "a finite number",
  min_value: "a number ≥ 0",
  integer: "an integer",
  safe_integer: "a whole number",
  min_length: "a non-empty value",
  starts_with: 'a path starting with "/"',
};
