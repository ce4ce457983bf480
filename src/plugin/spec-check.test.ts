/**
 * The load-time spec checks (checkSpec) take their plain-predicate path for
 * every built-in plugin, provider and cache strategy, and decide exactly as
 * valibot's shapes do on those specs with any one field made wrong or left out.
 * The host takes the built-in plugins' specs as they are (host.load's
 * `builtin`): these tests are their check, at test time instead of every start.
 */
import { expect, test } from "bun:test";
import type * as v from "valibot";
import { builtinPlugins } from "../../plugins/index.ts";
import { checkApiRange } from "./api-range.ts";
import type { Plugin, PluginApi } from "./define-plugin.ts";
import { pluginServices } from "./services.ts";
import { AdapterShape, CacheStrategyShape, check, checkSpec, isAdapter, isCacheStrategySpec, isPlainUsageReport, isPluginSpec, isProviderSpec, isStreamEvent, PluginShape, ProviderSpecShape, StreamEventShape, UsageReportShape, UsageShape } from "./validate.ts";

type Kind = "plugin" | "provider" | "cache strategy";

async function builtinSpecs(): Promise<{ kind: Kind; value: Record<string, unknown> }[]> {
  const specs: { kind: Kind; value: Record<string, unknown> }[] = [];
  for (const load of Object.values(builtinPlugins)) {
    const plugin = ((await load()) as { default: Plugin }).default;
    specs.push({ kind: "plugin", value: plugin as unknown as Record<string, unknown> });
    const api = {
      provider: (spec: unknown) => void specs.push({ kind: "provider", value: spec as Record<string, unknown> }),
      cacheStrategy: (spec: unknown) => void specs.push({ kind: "cache strategy", value: spec as Record<string, unknown> }),
      hook: () => () => {},
      services: pluginServices,
      log: { info() {}, warn() {}, debug() {} },
    } as unknown as PluginApi;
    plugin.setup(api);
  }
  return specs;
}

const FAST = { plugin: isPluginSpec, provider: isProviderSpec, "cache strategy": isCacheStrategySpec } as const;
const SHAPE: Record<Kind, v.GenericSchema> = { plugin: PluginShape, provider: ProviderSpecShape, "cache strategy": CacheStrategyShape };

const WRONG: unknown[] = [undefined, null, "", "x", "/x", 0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, true, [], [""], ["x"], ["openai-chat"], [1], {}, { a: -1 }, () => {}];

test("every built-in plugin, provider and cache strategy passes without valibot", async () => {
  const specs = await builtinSpecs();
  expect(specs.filter((s) => s.kind === "provider").length).toBeGreaterThanOrEqual(10);
  expect(specs.filter((s) => s.kind === "cache strategy").length).toBeGreaterThanOrEqual(6);
  for (const { kind, value } of specs) expect({ kind, id: value.id ?? value.name, fast: FAST[kind](value) }).toEqual({ kind, id: value.id ?? value.name, fast: true });
  for (const { value } of specs.filter((s) => s.kind === "plugin")) expect(() => checkApiRange(value.name as string, value.api as string | number)).not.toThrow();
});

test("with any one field wrong or missing, checkSpec decides as the valibot shape does, and the predicate never accepts what the shape refuses", async () => {
  const specs = await builtinSpecs();
  let refused = 0;
  for (const { kind, value } of specs) {
    const fields = new Set([...Object.keys(value), "id", "name", "api", "setup", "protocol", "env", "emulatorPath", "create", "protocols", "apply"]);
    const variants: Record<string, unknown>[] = [];
    for (const field of fields) {
      const { [field]: _, ...without } = value;
      variants.push(without);
      for (const wrong of WRONG) variants.push({ ...value, [field]: wrong });
    }
    const example = (value.usageExamples as { usage: object }[] | undefined)?.[0];
    if (example) {
      for (const count of [-1, Number.NaN, Number.POSITIVE_INFINITY, "1", null]) variants.push({ ...value, usageExamples: [{ ...example, usage: { ...example.usage, input: count } }] });
      variants.push({ ...value, usageExamples: [{ ...example, source: 1 }] }, { ...value, usageExamples: [null] });
    }
    for (const variant of variants) {
      const shape = check(SHAPE[kind], variant).ok;
      if (!shape) refused++;
      expect({ kind, variant, checked: checkSpec(kind, variant).ok, fastOnlyWhenValid: !FAST[kind](variant) || shape }).toEqual({ kind, variant, checked: shape, fastOnlyWhenValid: true });
    }
  }
  expect(refused).toBeGreaterThan(1000);
});

test("every built-in provider's adapter passes isAdapter; with any one method wrong or missing it decides as AdapterShape does", async () => {
  const specs = (await builtinSpecs()).filter((s) => s.kind === "provider");
  let refused = 0;
  for (const { value } of specs) {
    const adapter = (value.create as (config: object) => Record<string, unknown>)({ apiKey: "k", baseUrl: "http://127.0.0.1:9/v1", fetch });
    expect({ id: value.id, fast: isAdapter(adapter) }).toEqual({ id: value.id, fast: true });
    for (const method of ["render", "send", "usage"]) {
      const { [method]: _, ...without } = adapter;
      for (const variant of [without, ...WRONG.map((wrong) => ({ ...adapter, [method]: wrong }))]) {
        const shape = check(AdapterShape, variant).ok;
        if (!shape) refused++;
        expect({ id: value.id, method, fast: isAdapter(variant) }).toEqual({ id: value.id, method, fast: shape });
      }
    }
  }
  expect(refused).toBeGreaterThan(100);
  for (const value of WRONG) expect(isAdapter(value)).toBe(false);
});

const EVENTS: Record<string, unknown>[] = [
  { type: "text", delta: "hi" },
  { type: "text", delta: "hi", signature: "sig" },
  { type: "text", delta: "" },
  { type: "thinking", delta: "hm", signature: "sig" },
  { type: "thinking", delta: "hm" },
  { type: "tool_call", id: "c1", name: "get", arguments: "{}", signature: "s" },
  { type: "tool_call", id: "", name: "get", arguments: "" },
  { type: "image", mediaType: "image/png", data: "AAAA" },
  { type: "provider_block", protocol: "anthropic-messages", block: { type: "server_tool_use" } },
  { type: "chatter", detail: "ping" },
  { type: "usage", rawUsage: { input_tokens: 1 }, requestId: "r" },
  { type: "usage", rawUsage: undefined },
  { type: "finish", reason: "stop", rawReason: "end_turn", rawUsage: null, requestId: "r", serviceTier: "default" },
  { type: "finish", reason: "tool_calls", rawUsage: {} },
];

test("isStreamEvent accepts every kind of event, and with any one field wrong or missing decides as StreamEventShape does", () => {
  let refused = 0;
  for (const event of EVENTS) {
    expect({ event, fast: isStreamEvent(event) }).toEqual({ event, fast: true });
    const fields = new Set([...Object.keys(event), "type", "delta", "signature", "id", "name", "arguments", "mediaType", "data", "protocol", "block", "detail", "rawUsage", "requestId", "reason", "rawReason", "serviceTier"]);
    for (const field of fields) {
      const { [field]: _, ...without } = event;
      for (const variant of [without, ...[...WRONG, "stop", "nope", { a: 1 }].map((wrong) => ({ ...event, [field]: wrong }))]) {
        const shape = check(StreamEventShape, variant).ok;
        if (!shape) refused++;
        expect({ variant, fastOnlyWhenValid: !isStreamEvent(variant) || shape }).toEqual({ variant, fastOnlyWhenValid: true });
      }
    }
  }
  expect(refused).toBeGreaterThan(300);
  for (const value of WRONG) expect(isStreamEvent(value)).toBe(false);
});

test("every built-in provider's usage report of its examples passes isPlainUsageReport; with any one field wrong or missing it never accepts what the shapes refuse", async () => {
  const specs = (await builtinSpecs()).filter((s) => s.kind === "provider");
  let plain = 0;
  let refused = 0;
  const accepted = (value: unknown) => {
    const report = check(UsageReportShape, value);
    return report.ok && check(UsageShape, (report.value as { usage: unknown }).usage).ok;
  };
  for (const { value } of specs) {
    const adapter = (value.create as (config: object) => { usage(raw: unknown): Record<string, unknown> })({ apiKey: "k", baseUrl: "http://127.0.0.1:9/v1", fetch });
    for (const example of (value.usageExamples ?? []) as { raw: unknown }[]) {
      const report = adapter.usage(example.raw);
      // Every report without server tool calls, modalities or passes (left to valibot) takes the plain path.
      const simple = report.serverToolCalls === undefined && report.modalities === undefined && report.passes === undefined;
      expect({ provider: value.id, report, plain: isPlainUsageReport(report) }).toEqual({ provider: value.id, report, plain: simple });
      if (simple) plain++;
      const variants: unknown[] = [report];
      for (const field of ["usage", "raw", "providerCostUsd", "routerFeeUsd", "estimates", "serviceTier", "serverToolCalls", "modalities", "cacheMode", "passes"]) {
        const { [field]: _, ...without } = report;
        variants.push(without, ...[...WRONG, "explicit", ["x"], { web_search: 1 }].map((wrong) => ({ ...report, [field]: wrong })));
      }
      for (const count of ["input", "cacheRead", "output", "reasoning"]) {
        for (const wrong of [-1, Number.NaN, Number.POSITIVE_INFINITY, "1", null, undefined, 0, 7]) variants.push({ ...report, usage: { ...(report.usage as object), [count]: wrong } });
      }
      for (const variant of variants) {
        const shape = accepted(variant);
        if (!shape) refused++;
        expect({ provider: value.id, variant, fastOnlyWhenValid: !isPlainUsageReport(variant) || shape }).toEqual({ provider: value.id, variant, fastOnlyWhenValid: true });
      }
    }
  }
  expect(plain).toBeGreaterThanOrEqual(4);
  expect(refused).toBeGreaterThan(100);
});
