/**
 * The plugin host: runs each plugin's setup, keeps what it registered, and
 * calls hooks. Everything a plugin registers is validated when it registers
 * it, and every call into plugin code goes through guard.ts, so the core only
 * ever calls guarded functions and sees checked results.
 */
import type * as v from "valibot";
import type { RequestContext } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { checkApiRange } from "./api-range.ts";
import type { CacheStrategySpec } from "./cache-strategy.ts";
import { API_VERSION, type Plugin, type PluginApi, type PluginLogger } from "./define-plugin.ts";
import { inSite } from "./exit-trap.ts";
import { checked, checkedWire, DEFAULT_HOOK_TIMEOUT_MS, guard, guardAdapter, guardAsync, resultError, type HookLimits, type HostAdapter } from "./guard.ts";
import { HOOK_KINDS, type HookName, type HookRegistration, type Hooks } from "./hooks.ts";
import type { ProviderConfig, ProviderSpec } from "./provider.ts";
import { pluginServices } from "./services.ts";
import { checkSpec, HookNameShape, OverlayShape, WireRequestShape, check } from "./validate.ts";
import type { Protocol, WireRequest } from "./wire.ts";

/** A registered item with the plugin that registered it. */
export interface Owned<T> {
  plugin: string;
  value: T;
}

/** A plugin that failed to load; the others keep working. */
export interface PluginFailure {
  /** Plugin name, or the path / package it was loaded from. */
  plugin: string;
  message: string;
}

/** Summary of one loaded plugin, for `cachet plugins`. */
export interface PluginInfo {
  name: string;
  source: string;
  providers: string[];
  strategies: string[];
  hooks: HookName[];
}

type HandlerOf<K extends HookName> = Owned<Hooks[K]> & { order: "pre" | "normal" | "post" };

type SequentialHook = { [K in HookName]: (typeof HOOK_KINDS)[K] extends "sequential" ? K : never }[HookName];
type ParallelHook = { [K in HookName]: (typeof HOOK_KINDS)[K] extends "parallel" ? K : never }[HookName];
type CollectHook = { [K in HookName]: (typeof HOOK_KINDS)[K] extends "collect" ? K : never }[HookName];
type FirstArg<K extends HookName> = Parameters<Hooks[K]>[0];
type RestArgs<K extends HookName> = Parameters<Hooks[K]> extends [unknown, ...infer R] ? R : never;
type Result<K extends HookName> = Awaited<ReturnType<Hooks[K]>>;

/** Holds everything plugins registered. */
export class PluginHost {
  /** Bounds applied to every hook call; set once the run's limits are known. */
  limits: HookLimits = { timeoutMs: DEFAULT_HOOK_TIMEOUT_MS };
  readonly providers = new Map<string, Owned<ProviderSpec>>();
  readonly strategies = new Map<string, Owned<CacheStrategySpec>>();
  readonly failures: PluginFailure[] = [];
  readonly plugins: PluginInfo[] = [];
  private readonly hooks = new Map<HookName, HandlerOf<HookName>[]>();

  /**
   * Runs a plugin's setup. A failing plugin is recorded in `failures` with
   * its name and does not take the others down; whatever it registered
   * before failing is removed.
   * @param options.builtin a plugin of cachet's own (plugins/): its object and the specs it registers are taken as they
   *   are, since the contract tests check them (src/plugin/spec-check.test.ts); every other plugin's are checked here
   */
  async load(plugin: unknown, source: string, options: { builtin?: boolean } = {}): Promise<boolean> {
    const name = pluginName(plugin, source);
    const undo: (() => void)[] = [];
    const info: PluginInfo = { name, source, providers: [], strategies: [], hooks: [] };
    try {
      const valid = options.builtin ? (plugin as Plugin) : validatePlugin(plugin, name);
      if (this.plugins.some((p) => p.name === valid.name)) {
        throw new CachetError("PLUGIN_LOAD", `plugin "${valid.name}" is loaded twice`);
      }
      const api = this.apiFor(valid.name, info, undo, options.builtin === true);
      await inSite({ plugin: valid.name, call: "setup()" }, () => valid.setup(api));
      this.plugins.push(info);
      return true;
    } catch (cause) {
      for (const u of undo.reverse()) u();
      const message = cause instanceof Error ? cause.message : String(cause);
      this.failures.push({ plugin: name, message: `plugin "${name}" (${source}) failed to load: ${message}` });
      return false;
    }
  }

  /** The provider registered under `id`. @throws CachetError UNKNOWN_PROVIDER. */
  provider(id: string): ProviderSpec {
    const owned = this.providers.get(id);
    if (!owned) {
      const known = [...this.providers.keys()].sort().join(", ");
      const failed = this.failures.length ? ` (${this.failures.length} plugin(s) failed to load: run \`cachet plugins\`)` : "";
      throw new CachetError("UNKNOWN_PROVIDER", `unknown provider "${id}"${failed}`, {
        hint: `known providers: ${known}`,
      });
    }
    return owned.value;
  }

  /**
   * Creates an adapter: `create` guarded, its result checked, and every
   * method of the adapter guarded and checked (guard.ts).
   * @throws CachetError UNKNOWN_PROVIDER; PLUGIN_HOOK naming the plugin and the call.
   */
  createAdapter(id: string, config: ProviderConfig): HostAdapter {
    const spec = this.provider(id);
    const plugin = this.providers.get(id)!.plugin;
    const created = guard({ plugin, call: `provider ${id}: create()` }, () => spec.create(config));
    return guardAdapter(plugin, id, spec.protocol, created);
  }

  /** Strategies that apply to a provider of a protocol, in registration order. */
  strategiesFor(protocol: Protocol, providerId: string): Owned<CacheStrategySpec>[] {
    return [...this.strategies.values()].filter(
      (s) => s.value.protocols.includes(protocol) && (!s.value.providers || s.value.providers.includes(providerId)),
    );
  }

  /**
   * Runs the cache strategies of the request's protocol and provider in
   * registration order, each guarded; each must return a wire request of the
   * same protocol with the same segments (markers added, nothing moved).
   * @throws CachetError PLUGIN_HOOK naming the plugin and the strategy; a CACHE_CONTRACT a strategy threw on purpose.
   */
  applyStrategies(wire: WireRequest, context: RequestContext, providerId: string): WireRequest {
    let current = wire;
    for (const strategy of this.strategiesFor(wire.protocol, providerId)) {
      const site = { plugin: strategy.plugin, call: `cache strategy ${strategy.value.id}: apply()` };
      const input = current;
      const next = checkedWire(site, guard(site, () => strategy.value.apply(input, context)));
      if (next.protocol !== input.protocol || next.segments.length !== input.segments.length) {
        throw resultError(site, "changed the request's protocol or segments (a cache strategy may only add markers)");
      }
      current = next;
    }
    return current;
  }

  /** Calls a sequential hook: each handler may replace the value. */
  async callSequential<K extends SequentialHook>(name: K, value: FirstArg<K>, ...rest: RestArgs<K>): Promise<FirstArg<K>> {
    let current = value;
    for (const h of this.handlers(name)) {
      const site = { plugin: h.plugin, call: `hook ${name}` };
      const next = await guardAsync(site, () => (h.value as (...a: unknown[]) => unknown)(current, ...rest), this.limits);
      if (next !== undefined && next !== null) current = (name === "request:before" ? checkedWire(site, next) : checked(site, HOOK_RESULTS[name], next)) as FirstArg<K>;
    }
    return current;
  }

  /** Calls a parallel hook for its side effects. */
  async callParallel<K extends ParallelHook>(name: K, ...args: Parameters<Hooks[K]>): Promise<void> {
    await Promise.all(this.handlers(name).map((h) => guardAsync({ plugin: h.plugin, call: `hook ${name}` }, () => (h.value as (...a: unknown[]) => unknown)(...args), this.limits)));
  }

  /** Calls a collect hook: the defined results, in plugin order. */
  async callCollect<K extends CollectHook>(name: K, ...args: Parameters<Hooks[K]>): Promise<NonNullable<Result<K>>[]> {
    const out: NonNullable<Result<K>>[] = [];
    for (const h of this.handlers(name)) {
      const site = { plugin: h.plugin, call: `hook ${name}` };
      const r = checked(site, HOOK_RESULTS[name], await guardAsync(site, () => (h.value as (...a: unknown[]) => unknown)(...args), this.limits));
      if (r !== undefined && r !== null) out.push(r as NonNullable<Result<K>>);
    }
    return out;
  }

  /** True when some plugin registered a handler for `name`. */
  has(name: HookName): boolean {
    return (this.hooks.get(name)?.length ?? 0) > 0;
  }

  private handlers(name: HookName): HandlerOf<HookName>[] {
    const list = this.hooks.get(name) ?? [];
    const rank = { pre: 0, normal: 1, post: 2 } as const;
    return [...list].sort((a, b) => rank[a.order] - rank[b.order]);
  }

  private apiFor(plugin: string, info: PluginInfo, undo: (() => void)[], builtin: boolean): PluginApi {
    const register = <T>(map: Map<string, Owned<T>>, what: "provider" | "cache strategy", value: T, list: string[]) => {
      const id = builtin ? (value as { id: string }).id : validSpec(what, value);
      const taken = map.get(id);
      if (taken) throw new CachetError("PLUGIN_LOAD", `${what} "${id}" is already registered by plugin "${taken.plugin}"`);
      map.set(id, { plugin, value });
      list.push(id);
      const remove = () => {
        if (map.get(id)?.plugin === plugin) map.delete(id);
      };
      undo.push(remove);
      return remove;
    };
    const log: PluginLogger = {
      info: (m) => void import("../log.ts").then((l) => l.info(`[${plugin}] ${m}`)),
      warn: (m) => void import("../log.ts").then((l) => l.warn(`[${plugin}] ${m}`)),
      debug: (m) => void import("../log.ts").then((l) => l.debug(`[${plugin}] ${m}`)),
    };
    return {
      version: Number(API_VERSION.split(".")[0]),
      apiVersion: API_VERSION,
      provider: (spec) => register(this.providers, "provider", spec, info.providers),
      cacheStrategy: (spec) => register(this.strategies, "cache strategy", spec, info.strategies),
      hook: (name, registration) => {
        if (!check(HookNameShape, name).ok) throw new CachetError("PLUGIN_LOAD", `unknown hook "${String(name)}"`, { hint: `hooks: ${Object.keys(HOOK_KINDS).join(", ")}` });
        const entry = normalizeRegistration(plugin, registration);
        const list = this.hooks.get(name) ?? [];
        list.push(entry as HandlerOf<HookName>);
        this.hooks.set(name, list);
        info.hooks.push(name);
        const remove = () => {
          const current = this.hooks.get(name);
          if (current) this.hooks.set(name, current.filter((h) => h !== entry));
        };
        undo.push(remove);
        return remove;
      },
      adapter: (providerId, config) => {
        const { usageOrUnknown: _, ...adapter } = this.createAdapter(providerId, config);
        return adapter;
      },
      services: pluginServices,
      log,
    };
  }
}

/** What each hook's handlers may return; a hook run for its side effects returns nothing the host reads. */
const HOOK_RESULTS = {
  "request:before": WireRequestShape,
  "context:overlay": OverlayShape,
} satisfies Record<SequentialHook | CollectHook, v.GenericSchema>;

function normalizeRegistration<K extends HookName>(plugin: string, registration: HookRegistration<K>): HandlerOf<K> {
  if (typeof registration === "function") return { plugin, value: registration, order: "normal" };
  if (registration && typeof registration.handler === "function") {
    return { plugin, value: registration.handler, order: registration.order ?? "normal" };
  }
  throw new CachetError("PLUGIN_LOAD", "a hook registration must be a function or { handler, order }");
}

function pluginName(plugin: unknown, source: string): string {
  const name = (plugin as { name?: unknown } | null)?.name;
  return typeof name === "string" && name !== "" ? name : source;
}

function validatePlugin(plugin: unknown, name: string): Plugin {
  if (plugin === null || typeof plugin !== "object") {
    throw new CachetError("PLUGIN_LOAD", "its default export is not a plugin", { hint: "export default definePlugin({ name, api: \"^1\", setup(api) {...} })" });
  }
  const result = checkSpec("plugin", plugin);
  if (!result.ok) throw new CachetError("PLUGIN_LOAD", `the plugin object has ${result.problem}`, { hint: 'a plugin is definePlugin({ name, api: "^1", setup(api) {...} })' });
  checkApiRange(name, (plugin as Plugin).api);
  return plugin as Plugin;
}

/** The spec's id once it has the API's shape. @throws CachetError PLUGIN_LOAD naming the spec and what is wrong. */
function validSpec(what: "provider" | "cache strategy", spec: unknown): string {
  const result = checkSpec(what, spec);
  if (result.ok) return (spec as { id: string }).id;
  const id = (spec as { id?: unknown } | null)?.id;
  throw new CachetError("PLUGIN_LOAD", `${what} ${typeof id === "string" && id ? `"${id}" ` : ""}has ${result.problem}`);
}
