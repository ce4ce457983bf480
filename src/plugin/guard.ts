/**
 * Guarded calls into plugin code. Every function a plugin hands the host
 * (adapter methods, cache strategies, hook handlers) is called through here:
 * a throw becomes a PLUGIN_HOOK error naming the plugin and the call, and a
 * result is checked against the API's shapes (validate.ts) before the core
 * sees it, so a wrong value is reported where it was made instead of
 * poisoning the ledger (CASES.md case 49).
 */
import type * as v from "valibot";
import type { RequestContext } from "../context/types.ts";
import { CachetError, ProviderError, isCachetError } from "../errors.ts";
import type { PreviousCall, ProviderAdapter, SendOptions } from "./provider.ts";
import { inSite } from "./exit-trap.ts";
import { invalidTokenCount } from "./raw-token-counts.ts";
import type { StreamEvent } from "./stream.ts";
import { UNKNOWN_USAGE, USAGE_COUNTS, type Usage, type UsageReport } from "./usage.ts";
import { AdapterShape, StreamEventShape, UsageReportShape, UsageShape, check, checkWire, isAdapter, isPlainUsageReport, isStreamEvent } from "./validate.ts";
import type { Protocol, WireRequest } from "./wire.ts";

/**
 * Where a call goes: the plugin, and the call as the user reads it, e.g.
 * `provider acme: usage()`, `cache strategy acme-keys: apply()`, `hook request:before`.
 */
export interface CallSite {
  plugin: string;
  call: string;
}

/**
 * An adapter as the core uses it: every method guarded, and a usage mapping
 * that never throws. @see {@link guardAdapter}
 */
export interface HostAdapter extends ProviderAdapter {
  /**
   * The usage report, or — when the raw usage holds a token count that is
   * not a whole number ≥ 0 (src/plugin/raw-token-counts.ts), or the plugin's
   * mapping throws or returns a wrong value — a report with every count
   * unknown (the raw usage kept) and a one-line warning naming the plugin,
   * for that request only.
   */
  usageOrUnknown(raw: unknown): { report: UsageReport; warning?: string };
}

/**
 * Runs plugin code; a throw becomes PLUGIN_HOOK naming the call site.
 * CachetErrors thrown on purpose (a ProviderError, a SCHEMA_CONTRACT) pass
 * through, re-made from the host's classes when they come from a bundled
 * copy of the API package.
 * @throws CachetError
 */
export function guard<T>(site: CallSite, fn: () => T): T {
  try {
    // In the call's site, so a process.exit in it is refused naming the plugin and the call (exit-trap.ts).
    return inSite(site, fn);
  } catch (cause) {
    throw callError(site, cause);
  }
}

/** Bounds of every hook call. */
export interface HookLimits {
  /** Longest a hook call may take, ms (config `hook_timeout`, `--hook-timeout`). */
  timeoutMs: number;
  /** The run's abort signal (SIGINT / SIGTERM): a pending hook call rejects with its reason. */
  signal?: AbortSignal;
}

/** Default {@link HookLimits.timeoutMs}: 30 s. */
export const DEFAULT_HOOK_TIMEOUT_MS = 30_000;

/**
 * {@link guard} for async plugin code, within `limits`: a call that never
 * settles is left behind after `timeoutMs` (PLUGIN_HOOK naming the plugin and
 * the call), or as soon as the run is interrupted (the signal's reason).
 * @throws CachetError
 */
export async function guardAsync<T>(site: CallSite, fn: () => T | Promise<T>, limits?: HookLimits): Promise<T> {
  if (!limits) {
    try {
      return await inSite(site, fn);
    } catch (cause) {
      throw callError(site, cause);
    }
  }
  const { signal, timeoutMs } = limits;
  signal?.throwIfAborted();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new CachetError("PLUGIN_HOOK", `${site.plugin}: ${site.call} did not finish within ${formatSeconds(timeoutMs)}`, {
          hint: "the plugin may hang: fix or remove it (`cachet plugins list`), or raise the limit with --hook-timeout SECONDS or hook_timeout in config",
        }),
      );
    }, timeoutMs);
    onAbort = () => reject(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([Promise.resolve().then(() => inSite(site, fn)).catch((cause) => Promise.reject(callError(site, cause))), bound]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(3).replace(/0+$/, "")} s`;
}

/**
 * The value when it has `shape`.
 * @throws CachetError PLUGIN_HOOK `acme: provider acme: usage() returned input NaN (expected number)`.
 */
export function checked<S extends v.GenericSchema>(site: CallSite, shape: S, value: unknown): v.InferOutput<S> {
  const result = check(shape, value);
  if (result.ok) return result.value;
  throw resultError(site, `returned ${result.problem}`);
}

/**
 * The value when it is a wire request: the same object (see {@link checkWire}).
 * @throws CachetError PLUGIN_HOOK naming what is wrong, as {@link checked}.
 */
export function checkedWire(site: CallSite, value: unknown): WireRequest {
  const result = checkWire(value);
  if (result.ok) return result.value;
  throw resultError(site, `returned ${result.problem}`);
}

/** The PLUGIN_HOOK error for a call that returned or yielded a wrong value. */
export function resultError(site: CallSite, what: string): CachetError {
  return new CachetError("PLUGIN_HOOK", `${site.plugin}: ${site.call} ${what}`, {
    hint: `the plugin "${site.plugin}" broke the plugin API contract; update or remove it (\`cachet plugins list\`), or report it to its author`,
  });
}

/**
 * Wraps what `create(config)` returned so each method is guarded and checked.
 * @throws CachetError PLUGIN_HOOK when `created` is not an adapter.
 */
export function guardAdapter(plugin: string, providerId: string, protocol: Protocol, created: unknown): HostAdapter {
  const at = (call: string): CallSite => ({ plugin, call: `provider ${providerId}: ${call}` });
  // Taken as it is when it has the shape (its methods keep their `this`), valibot's description when it has not.
  const adapter = (isAdapter(created) ? created : checked(at("create()"), AdapterShape, created)) as ProviderAdapter;
  const usage = (raw: unknown): UsageReport => {
    const site = at("usage()");
    const value = guard(site, () => adapter.usage(raw));
    // The form most reports take is recognized by a plain predicate; anything else (or wrong) is valibot's to check and describe.
    if (isPlainUsageReport(value)) return { ...(value as UsageReport), usage: normalizeUsage((value as UsageReport).usage) };
    const report = checked(site, UsageReportShape, value);
    const out: UsageReport = { ...(report as UsageReport), usage: normalizeUsage(checked(site, UsageShape, report.usage)) };
    if (out.passes) out.passes = out.passes.map((pass) => ({ ...pass, usage: normalizeUsage(pass.usage) }));
    return out;
  };
  return {
    render(context: RequestContext): WireRequest {
      const site = at("render()");
      const wire = checkedWire(site, guard(site, () => adapter.render(context)));
      if (wire.protocol !== protocol) throw resultError(site, `returned a ${wire.protocol} request, but the provider is registered as ${protocol}`);
      return wire;
    },
    send(wire: WireRequest, options: SendOptions): AsyncIterable<StreamEvent> {
      return guardStream(at("send()"), () => adapter.send(wire, options));
    },
    usage,
    ...(adapter.continueFrom
      ? {
          continueFrom(wire: WireRequest, previous: PreviousCall): WireRequest | undefined {
            const site = at("continueFrom()");
            const next = guard(site, () => adapter.continueFrom!(wire, previous));
            return next === undefined || next === null ? undefined : checkedWire(site, next);
          },
        }
      : {}),
    ...(adapter.isContinuationLost
      ? {
          isContinuationLost(error: unknown): boolean {
            const site = at("isContinuationLost()");
            return guard(site, () => adapter.isContinuationLost!(error)) === true;
          },
        }
      : {}),
    usageOrUnknown(raw) {
      // A count the provider sent broken (1e400, -3, 2.5) is its invalid usage, not an unreported count, whatever the mapping would read.
      const invalid = invalidTokenCount(raw);
      if (invalid) {
        const warning = `${plugin}: provider ${providerId}: the provider's usage is invalid: ${invalid.path} is ${invalid.problem}; usage unknown for this request`;
        return { report: { usage: { ...UNKNOWN_USAGE }, raw, estimates: [warning] }, warning };
      }
      try {
        return { report: usage(raw) };
      } catch (error) {
        const warning = `${(error as Error).message}; usage unknown for this request`;
        return { report: { usage: { ...UNKNOWN_USAGE }, raw, estimates: [warning] }, warning };
      }
    },
  };
}

/** Every count present, unknown ones undefined (null and left-out fields read as unknown). */
function normalizeUsage(usage: { [K in keyof Usage]?: number | null }): Usage {
  return Object.fromEntries(USAGE_COUNTS.map((key) => [key, usage[key] ?? undefined])) as Usage;
}

async function* guardStream(site: CallSite, start: () => AsyncIterable<StreamEvent>): AsyncGenerator<StreamEvent> {
  const events = guard(site, start);
  if (events === null || typeof events !== "object" || typeof (events as AsyncIterable<unknown>)[Symbol.asyncIterator] !== "function") {
    throw resultError(site, "returned no async iterable (an async generator of stream events is expected)");
  }
  const iterator = events[Symbol.asyncIterator]();
  let index = 0;
  try {
    for (;;) {
      const next = await guardAsync(site, () => iterator.next());
      if (next.done) return;
      if (!isStreamEvent(next.value)) {
        const result = check(StreamEventShape, next.value);
        if (!result.ok) throw resultError(site, `yielded a wrong event #${index}: ${result.problem}`);
      }
      index++;
      yield next.value;
    }
  } finally {
    await iterator.return?.()?.catch?.(() => {});
  }
}

function callError(site: CallSite, cause: unknown): Error {
  if (isCachetError(cause)) return adopt(cause);
  const message = cause instanceof Error ? cause.message : String(cause);
  return new CachetError("PLUGIN_HOOK", `${site.plugin}: ${site.call} threw: ${firstLine(message)}`, {
    hint: "run with --debug for the stack; `cachet plugins list` shows the loaded plugins",
    cause,
  });
}

/**
 * A CachetError from another copy of the module (a bundled plugin's API
 * package) re-made as the host's own class, so `instanceof ProviderError`
 * (retries) holds for it too.
 */
function adopt(error: CachetError): CachetError {
  if (error instanceof CachetError) return error;
  const e = error as CachetError & Partial<Pick<ProviderError, "status" | "retryable" | "retryAfterMs">>;
  const options = { hint: e.hint, cause: e.cause ?? e, exitCode: e.exitCode };
  if (e.code === "PROVIDER_HTTP" || e.code === "PROVIDER_STREAM" || e.code === "PROVIDER_STALL") {
    return new ProviderError(e.code, e.message, {
      ...options,
      ...(typeof e.status === "number" ? { status: e.status } : {}),
      retryable: e.retryable === true,
      ...(typeof e.retryAfterMs === "number" ? { retryAfterMs: e.retryAfterMs } : {}),
    });
  }
  return new CachetError(e.code, e.message, options);
}

function firstLine(text: string): string {
  return text.split("\n", 1)[0]!;
}
