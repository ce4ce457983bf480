/**
 * The plugin host's boundary: load-time validation (shape, protocol, API
 * range) and every guarded call (adapter create/render/send/usage, cache
 * strategies, hooks), each failing with one line naming the plugin and the call.
 */
import { describe, expect, test } from "bun:test";
import type { RequestContext } from "../context/types.ts";
import { CachetError, ProviderError } from "../errors.ts";
import { API_VERSION } from "./define-plugin.ts";
import { PluginHost } from "./host.ts";
import type { ProviderAdapter, ProviderSpec } from "./provider.ts";
import type { StreamEvent } from "./stream.ts";
import type { WireRequest } from "./wire.ts";

const CONFIG = { providerId: "acme", apiKey: "k", baseUrl: "http://127.0.0.1:9/v1", fetch, options: {} };
const WIRE: WireRequest = { protocol: "openai-chat", body: { messages: [] }, headers: {}, segments: [{ nodeId: "m1", kind: "message", path: ["messages", 0] }] };
const CONTEXT = {} as RequestContext;

function good(): ProviderAdapter {
  return {
    render: () => structuredClone(WIRE),
    async *send() {
      yield { type: "text", delta: "hi" };
      yield { type: "finish", reason: "stop", rawUsage: { prompt_tokens: 10 } };
    },
    usage: (raw) => ({ raw, usage: { input: 10, output: 2 } }),
  };
}

function spec(create: () => unknown, extra: Partial<ProviderSpec> = {}): ProviderSpec {
  return { id: "acme", protocol: "openai-chat", env: [], defaultBaseUrl: "http://x", emulatorPath: "/acme", create: create as ProviderSpec["create"], ...extra };
}

async function hostWith(setup: (api: Parameters<Parameters<typeof hostWithPlugin>[0]["setup"]>[0]) => void, api: unknown = "^1"): Promise<PluginHost> {
  return hostWithPlugin({ name: "acme", api, setup });
}

async function hostWithPlugin(plugin: { name: string; api: unknown; setup: (api: import("./define-plugin.ts").PluginApi) => void }): Promise<PluginHost> {
  const host = new PluginHost();
  await host.load(plugin, "/plugins/acme.js");
  return host;
}

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

function thrown(fn: () => unknown): CachetError {
  try {
    fn();
  } catch (error) {
    return error as CachetError;
  }
  throw new Error("expected a throw");
}

async function rejected(promise: Promise<unknown>): Promise<CachetError> {
  try {
    await promise;
  } catch (error) {
    return error as CachetError;
  }
  throw new Error("expected a rejection");
}

describe("load-time validation", () => {
  test("api ranges: ^1, a bare 1 and >=1.0 load; ^2 is one line naming the plugin and both versions", async () => {
    for (const api of ["^1", 1, ">=1.0 <3", "^1.1"]) {
      const host = await hostWith(() => {}, api);
      expect(host.failures).toEqual([]);
      expect(host.plugins.map((p) => p.name)).toEqual(["acme"]);
    }
    const host = await hostWith(() => {}, "^2");
    expect(host.failures.map((f) => f.message)).toEqual([`plugin "acme" (/plugins/acme.js) failed to load: it needs plugin API ^2, this cachet serves ${API_VERSION}`]);
    expect(host.failures[0]!.message).not.toContain("\n");
  });

  test("an unknown protocol and missing fields are refused with one line each", async () => {
    const grpc = await hostWith((api) => api.provider(spec(good, { protocol: "grpc" as never })));
    expect(grpc.failures[0]!.message).toContain('failed to load: provider "acme" has protocol "grpc" (expected ("anthropic-messages" | "openai-chat" | "openai-responses" | "gemini"))');
    const missing = await hostWith((api) => api.provider({ id: "acme", protocol: "openai-chat", create: good } as never));
    expect(missing.failures[0]!.message).toContain('failed to load: provider "acme" has missing env, defaultBaseUrl, emulatorPath');
    const strategy = await hostWith((api) => api.cacheStrategy({ id: "s", protocols: ["smoke-signals" as never], apply: (w) => w }));
    expect(strategy.failures[0]!.message).toContain('cache strategy "s" has protocols.0 "smoke-signals"');
    const noSetup = await hostWithPlugin({ name: "acme", api: 1 } as never);
    expect(noSetup.failures[0]!.message).toContain("the plugin object has missing setup");
    for (const host of [grpc, missing, strategy, noSetup]) {
      expect(host.providers.has("acme")).toBe(false);
      expect(host.failures[0]!.message).not.toContain("\n");
    }
  });

  test("an unknown hook name is refused", async () => {
    const host = await hostWith((api) => api.hook("session:forked" as never, (() => {}) as never));
    expect(host.failures[0]!.message).toContain('unknown hook "session:forked"');
  });
});

describe("guarded adapter calls", () => {
  test("create returning {} names the plugin, the provider and the missing methods", async () => {
    const host = await hostWith((api) => api.provider(spec(() => ({}))));
    const error = thrown(() => host.createAdapter("acme", CONFIG));
    expect(error.code).toBe("PLUGIN_HOOK");
    expect(error.message).toBe("acme: provider acme: create() returned missing render, send, usage");
  });

  test("render throwing is a PLUGIN_HOOK error naming the call, not an internal error", async () => {
    const host = await hostWith((api) =>
      api.provider(spec(() => ({ ...good(), render: () => { throw new TypeError("cannot read properties of undefined (reading 'map')"); } }))),
    );
    const error = thrown(() => host.createAdapter("acme", CONFIG).render(CONTEXT));
    expect(error).toBeInstanceOf(CachetError);
    expect(error.message).toBe("acme: provider acme: render() threw: cannot read properties of undefined (reading 'map')");
  });

  test("render returning a request of another protocol or without segments is refused", async () => {
    const other = await hostWith((api) => api.provider(spec(() => ({ ...good(), render: () => ({ ...WIRE, protocol: "gemini" }) }))));
    expect(thrown(() => other.createAdapter("acme", CONFIG).render(CONTEXT)).message).toBe(
      "acme: provider acme: render() returned a gemini request, but the provider is registered as openai-chat",
    );
    const bare = await hostWith((api) => api.provider(spec(() => ({ ...good(), render: () => ({ protocol: "openai-chat", body: {} }) }))));
    expect(thrown(() => bare.createAdapter("acme", CONFIG).render(CONTEXT)).message).toBe("acme: provider acme: render() returned missing headers, segments");
  });

  test("usage returning NaN, a string, a negative, fractional or infinite count: usage() names the field; usageOrUnknown gives unknown usage and a warning", async () => {
    for (const [value, shown] of [[Number.NaN, "NaN"], ["12", '"12"'], [-3, "-3"], [2.5, "2.5"], [Number.POSITIVE_INFINITY, "Infinity"]] as const) {
      const host = await hostWith((api) => api.provider(spec(() => ({ ...good(), usage: (raw: unknown) => ({ raw, usage: { input: value, output: 2 } }) }))));
      const adapter = host.createAdapter("acme", CONFIG);
      expect(thrown(() => adapter.usage({ prompt_tokens: 1 })).message).toStartWith(`acme: provider acme: usage() returned input ${shown} (expected `);
      const { report, warning } = adapter.usageOrUnknown({ prompt_tokens: 1 });
      expect(report.usage).toEqual({ input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined });
      expect(report.raw).toEqual({ prompt_tokens: 1 });
      expect(warning).toStartWith(`acme: provider acme: usage() returned input ${shown}`);
      expect(warning).toEndWith("; usage unknown for this request");
    }
  });

  test("usage throwing, or returning no report, is unknown usage with a warning", async () => {
    const throwing = await hostWith((api) => api.provider(spec(() => ({ ...good(), usage: () => { throw new Error("prompt_tokens_details is undefined"); } }))));
    expect(throwing.createAdapter("acme", CONFIG).usageOrUnknown({}).warning).toBe("acme: provider acme: usage() threw: prompt_tokens_details is undefined; usage unknown for this request");
    const empty = await hostWith((api) => api.provider(spec(() => ({ ...good(), usage: () => undefined }))));
    expect(empty.createAdapter("acme", CONFIG).usageOrUnknown({}).warning).toStartWith("acme: provider acme: usage() returned the value undefined");
  });

  test("a usage that leaves fields out (an older plugin) is valid: the missing counts are unknown", async () => {
    const host = await hostWith((api) => api.provider(spec(() => ({ ...good(), usage: (raw: unknown) => ({ raw, usage: { input: 7, output: null } }) }))));
    const { report, warning } = host.createAdapter("acme", CONFIG).usageOrUnknown({});
    expect(warning).toBeUndefined();
    expect(report.usage).toEqual({ input: 7, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined });
  });

  test("send: a wrong event, a plain throw and a non-iterable are named; a ProviderError from a bundled copy stays retryable", async () => {
    const badEvent = await hostWith((api) =>
      api.provider(spec(() => ({ ...good(), async *send() { yield { type: "text", delta: "ok" }; yield { type: "text", delta: 42 }; } }))),
    );
    expect((await rejected(collect(badEvent.createAdapter("acme", CONFIG).send(WIRE, { signal: AbortSignal.timeout(1000) })))).message).toBe(
      "acme: provider acme: send() yielded a wrong event #1: delta 42 (expected string)",
    );
    const signedText = await hostWith((api) =>
      api.provider(spec(() => ({ ...good(), async *send() { yield { type: "text", delta: "ok", signature: "sig-1" }; yield { type: "text", delta: "", signature: 7 }; } }))),
    );
    expect((await rejected(collect(signedText.createAdapter("acme", CONFIG).send(WIRE, { signal: AbortSignal.timeout(1000) })))).message).toBe(
      "acme: provider acme: send() yielded a wrong event #1: signature 7 (expected string)",
    );
    const throwing = await hostWith((api) => api.provider(spec(() => ({ ...good(), async *send() { throw new Error("socket hang up"); } }))));
    expect((await rejected(collect(throwing.createAdapter("acme", CONFIG).send(WIRE, { signal: AbortSignal.timeout(1000) })))).message).toBe(
      "acme: provider acme: send() threw: socket hang up",
    );
    const notIterable = await hostWith((api) => api.provider(spec(() => ({ ...good(), send: () => "text" }))));
    expect((await rejected(collect(notIterable.createAdapter("acme", CONFIG).send(WIRE, { signal: AbortSignal.timeout(1000) })))).message).toContain(
      "acme: provider acme: send() returned no async iterable",
    );
    // What a plugin bundling its own copy of the API package throws: not this module's class.
    const foreign = Object.assign(new Error("HTTP 429 rate limited"), { name: "ProviderError", code: "PROVIDER_HTTP", exitCode: 4, status: 429, retryable: true, retryAfterMs: 2000 });
    const limited = await hostWith((api) => api.provider(spec(() => ({ ...good(), async *send() { throw foreign; } }))));
    const error = await rejected(collect(limited.createAdapter("acme", CONFIG).send(WIRE, { signal: AbortSignal.timeout(1000) })));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: "PROVIDER_HTTP", status: 429, retryable: true, retryAfterMs: 2000 });
  });
});

describe("guarded strategies and hooks", () => {
  test("a cache strategy that throws, returns junk or moves segments is named", async () => {
    const cases: [(w: WireRequest) => unknown, string][] = [
      [() => { throw new RangeError("too many breakpoints"); }, "acme: cache strategy acme-keys: apply() threw: too many breakpoints"],
      [() => undefined, "acme: cache strategy acme-keys: apply() returned the value undefined"],
      [(w) => ({ ...w, segments: [] }), "acme: cache strategy acme-keys: apply() changed the request's protocol or segments (a cache strategy may only add markers)"],
    ];
    for (const [apply, message] of cases) {
      const host = await hostWith((api) => {
        api.provider(spec(good));
        api.cacheStrategy({ id: "acme-keys", protocols: ["openai-chat"], apply: apply as never });
      });
      expect(thrown(() => host.applyStrategies(structuredClone(WIRE), CONTEXT, "acme")).message).toStartWith(message);
    }
  });

  test("hooks: a throw names the plugin and the hook; request:before and context:overlay results are checked", async () => {
    const host = await hostWith((api) => {
      api.hook("request:before", () => ({ protocol: "openai-chat" }) as never);
      api.hook("context:overlay", () => 42 as never);
      api.hook("session:fork", () => { throw new Error("audit log is read-only"); });
    });
    expect((await rejected(host.callSequential("request:before", WIRE, CONTEXT))).message).toBe("acme: hook request:before returned missing body, headers, segments");
    expect((await rejected(host.callCollect("context:overlay", CONTEXT))).message).toBe("acme: hook context:overlay returned the value 42 (expected string)");
    expect((await rejected(host.callParallel("session:fork", { parentId: "s1", childId: "s2", exact: true }))).message).toBe("acme: hook session:fork threw: audit log is read-only");
  });

  test("api.adapter hands another plugin's adapter guarded, in the plain adapter shape", async () => {
    const host = new PluginHost();
    await host.load({ name: "base", api: 1, setup: (api: import("./define-plugin.ts").PluginApi) => api.provider({ ...spec(() => ({ ...good(), usage: () => ({ raw: 1, usage: { input: Number.NaN } }) })), id: "base" }) }, "base.js");
    let wrapped: ProviderAdapter | undefined;
    await host.load({ name: "acme", api: 1, setup: (api: import("./define-plugin.ts").PluginApi) => api.provider(spec(() => (wrapped = api.adapter("base", CONFIG)))) }, "acme.js");
    host.createAdapter("acme", CONFIG);
    expect(Object.keys(wrapped!).sort()).toEqual(["render", "send", "usage"]);
    expect(thrown(() => wrapped!.usage({})).message).toStartWith("base: provider base: usage() returned input NaN");
  });
});
