/**
 * One turn of the main job, end to end (DESIGN.md, "Data flow of one turn"):
 * session → stable prefix + log + overlay → render → cache strategies →
 * send → stream to the sink → usage → price → ledger and log.
 *
 * Each step is a plain function; only the store, the network and the sink do
 * I/O. A runtime (plugins, config, store, emulator) is opened once and can
 * serve many turns (the probe command runs whole scenarios through it).
 */
import { newId } from "../context/ids.ts";
import { buildPrefix, prefixChange } from "../context/prefix.ts";
import type { Block, CacheSettings, GenerationSettings, Message, OutputSchema, RequestContext, ToolDefinition } from "../context/types.ts";
import { CachetError, ProviderError } from "../errors.ts";
import type { ForkEvent } from "../plugin/hooks.ts";
import type { UsageReport } from "../plugin/usage.ts";
import type { WireRequest } from "../plugin/wire.ts";
import type { LedgerRow, LoadedSession } from "../session/types.ts";
import { DEFAULT_CACHE_RULES, LIVE_ENTRY_ROWS, liveCacheableMaximum } from "../wire/divergence.ts";
import { consume, StreamFailure, type ConsumeResult } from "./consume.ts";
import { abortableSleep } from "../sleep.ts";
import type { OutputSink } from "./output.ts";
import { usageEvent } from "./output.ts";
import { parseModelRef, resolveProvider } from "./resolve-provider.ts";
import type { Priced, Runtime } from "./runtime.ts";

/** The model used when neither flag, session nor config names one. */
export const DEFAULT_MODEL = "anthropic/claude-sonnet-4-6";

/** Which session a turn belongs to. */
export type SessionChoice = { mode: "new"; name?: string } | { mode: "continue" } | { mode: "named"; ref: string };

/** Everything one turn needs besides the runtime. */
export interface TurnOptions {
  /** The user text (stdin and PROMPT already merged); undefined with a tool result only. */
  prompt: string | undefined;
  /** `--tool-result ID`: the user side answers tool call `id` with `content`. */
  toolResult?: { id: string; content: string; isError?: boolean };
  /** `provider/model`; defaults to the session's, then the config's, then {@link DEFAULT_MODEL}. */
  model?: string;
  /** System texts; undefined keeps the session's (none for a new session). */
  system?: string[];
  /** Tool definitions; undefined keeps the session's. */
  tools?: ToolDefinition[];
  /** Output schema; undefined keeps the session's. */
  schema?: OutputSchema;
  /** Volatile text for this request only. */
  overlay?: string;
  session: SessionChoice;
  /** Fork the chosen session (default: the latest) before this turn. */
  fork?: boolean;
  generation: GenerationSettings;
  cache: Omit<CacheSettings, "affinityKey">;
  /** Why the call is made: `main`, `probe`, ... */
  role: string;
  /** `--base-url`. */
  baseUrl?: string;
  /** Longest wait for progress, ms; 0: no limit (see consume.ts). */
  idleMs: number;
  /** Longest hidden thinking, ms; 0 or undefined: no limit (see consume.ts). */
  thinkingMs?: number;
  /** Retries of a retryable failure before any output was written. */
  retries: number;
  sink: OutputSink;
  /** Aborts the turn (Ctrl-C). */
  signal?: AbortSignal;
  /** Called with one-line notices for stderr (prefix changes, retries). */
  notice?: (message: string) => void;
}

/** What a turn produced. */
export interface TurnResult {
  sessionId: string;
  /** Ledger row id of the final attempt. */
  requestId: string;
  message: Message;
  report: UsageReport | undefined;
  costUsd: number | null;
  finishReason: string | null;
  incomplete: boolean;
  /** Parsed and validated answer with `--schema`. */
  answer?: unknown;
  row: LedgerRow;
}

/**
 * Runs one turn.
 * @throws CachetError for bad input (before anything is stored or sent);
 *   ProviderError after the provider failed (the user message and any partial
 *   answer are stored, the partial marked incomplete); ANSWER_INVALID when a
 *   `--schema` answer does not validate (the raw answer is stored).
 */
export async function runTurn(runtime: Runtime, options: TurnOptions): Promise<TurnResult> {
  const { store } = runtime;
  const target = chooseSession(runtime, options);
  const lease = target ? await store.acquireTurn(target.id, options.signal ? { signal: options.signal } : {}) : undefined;
  // Released early when forking (the child gets its own lease), and in any case at the end: once.
  let held = lease !== undefined;
  const release = () => {
    if (held) lease!();
    held = false;
  };
  try {
    let loaded = target ? store.loadSession(target.id) : undefined;
    const modelRef = options.model ?? loaded?.session.model ?? runtime.config.model ?? DEFAULT_MODEL;
    const ref = parseModelRef(modelRef);
    const resolved = resolveProvider({
      host: runtime.host,
      config: runtime.config,
      ref,
      baseUrl: options.baseUrl,
      emulatorUrl: runtime.emulatorUrl,
      options: options.generation.providerOptions,
      env: runtime.env,
      fetch: runtime.fetch,
    });

    const prefixInput = {
      system: options.system ?? loaded?.prefix.prefix.system.map((s) => s.text) ?? [],
      tools: options.tools ?? loaded?.prefix.prefix.tools ?? [],
      schema: options.schema ?? loaded?.prefix.prefix.schema,
    };
    const prefix = buildPrefix(prefixInput);
    const userMessage = buildUserMessage(options, loaded);

    // Validation is done: from here on, things are stored.
    let forkedFrom: string | undefined;
    if (options.fork) {
      if (!loaded) throw new CachetError("SESSION_NOT_FOUND", "there is no session to fork", { hint: "start one first, or name it with --session" });
      const exact = loaded.session.model === modelRef && loaded.prefix.prefix.fingerprint === prefix.fingerprint;
      const child = store.createSession({
        model: modelRef,
        parentId: loaded.session.id,
        forkPoint: loaded.messages.at(-1)?.id ?? null,
        affinityKey: exact ? loaded.session.affinityKey : undefined,
      });
      store.setPrefix(child.id, loaded.prefix.prefix, null);
      forkedFrom = loaded.session.id;
      await announceFork(runtime, options, { parentId: loaded.session.id, childId: child.id, exact });
      release();
      const releaseChild = await store.acquireTurn(child.id);
      return await finishTurn(runtime, options, store.loadSession(child.id), { modelRef, ref, resolved, prefix, userMessage, forkedFrom, exactFork: exact, parentLast: store.lastRequest(loaded.session.id) }).finally(releaseChild);
    }
    if (!loaded) {
      const created = store.createSession({ model: modelRef, name: options.session.mode === "new" ? options.session.name : options.session.mode === "named" ? options.session.ref : undefined });
      const releaseNew = await store.acquireTurn(created.id);
      try {
        store.setPrefix(created.id, prefix, null);
        loaded = store.loadSession(created.id);
        return await finishTurn(runtime, options, loaded, { modelRef, ref, resolved, prefix, userMessage });
      } catch (error) {
        // Failed before anything was stored in it (a plugin hook threw while rendering): leave no empty session for -c to pick up.
        if (store.sessionCounts(created.id).messages === 0) store.removeSession(created.id);
        throw error;
      } finally {
        releaseNew();
      }
    }
    return await finishTurn(runtime, options, loaded, { modelRef, ref, resolved, prefix, userMessage });
  } finally {
    release();
  }
}

interface Prepared {
  modelRef: string;
  ref: { provider: string; model: string };
  resolved: ReturnType<typeof resolveProvider>;
  prefix: ReturnType<typeof buildPrefix>;
  userMessage: Message;
  forkedFrom?: string;
  exactFork?: boolean;
  parentLast?: LedgerRow | null;
}

async function finishTurn(runtime: Runtime, options: TurnOptions, loaded: LoadedSession, p: Prepared): Promise<TurnResult> {
  const { store, host } = runtime;
  const sessionId = loaded.session.id;
  let prefixVersion = loaded.prefix;
  const change = prefixChange(prefixVersion.prefix, p.prefix);
  if (change) {
    prefixVersion = store.setPrefix(sessionId, p.prefix, change);
    options.notice?.(`stable prefix changed (${change}): version ${prefixVersion.version}; the provider's cache restarts from here`);
  }
  options.sink.event({
    type: "session",
    id: sessionId,
    name: loaded.session.name,
    model: p.modelRef,
    prefix_version: prefixVersion.version,
    ...(p.forkedFrom ? { forked_from: p.forkedFrom } : {}),
    ...(change ? { prefix_change: change } : {}),
  });
  if (loaded.session.model !== p.modelRef) store.setModel(sessionId, p.modelRef);

  const messages = [...loaded.messages, p.userMessage];
  const context: RequestContext = {
    model: p.ref.model,
    provider: p.ref.provider,
    prefix: prefixVersion.prefix,
    summary: loaded.summary.messages,
    messages,
    generation: options.generation,
    cache: { ...options.cache, affinityKey: loaded.session.affinityKey },
  };
  const overlays = [...(options.overlay ? [options.overlay] : []), ...(await host.callCollect("context:overlay", context))];
  if (overlays.length) context.overlay = overlays.join("\n");

  const wire = await prepareWire(runtime, p, context, options);
  // With a huge input (100 MB on stdin) each step makes a transient copy of it
  // (stored JSON, canonical JSON for hashing); collecting between the steps
  // keeps them from piling up in the peak memory.
  const huge = messageChars(p.userMessage) >= HUGE_INPUT_CHARS;
  if (huge) Bun.gc(true);
  // Hashing and token-counting the request (the tokenizer takes ~200 ms to load)
  // overlaps the provider's time to first token instead of delaying the exit.
  const chainPromise = runtime.chainOf(wire);
  const catalogRef = `${p.resolved.spec.catalogId ?? p.resolved.spec.id}/${p.ref.model}`;
  // Under a spending limit the forecast needs the prompt estimate before sending; a refusal stores nothing.
  const admit = async () => runtime.budget!.admit(sessionId, { catalogRef, chain: await chainPromise, maxTokens: options.generation.maxTokens, cache: options.cache });
  let reservation = runtime.budget ? await admit() : undefined;
  store.appendMessage(sessionId, p.userMessage);
  if (huge) Bun.gc(true);
  chainPromise.catch(() => {});
  if (huge) Bun.gc(true);

  const assistantId = newId("m");
  const requestId = newId("r");
  const startedAt = Date.now();
  let outcome: ConsumeResult | undefined;
  let failure: unknown;
  let partial: ConsumeResult | undefined;
  let emitted = false;
  let lastSave = 0;
  let saved = false;
  const save = (content: Block[], incomplete: boolean) => {
    const message: Message = { id: assistantId, role: "assistant", content: structuredClone(content), ...(incomplete ? { incomplete: true } : {}) };
    if (!saved) {
      store.appendMessage(sessionId, { ...message, incomplete: true });
      saved = true;
      if (!incomplete) store.updatePartial(sessionId, assistantId, message.content, false);
    } else {
      store.updatePartial(sessionId, assistantId, message.content, incomplete);
    }
  };
  // At most one save per 250 ms, and a trailing one: a burst followed by a stall is stored whole, so a crash keeps what stdout showed.
  let pendingSave: ReturnType<typeof setTimeout> | undefined;
  const saveSoon = (content: Block[]) => {
    const due = lastSave + 250 - Date.now();
    if (due > 0) {
      pendingSave ??= setTimeout(() => {
        pendingSave = undefined;
        lastSave = Date.now();
        save(content, true);
      }, due);
      return;
    }
    clearTimeout(pendingSave);
    pendingSave = undefined;
    lastSave = Date.now();
    save(content, true);
  };
  let attempts = 0;

  for (let attempt = 0; ; attempt++) {
    attempts = attempt + 1;
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      outcome = await consume(p.resolved.adapter.send(wire, { signal: abort.signal }), {
        idleMs: options.idleMs,
        ...(options.thinkingMs ? { thinkingMs: options.thinkingMs } : {}),
        stream: options.generation.stream,
        abort,
        onEvent: async (event, content) => {
          await host.callParallel("response:event", event, context);
          if (event.type === "text" && !context.prefix.schema) {
            options.sink.text(event.delta);
            emitted = true;
          } else if (event.type === "tool_call") {
            options.sink.event({ type: "tool_call", id: event.id, name: event.name, arguments: event.arguments });
            emitted = true;
          }
          // Persist the partial answer as it grows, so a crash keeps it (marked incomplete).
          if (event.type !== "chatter" && event.type !== "finish") saveSoon(content);
        },
      });
      break;
    } catch (error) {
      const f = error instanceof StreamFailure ? error : new StreamFailure(error, { content: [], finish: undefined, firstContentAt: undefined });
      const cause = options.signal?.aborted ? new CachetError("INTERRUPTED", "interrupted; the partial answer is stored and marked incomplete") : f.error;
      const retryable = cause instanceof ProviderError && cause.retryable && !emitted && f.partial.content.length === 0;
      if (retryable && attempt < options.retries && !options.signal?.aborted) {
        const wait = Math.min((cause as ProviderError).retryAfterMs ?? 500 * 2 ** attempt, 30_000);
        options.notice?.(`${(cause as ProviderError).message}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 2} of ${options.retries + 1})`);
        try {
          await abortableSleep(wait, options.signal);
        } catch {
          // Ctrl-C during the wait: nothing more is sent (CASES.md case 45).
          failure = new CachetError("INTERRUPTED", "interrupted while waiting to retry; nothing more was sent");
          partial = f.partial;
          break;
        }
        // A refusal with an HTTP status is not billed; a stream cut before content may be, so its forecast stays spent.
        reservation?.settle((cause as ProviderError).status !== undefined ? 0 : null);
        try {
          reservation = runtime.budget ? await admit() : undefined;
        } catch (refusal) {
          reservation = undefined;
          failure = refusal;
          partial = { content: [], finish: undefined, firstContentAt: undefined };
          break;
        }
        continue;
      }
      failure = cause;
      partial = f.partial;
      break;
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  clearTimeout(pendingSave);
  const result = outcome ?? partial!;
  if (failure !== undefined) failure = withHint(failure, result.content.length > 0, attempts);
  const incomplete = failure !== undefined;
  const content = result.content;
  if (content.length > 0 || saved) save(content, incomplete);
  const message: Message = { id: assistantId, role: "assistant", content, ...(incomplete ? { incomplete: true } : {}) };

  const finishedAt = Date.now();
  const rawUsage = result.finish?.rawUsage;
  const mapped = rawUsage === undefined ? undefined : p.resolved.adapter.usageOrUnknown(rawUsage);
  if (mapped?.warning) options.notice?.(mapped.warning);
  const report = mapped === undefined ? undefined : servedReport(mapped.report, result.finish?.serviceTier);
  const priced = report ? await runtime.price(catalogRef, report, { partial: incomplete }) : unreportedCost(failure, content.length > 0);
  reservation?.settle(priced.costUsd);
  if (report && priced.costUsd === null && priced.reason) options.notice?.(`cost unknown: ${priced.reason}`);
  const chain = await chainPromise;
  // A fork's first request is compared with the parent's last one: that is the cache it inherits.
  const previousRow = store.lastRequest(sessionId) ?? p.parentLast ?? null;
  const outputTokens = report?.usage.output;
  const streamMs = result.firstContentAt !== undefined ? finishedAt - result.firstContentAt : undefined;
  const row: LedgerRow = {
    id: requestId,
    sessionId,
    prefixVersion: prefixVersion.version,
    role: options.role,
    provider: p.ref.provider,
    model: p.ref.model,
    protocol: wire.protocol,
    startedAt,
    firstTokenAt: result.firstContentAt ?? null,
    finishedAt,
    latencyMs: finishedAt - startedAt,
    ttftMs: result.firstContentAt !== undefined ? result.firstContentAt - startedAt : null,
    outputTps: outputTokens !== undefined && streamMs !== undefined && streamMs > 0 ? (outputTokens * 1000) / streamMs : null,
    usage: report?.usage ?? { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined },
    rawUsage: rawUsage ?? null,
    costUsd: priced.costUsd,
    noCacheCostUsd: priced.noCacheCostUsd ?? null,
    costEstimate: priced.estimate ?? null,
    providerCostUsd: report?.providerCostUsd ?? null,
    providerRequestId: result.finish?.requestId ?? null,
    affinityKey: context.cache.mode === "off" ? null : (context.cache.affinityKey ?? null),
    cacheMode: context.cache.mode,
    cacheTtl: context.cache.ttl,
    chain,
    expectedCacheRead: null,
    cacheableMax: null,
    status: failure === undefined ? "ok" : content.length > 0 ? "incomplete" : "error",
    error: failure === undefined ? null : errorText(failure),
    messageId: content.length > 0 || saved ? assistantId : null,
    finishReason: result.finish?.reason ?? null,
  };
  const earlier = previousRow ? (p.parentLast && previousRow === p.parentLast ? [previousRow] : store.recentRequests(sessionId, LIVE_ENTRY_ROWS)) : [];
  row.cacheableMax = previousRow ? liveCacheableMaximum(earlier, row, p.resolved.spec.cacheRules?.(p.ref.model) ?? DEFAULT_CACHE_RULES).tokens : null;
  // An exact fork's first request is the probe row: inheritance of the parent's cache is measured, not assumed.
  if (p.exactFork && !store.lastRequest(sessionId)) row.expectedCacheRead = row.cacheableMax ?? 0;
  store.recordRequest(row);
  if (report) {
    // An observer failing after the answer is stored must not turn a good turn into a failed run.
    try {
      await host.callParallel("usage:record", { sessionId, requestId, role: options.role, model: p.modelRef, report, costUsd: priced.costUsd });
    } catch (error) {
      options.notice?.((error as Error).message);
    }
    options.sink.event(usageEvent(requestId, report.usage, report.raw));
  }
  options.sink.event({
    type: "cost",
    request_id: requestId,
    cost_usd: priced.costUsd,
    ...(report?.providerCostUsd !== undefined ? { provider_cost_usd: report.providerCostUsd } : {}),
    ...(priced.reason ? { reason: priced.reason } : {}),
  });

  let answer: unknown;
  if (failure === undefined && context.prefix.schema) {
    try {
      answer = await runtime.checkAnswer(wire.protocol, context.prefix.schema, content);
    } catch (error) {
      const e = error as CachetError;
      options.sink.event({ type: "error", code: e.code ?? "INTERNAL", message: e.message, ...(e.hint ? { hint: e.hint } : {}), incomplete: false });
      options.sink.event({ type: "done", session: sessionId, request_id: requestId, finish_reason: result.finish?.reason ?? null, incomplete: false });
      await options.sink.end();
      throw error;
    }
    options.sink.event({ type: "answer", value: answer });
  }

  if (failure !== undefined) {
    const e = failure as { code?: string; message?: string; hint?: string };
    options.sink.event({ type: "error", code: e.code ?? "INTERNAL", message: e.message ?? String(failure), ...(e.hint ? { hint: e.hint } : {}), incomplete: content.length > 0 });
    options.sink.event({ type: "done", session: sessionId, request_id: requestId, finish_reason: null, incomplete: true });
    await options.sink.end();
    throw failure;
  }
  options.sink.event({ type: "done", session: sessionId, request_id: requestId, finish_reason: result.finish?.reason ?? null, incomplete: false });
  await options.sink.end();
  return { sessionId, requestId, message, report, costUsd: priced.costUsd, finishReason: result.finish?.reason ?? null, incomplete: false, row, ...(answer !== undefined ? { answer } : {}) };
}

async function prepareWire(runtime: Runtime, p: Prepared, context: RequestContext, options: TurnOptions): Promise<WireRequest> {
  const rendered = p.resolved.adapter.render(context);
  const wire = options.cache.mode === "off" ? rendered : runtime.host.applyStrategies(rendered, context, p.ref.provider);
  return runtime.host.callSequential("request:before", wire, context);
}

/** Fires `session:fork`; an observer failing must not fail the fork, so it is a warning. */
async function announceFork(runtime: Runtime, options: TurnOptions, event: ForkEvent): Promise<void> {
  try {
    await runtime.host.callParallel("session:fork", event);
  } catch (error) {
    options.notice?.((error as Error).message);
  }
}

function chooseSession(runtime: Runtime, options: TurnOptions) {
  const { store } = runtime;
  switch (options.session.mode) {
    case "continue": {
      if (runtime.ephemeral) {
        throw new CachetError("SESSION_NOT_FOUND", "there is no session to continue: with --no-store (or CACHET_NO_STORE=1) sessions are neither stored nor read", {
          hint: "drop --no-store and unset CACHET_NO_STORE to continue a stored session",
        });
      }
      const latest = store.latestSession();
      if (!latest) {
        throw new CachetError("SESSION_NOT_FOUND", "there is no session to continue: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)", {
          hint: "run without -c to start one",
        });
      }
      return latest;
    }
    case "named": {
      const ref = options.session.ref;
      // A NAME that does not exist yet starts a new named session; an id or a fork target must exist.
      if (options.fork || /^s_[a-z2-7]{12}$/.test(ref)) return store.findSession(ref);
      try {
        return store.findSession(ref);
      } catch (error) {
        if ((error as CachetError).code === "SESSION_NOT_FOUND") return undefined;
        throw error;
      }
    }
    case "new":
      return options.fork ? (store.latestSession() ?? undefined) : undefined;
  }
}

function buildUserMessage(options: TurnOptions, loaded: LoadedSession | undefined): Message {
  const content: Block[] = [];
  if (options.toolResult) {
    const { id } = options.toolResult;
    const last = loaded?.messages.at(-1);
    const call = last?.role === "assistant" ? last.content.find((b) => b.type === "tool_use" && b.id === id) : undefined;
    if (!call) {
      throw new CachetError("BAD_FLAG", `--tool-result ${id}: the session's last answer has no tool call with that id`, {
        hint: "pass the id printed in the tool_call event of the previous turn (see `cachet export`)",
      });
    }
    content.push({ type: "tool_result", toolUseId: id, content: options.toolResult.content, ...(options.toolResult.isError ? { isError: true } : {}) });
  }
  if (options.prompt !== undefined && options.prompt !== "") content.push({ type: "text", text: options.prompt });
  if (content.length === 0) {
    throw new CachetError("MISSING_ARGUMENT", "nothing to send: no PROMPT argument and nothing on stdin", {
      hint: 'e.g. cachet "hello", or pipe text in: git diff | cachet "write the commit message"',
    });
  }
  return { id: newId("m"), role: "user", content };
}

/**
 * The failure with a hint saying what to do, when it carries none: after a
 * partial answer, how to go on; after a retryable refusal, how many attempts
 * were made and how to allow more.
 */
function withHint(failure: unknown, partial: boolean, attempts: number): unknown {
  if (!(failure instanceof ProviderError) || failure.hint) return failure;
  let hint: string | undefined;
  if (partial) hint = "the partial answer is stored and marked incomplete; `cachet -c` continues the session";
  else if (failure.retryable) hint = `${attempts === 1 ? "no retry was made" : `gave up after ${attempts} attempts`}; wait a moment and run again, or allow more with --retries N`;
  else if (failure.status !== undefined) hint = "the provider refused this request; check the model id, the flags and -o options (--debug shows more)";
  if (!hint) return failure;
  return new ProviderError(failure.code as "PROVIDER_HTTP" | "PROVIDER_STREAM" | "PROVIDER_STALL", failure.message, {
    hint,
    cause: failure.cause ?? failure,
    exitCode: failure.exitCode,
    ...(failure.status !== undefined ? { status: failure.status } : {}),
    retryable: failure.retryable,
    ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
  });
}

/** Inputs from this many characters on get garbage collected between the steps that copy them. */
const HUGE_INPUT_CHARS = 8 << 20;

function messageChars(message: Message): number {
  let n = 0;
  for (const block of message.content) n += block.type === "text" ? block.text.length : block.type === "tool_result" ? block.content.length : 0;
  return n;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The report with the tier the finish event says was served, when the usage object did not say. */
function servedReport(report: UsageReport, serviceTier: string | undefined): UsageReport {
  return serviceTier === undefined || report.serviceTier !== undefined ? report : { ...report, serviceTier };
}

/**
 * The cost of a request that reported no usage: a refusal with an HTTP
 * status and no output is not billed (exactly $0); anything else is unknown.
 */
function unreportedCost(failure: unknown, produced: boolean): Priced {
  if (failure instanceof ProviderError && failure.status !== undefined && !produced) return { costUsd: 0, noCacheCostUsd: 0, reason: `refused with HTTP ${failure.status} before any output: not billed` };
  return { costUsd: null, noCacheCostUsd: null, reason: "the provider reported no usage" };
}
