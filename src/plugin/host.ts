/**
 * The plugin host: runs each plugin's setup, keeps what it registered, and
 * calls hooks. Every call into plugin code is wrapped so a failure is
 * re-thrown as a PLUGIN_HOOK error naming the plugin, the hook and the cause.
 */
import { CachetError } from "../errors.ts";
import type { CacheStrategySpec } from "./cache-strategy.ts";
import { API_VERSION, type Plugin, type PluginApi, type PluginLogger } from "./define-plugin.ts";
import { HOOK_KINDS, type HookName, type HookRegistration, type Hooks } from "./hooks.ts";
import type { ProviderAdapter, ProviderConfig, ProviderSpec } from "./provider.ts";
import { pluginServices } from "./services.ts";
import type { Protocol } from "./wire.ts";

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
  readonly providers = new Map<string, Owned<ProviderSpec>>();
  readonly strategies = new Map<string, Owned<CacheStrategySpec>>();
  readonly failures: PluginFailure[] = [];
  readonly plugins: PluginInfo[] = [];
  private readonly hooks = new Map<HookName, HandlerOf<HookName>[]>();

  /**
   * Runs a plugin's setup. A failing plugin is recorded in `failures` with
   * its name and does not take the others down; whatever it registered
   * before failing is removed.
   */
  async load(plugin: unknown, source: string): Promise<boolean> {
    const name = pluginName(plugin, source);
    const undo: (() => void)[] = [];
    const info: PluginInfo = { name, source, providers: [], strategies: [], hooks: [] };
    try {
      const valid = validatePlugin(plugin, source);
      if (this.plugins.some((p) => p.name === valid.name)) {
        throw new CachetError("PLUGIN_LOAD", `plugin "${valid.name}" is loaded twice`);
      }
      await valid.setup(this.apiFor(valid.name, info, undo));
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
   * Creates an adapter, wrapping `create` so a throw names the plugin.
   * @throws CachetError UNKNOWN_PROVIDER, PLUGIN_HOOK.
   */
  createAdapter(id: string, config: ProviderConfig): ProviderAdapter {
    const spec = this.provider(id);
    const plugin = this.providers.get(id)!.plugin;
    return guard(plugin, `provider(${id}).create`, () => spec.create(config));
  }

  /** Strategies that apply to a provider of a protocol, in registration order. */
  strategiesFor(protocol: Protocol, providerId: string): Owned<CacheStrategySpec>[] {
    return [...this.strategies.values()].filter(
      (s) => s.value.protocols.includes(protocol) && (!s.value.providers || s.value.providers.includes(providerId)),
    );
  }

  /** Calls a sequential hook: each handler may replace the value. */
  async callSequential<K extends SequentialHook>(name: K, value: FirstArg<K>, ...rest: RestArgs<K>): Promise<FirstArg<K>> {
    let current = value;
    for (const h of this.handlers(name)) {
      const next = await guardAsync(h.plugin, name, () => (h.value as (...a: unknown[]) => unknown)(current, ...rest));
      if (next !== undefined) current = next as FirstArg<K>;
    }
    return current;
  }

  /** Calls a parallel hook for its side effects. */
  async callParallel<K extends ParallelHook>(name: K, ...args: Parameters<Hooks[K]>): Promise<void> {
    await Promise.all(this.handlers(name).map((h) => guardAsync(h.plugin, name, () => (h.value as (...a: unknown[]) => unknown)(...args))));
  }

  /** Calls a collect hook: the defined results, in plugin order. */
  async callCollect<K extends CollectHook>(name: K, ...args: Parameters<Hooks[K]>): Promise<NonNullable<Result<K>>[]> {
    const out: NonNullable<Result<K>>[] = [];
    for (const h of this.handlers(name)) {
      const r = await guardAsync(h.plugin, name, () => (h.value as (...a: unknown[]) => unknown)(...args));
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

  private apiFor(plugin: string, info: PluginInfo, undo: (() => void)[]): PluginApi {
    const register = <T>(map: Map<string, Owned<T>>, what: string, id: string, value: T, list: string[]) => {
      if (typeof id !== "string" || id === "") throw new CachetError("PLUGIN_LOAD", `${what} needs a non-empty id`);
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
      version: API_VERSION,
      provider: (spec) => {
        validateProvider(spec);
        return register(this.providers, "provider", spec.id, spec, info.providers);
      },
      cacheStrategy: (spec) => register(this.strategies, "cache strategy", spec.id, spec, info.strategies),
      hook: (name, registration) => {
        if (!(name in HOOK_KINDS)) throw new CachetError("PLUGIN_LOAD", `unknown hook "${String(name)}"`, { hint: `hooks: ${Object.keys(HOOK_KINDS).join(", ")}` });
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
      adapter: (providerId, config) => this.createAdapter(providerId, config),
      services: pluginServices,
      log,
    };
  }
}

/**
 * Runs plugin code, re-throwing a failure as PLUGIN_HOOK naming the plugin
 * and the hook. CachetErrors thrown on purpose (e.g. ProviderError) pass through.
 */
export function guard<T>(plugin: string, hook: string, fn: () => T): T {
  try {
    return fn();
  } catch (cause) {
    throw wrap(plugin, hook, cause);
  }
}

async function guardAsync<T>(plugin: string, hook: string, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (cause) {
    throw wrap(plugin, hook, cause);
  }
}

function wrap(plugin: string, hook: string, cause: unknown): Error {
  if (cause instanceof CachetError) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new CachetError("PLUGIN_HOOK", `plugin "${plugin}" failed in ${hook}: ${message}`, {
    hint: "run with --debug for the stack; `cachet plugins` lists loaded plugins",
    cause,
  });
}

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

function validatePlugin(plugin: unknown, source: string): Plugin {
  const p = plugin as Partial<Plugin> | null;
  if (!p || typeof p !== "object") {
    throw new CachetError("PLUGIN_LOAD", `${source} has no default export made by definePlugin`);
  }
  if (typeof p.name !== "string" || p.name === "") throw new CachetError("PLUGIN_LOAD", "plugin has no name");
  if (p.api !== API_VERSION) {
    throw new CachetError("PLUGIN_API_VERSION", `plugin targets hook API ${String(p.api)}, this cachet implements ${API_VERSION}`);
  }
  if (typeof p.setup !== "function") throw new CachetError("PLUGIN_LOAD", "plugin has no setup(api) function");
  return p as Plugin;
}

function validateProvider(spec: ProviderSpec): void {
  const missing = (["id", "protocol", "defaultBaseUrl", "emulatorPath"] as const).filter((k) => typeof spec?.[k] !== "string");
  if (missing.length || typeof spec.create !== "function" || !Array.isArray(spec.env)) {
    throw new CachetError("PLUGIN_LOAD", `provider "${String(spec?.id)}" is missing ${[...missing, "create/env"].join(", ")}`);
  }
}
