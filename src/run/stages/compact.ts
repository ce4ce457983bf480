/**
 * Stage "compact if due" (shared/compaction.md, protocol CPC-1): when the
 * calibrated estimate of the next request exceeds the trigger, the oldest
 * turns move into the summary zone (Z1, appended once) and the request is
 * rebuilt as Z0 + Z1 + the kept tail (Z2, the exact messages last sent) + the
 * new message. The log keeps everything; only the summary state changes.
 */
import { catalogRefOf } from "../model-resolution.ts";
import { newId } from "../../context/ids.ts";
import { isCachetError, ProviderError } from "../../errors.ts";
import { buildPrefix } from "../../context/prefix.ts";
import type { Message, RequestContext, SummaryState } from "../../context/types.ts";
import { renderExtractive, RENDER_VERSION } from "../../compaction/extractive.ts";
import { planCut } from "../../compaction/plan.ts";
import { acceptedSummary, fallbackText, summaryEntry, summaryInstruction, summaryKey, SUMMARIZER_SYSTEM, SUMMARY_MAX_TOKENS, VERBATIM_RENDER_TOKENS } from "../../compaction/summary.ts";
import { calibration, chainTokens, compactionLimits, nextRequestTokens, reservedOutput, type CompactionLimits } from "../../compaction/trigger.ts";
import { verbose } from "../../log.ts";
import { interruptedAt } from "../interrupt.ts";
import type { CompactionRecord } from "../../session/compactions.ts";
import { loadO200k } from "../../tokenizer/o200k.ts";
import type { Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";
import type { AssembledContext } from "./context.ts";
import type { TurnInput } from "./input.ts";
import { auxiliaryCall, type AuxiliaryResult } from "./auxiliary-call.ts";
import type { CompactionCall, JsonEvent } from "../output.ts";
import type { WireRequest } from "../../plugin/wire.ts";
import { renderRequest } from "./render.ts";
import type { OpenedSession } from "./session.ts";

/** Ledger role of a summary call. */
export const COMPACTION_ROLE = "compaction";
/** Rows of the session the calibration ratio is taken over. */
const CALIBRATION_ROWS = 8;

/** Why a compaction runs. */
export type CompactionReason = "threshold" | "on demand" | "too long";

/** A turn's context after the stage, with the compaction made, if any. */
export interface Compacted extends AssembledContext {
  compaction?: CompactionRecord;
  /** Why a compaction that was asked for (on demand, or too long) did not happen. */
  why?: string;
}

/**
 * Compacts when due, judging by `rendered`, the request the context renders to
 * (the turn's own render, markers or not: a turn renders its context once). Off with `--no-compact` or `compaction.enabled = false`,
 * with the provider option `compaction=server` (the provider compacts, e.g.
 * Anthropic's server-side compaction), and when neither the catalog nor `compaction.window_tokens` gives the window
 * and no `compaction.trigger_tokens` is set.
 * @throws CachetError STORE when the store refuses a write
 */
export async function compactIfDue(runtime: Runtime, options: TurnOptions, input: TurnInput, opened: OpenedSession, assembled: AssembledContext, rendered: WireRequest): Promise<Compacted> {
  if (options.compact === false || runtime.config.compaction?.enabled === false) return assembled;
  // The provider compacts server side (`-o compaction=server`, Anthropic): one summary zone at a time.
  if (assembled.context.generation.providerOptions.compaction === "server") return assembled;
  // A first message has nothing before it to summarize.
  if (assembled.context.messages.length < 2) return assembled;
  const limits = await limitsFor(runtime, input, options);
  if (!limits) return assembled;
  // Upper bounds first: a turn that stays below the trigger even so loads no tokenizer (~40 ms) before its request.
  // The first asks the store for no count (a statement on every turn, for a new message it rarely knows); the
  // second does, for a process that has counted little of the session yet (a first turn in it).
  if ((await estimateNext(runtime, assembled, rendered, true, "memo")) <= limits.trigger) return assembled;
  if ((await estimateNext(runtime, assembled, rendered, true, "stored")) <= limits.trigger) return assembled;
  const before = await estimateNext(runtime, assembled, rendered);
  if (before <= limits.trigger) return assembled;
  return compact(runtime, options, input, opened, assembled, limits, before, "threshold");
}

/**
 * Compacts now (`cachet compact`, or once after the provider refused the
 * request as too long): the last message of the context is the one about to
 * be sent, or, with `incoming` false, the context holds only the log.
 * @returns the context unchanged, with `why`, when nothing can be summarized, nothing was
 *   stored since the last compaction (`incoming` false), or the compaction would not make the request smaller
 */
export async function compactNow(runtime: Runtime, options: TurnOptions, input: TurnInput, opened: OpenedSession, assembled: AssembledContext, reason: CompactionReason, incoming = true): Promise<Compacted> {
  if (!incoming) {
    // Compacting again with nothing new would only fold the kept tail into the summary.
    const last = runtime.store.compactions(assembled.sessionId).at(-1);
    const newest = runtime.store.logEntries(assembled.sessionId).at(-1);
    if (last && newest && newest.createdAt <= last.createdAt) return { ...assembled, why: `nothing new since the last compaction (${last.id})` };
  }
  const before = await estimateNext(runtime, assembled, renderRequest(input, assembled.context));
  const limits = (await limitsFor(runtime, input, options)) ?? compactionLimits(Number.MAX_SAFE_INTEGER, 0, Math.max(2, 2 * before));
  return compact(runtime, options, input, opened, assembled, limits, before, reason, incoming);
}

async function limitsFor(runtime: Runtime, input: TurnInput, options: TurnOptions): Promise<CompactionLimits | undefined> {
  const config = runtime.config.compaction ?? {};
  const catalogRef = catalogRefOf(input.resolved.spec, input.ref.model);
  const known = config.window_tokens !== undefined && config.trigger_tokens !== undefined ? {} : await runtime.modelLimits(catalogRef);
  const window = config.window_tokens ?? known.context;
  if (window === undefined && config.trigger_tokens === undefined) return undefined;
  const reserved = reservedOutput(options.generation.maxTokens, input.resolved.spec.defaultMaxTokens, known.output);
  return compactionLimits(window ?? Number.MAX_SAFE_INTEGER, reserved, config.trigger_tokens, config.tail_tokens);
}

/**
 * The calibrated wire estimate of `wire`, the request `assembled` renders to, tokens.
 * With `extends` the request extends the session's last one (the last one's
 * reported prompt plus the calibrated rest); after a compaction it does not,
 * and the whole estimate is calibrated. With `bound`, an upper bound of it
 * that needs no tokenizer (runtime.chainBound, from the counts the process
 * knows, or with "stored" those the store knows too; nextRequestTokens grows
 * with the estimate, so a bound of the estimate bounds the result).
 */
async function estimateNext(runtime: Runtime, assembled: AssembledContext, wire: WireRequest, extendsLast = true, bound?: "memo" | "stored"): Promise<number> {
  const estimate = bound ? await runtime.chainBound(wire, bound === "stored") : chainTokens({ chain: await runtime.chainOf(wire) });
  const rows = runtime.store.recentRequests(assembled.sessionId, CALIBRATION_ROWS);
  const last = extendsLast ? rows.findLast((row) => row.status === "ok") : undefined;
  // A compaction since (`cachet compact`) replaced what the last request sent: the next one does not extend it.
  // A session without a summary has none to look up: each compaction is stored with the summary it made.
  const compacted = last !== undefined && assembled.context.summary.length > 0 && (runtime.store.compactions(assembled.sessionId).at(-1)?.createdAt ?? 0) > last.startedAt;
  return nextRequestTokens(estimate, compacted ? undefined : last, calibration(rows));
}

async function compact(
  runtime: Runtime,
  options: TurnOptions,
  input: TurnInput,
  opened: OpenedSession,
  assembled: AssembledContext,
  limits: CompactionLimits,
  before: number,
  reason: CompactionReason,
  hasIncoming = true,
): Promise<Compacted> {
  const { context, sessionId } = assembled;
  const count = await loadO200k();
  const tokensOf = (message: Message) => 4 + count(JSON.stringify(message.content));
  const incoming = hasIncoming ? context.messages.at(-1) : undefined;
  const visible = hasIncoming ? context.messages.slice(0, -1) : context.messages;
  const plan = planCut(visible, incoming, limits.tail, tokensOf);
  if (!plan) {
    // Not a warning: a request that still fits goes out as it is, one that does not fails with
    // CONTEXT_TOO_LONG, whose own line says so; on demand (`cachet compact`) the command reports it.
    if (reason !== "on demand") void verbose(`compaction due (${before} tokens > ${limits.trigger}) but the current turn alone is the log: nothing to summarize`);
    return { ...assembled, why: "the session is its current turn alone" };
  }
  const previous: SummaryState = { messages: context.summary, coversThrough: opened.loaded.summary.coversThrough };
  const render = renderExtractive(plan.summarized);
  const key = summaryKey({ provider: input.ref.provider, model: input.ref.model, previous, render });
  const anchor = plan.summarized.at(-1)!.id;
  let text = runtime.store.summaryText(key);
  let source: CompactionRecord["summarySource"] = "stored";
  let summaryRequest: string | null = null;
  const calls: CompactionCall[] = [];
  if (text === null) {
    if (count(render) <= VERBATIM_RENDER_TOKENS) {
      text = render;
      source = "extractive";
    } else {
      // The fork re-sends the whole request plus the instruction and the answer: only when that fits the window.
      const forkFits = before + SUMMARY_MAX_TOKENS + count(summaryInstruction(anchor, true, undefined)) <= limits.window;
      const call = await summaryCall(runtime, options, input, opened, assembled, { anchor, render, previous, visible, incoming: forkFits ? incoming : undefined });
      summaryRequest = call.made?.requestId ?? null;
      if (call.made) calls.push({ request_id: call.made.requestId, purpose: "summary", cost_usd: call.made.costUsd });
      text = call.text ?? fallbackText(render);
      source = call.text !== undefined ? "summary" : "fallback";
    }
    runtime.store.saveSummaryText(key, text, `${input.ref.provider}/${input.ref.model}`);
  }
  const summary: SummaryState = { messages: [...previous.messages, summaryEntry(newId("m"), previous, text)], coversThrough: anchor };
  const next: RequestContext = { ...context, summary: summary.messages, messages: [...plan.kept, ...(incoming ? [incoming] : [])] };
  const compacted: AssembledContext = { ...assembled, context: next };
  const after = await estimateNext(runtime, compacted, renderRequest(input, next), false);
  if (after >= before) {
    // A summary zone larger than what it replaces (short turns): the request as it is stays cheaper.
    const why = `it would not make the next request smaller (~${before} → ~${after} tokens)`;
    if (reason !== "on demand") void verbose(`compaction not stored: ${why}`);
    return { ...assembled, why };
  }
  const { prefix } = context;
  const stableTokens = count(JSON.stringify([prefix.system, prefix.tools, prefix.schema ?? null])) + previous.messages.reduce((n, m) => n + tokensOf(m), 0);
  const boundary = await boundaryRequest(runtime, options, input, opened, assembled, previous.messages, stableTokens);
  if (boundary) calls.push({ request_id: boundary.requestId, purpose: "boundary", cost_usd: boundary.costUsd });
  const record: CompactionRecord = {
    id: newId("c"),
    sessionId,
    createdAt: Date.now(),
    reason,
    firstCollapsed: plan.summarized[0]!.id,
    lastCollapsed: anchor,
    firstKept: plan.kept[0]?.id ?? incoming?.id ?? null,
    summaryKey: key,
    summarySource: source,
    summaryRequest,
    renderVersion: RENDER_VERSION,
    tokensBefore: before,
    tokensAfter: after,
  };
  const rest = ["the stable prefix", "the summary zone", ...(plan.kept.length > 0 ? [`the ${plan.kept.length} kept messages`] : []), ...(incoming ? ["the new message"] : [])];
  const band = after > limits.target ? `; above the target ${limits.target}: what remains (${rest.slice(0, -1).join(", ")} and ${rest.at(-1)}) is that large` : "";
  const store = () => {
    runtime.store.recordCompaction(record, summary);
    options.sink.event(compactionEvent(record, plan.summarized.length, plan.kept.length, calls));
    options.notice?.(`compacted ${plan.summarized.length} messages into the summary zone (${source}): next request ~${before} → ~${after} tokens${band}`);
  };
  // Made for a turn's request: stored once that request is cleared to go (a turn refused before sending keeps
  // the session as it was; the summary text stays cached, so a retry does not pay for it again).
  if (hasIncoming) assembled.pending.push(store);
  else store();
  return { ...compacted, compaction: record };
}

/** A call a compaction made: its ledger id and cost (USD, null when unpriced). */
type MadeCall = Pick<AuxiliaryResult, "requestId" | "costUsd">;

/**
 * The `--json` event of a compaction: what it summarized and kept (message
 * counts and ids), where the summary came from, the calibrated estimates of
 * the next request before and after (tokens), and the calls it made with
 * their cost (USD; `cost_usd` null when one of them is unpriced).
 */
export function compactionEvent(record: CompactionRecord, summarized: number, kept: number, calls: CompactionCall[]): JsonEvent {
  const costs = calls.map((c) => c.cost_usd);
  return {
    type: "compaction",
    id: record.id,
    reason: record.reason,
    summarized: { messages: summarized, first: record.firstCollapsed, last: record.lastCollapsed },
    kept: { messages: kept, first: record.firstKept },
    summary_source: record.summarySource,
    tokens_before: record.tokensBefore,
    tokens_after: record.tokensAfter,
    calls,
    cost_usd: costs.some((c) => c === null) ? null : costs.reduce<number>((a, c) => a + c!, 0),
  };
}

interface SummarySpan {
  anchor: string;
  render: string;
  previous: SummaryState;
  visible: Message[];
  incoming: Message | undefined;
}

/**
 * Asks the model for the summary. A fork of the live request (the same prefix
 * bytes, the last answer, then the instruction) when the cache is warm and the
 * last message can carry the instruction; else a cold call with a fixed prompt
 * over the previous summary and the render. The call is a ledger row of role
 * `compaction`; its answer is checked and dropped when unusable.
 */
async function summaryCall(runtime: Runtime, options: TurnOptions, input: TurnInput, opened: OpenedSession, assembled: AssembledContext, span: SummarySpan): Promise<{ text: string | undefined; made: MadeCall | undefined }> {
  const { context } = assembled;
  const last = runtime.store.lastRequest(assembled.sessionId);
  const ttlMs = context.cache.ttl === "1h" ? 3_600_000 : 300_000;
  const warm = last !== null && Date.now() - last.startedAt < ttlMs && context.cache.mode !== "off";
  const generation = { ...context.generation, maxTokens: SUMMARY_MAX_TOKENS };
  let fork: RequestContext;
  if (warm && span.incoming) {
    const instruction = summaryInstruction(span.anchor, span.previous.messages.length > 0, undefined);
    const carrier: Message = { ...span.incoming, content: [...span.incoming.content, { type: "text", text: instruction }] };
    fork = { ...context, messages: [...span.visible, carrier], generation };
    delete fork.overlay;
  } else {
    const previousText = span.previous.messages.flatMap((m) => m.content.map((b) => (b.type === "text" ? b.text : ""))).join("\n\n");
    const body = [previousText, summaryInstruction(span.anchor, span.previous.messages.length > 0, span.render)].filter((t) => t !== "").join("\n\n");
    fork = {
      ...context,
      prefix: buildPrefix({ system: [SUMMARIZER_SYSTEM], tools: [] }),
      summary: [],
      messages: [{ id: newId("m"), role: "user", content: [{ type: "text", text: body }] }],
      generation,
    };
    delete fork.overlay;
  }
  // An auxiliary call spends like the main one: under a limit it is forecast and reserved too.
  const call = await auxiliaryCall(runtime, options, input, opened, assembled, fork, COMPACTION_ROLE, (refusal) => options.notice?.(`the summary call was not sent (${refusal.message}); the extractive render is used`));
  if (!call) return { text: undefined, made: undefined };
  stopIfInterruptedDuring(options, "the compaction's summary call");
  const { failure, result } = call;
  if (failure !== undefined) options.notice?.(`the summary call failed (${(failure as Error).message ?? String(failure)}); the extractive render is used`);
  const text = failure === undefined ? acceptedSummary(result.content, result.finish?.reason) : undefined;
  if (failure === undefined && text === undefined) options.notice?.("the summary call's answer was not usable (empty, a tool call or cut at the cap); the extractive render is used");
  return { text, made: call };
}

/**
 * On a provider whose cache stores whole prefix units (CacheRules.prefixUnits,
 * DeepSeek), a request that shares Z0 + the summary zone as it was (`kept`,
 * estimated at `keptTokens` with Z0; none below the provider's minimum)
 * with the session's earlier requests and diverges right after it, so that the
 * provider persists that common prefix as a unit (kv_cache guide, "common
 * prefix detection") and the first request after the compaction reads it. No
 * earlier request ended there, and the chain's requests all extended one
 * another, so no unit ended there before. It moves the miss of that prefix
 * from the compacted request to this one (a few tokens more, an answer of one
 * token); the whole session's hit rate stays as it was.
 * @see https://api-docs.deepseek.com/guides/kv_cache
 */
async function boundaryRequest(runtime: Runtime, options: TurnOptions, input: TurnInput, opened: OpenedSession, assembled: AssembledContext, kept: Message[], keptTokens: number): Promise<MadeCall | undefined> {
  const { context } = assembled;
  const rules = input.resolved.spec.cacheRules?.(input.ref.model);
  // Below the provider's smallest unit there is nothing to persist.
  if (context.cache.mode === "off" || !rules?.prefixUnits || keptTokens < rules.minimumTokens) return undefined;
  const request: RequestContext = {
    ...context,
    summary: kept,
    messages: [{ id: newId("m"), role: "user", content: [{ type: "text", text: BOUNDARY_TEXT }] }],
    generation: { ...context.generation, maxTokens: 1 },
  };
  delete request.overlay;
  const call = await auxiliaryCall(runtime, options, input, opened, assembled, request, COMPACTION_ROLE, (refusal) => options.notice?.(`the compaction's boundary request was not sent (${refusal.message}): the next request reads less from the cache`));
  if (call) stopIfInterruptedDuring(options, "the compaction's boundary request");
  if (call?.failure !== undefined) options.notice?.(`the compaction's boundary request failed (${(call.failure as Error).message ?? String(call.failure)}): the next request reads less from the cache`);
  return call;
}

/**
 * A signal during one of the compaction's calls stops the turn there: that call was sent and is in the ledger,
 * nothing of the compaction is stored (no fallback summary stands in for the interrupted call), the turn's
 * request is not sent.
 * @throws CachetError INTERRUPTED saying so
 */
function stopIfInterruptedDuring(options: TurnOptions, call: string): void {
  if (!options.signal?.aborted) return;
  throw interruptedAt(options.signal, `during ${call}: that call was sent (it is in the ledger); the compaction was not stored, the turn's request was not sent, and the prompt was not stored`);
}

/** The message after the boundary; its answer (one token) is not used. */
const BOUNDARY_TEXT = "[compaction boundary] Reply with OK.";

/**
 * True for a prompt longer than the model's context window: the local check
 * before sending (CONTEXT_TOO_LONG, src/run/context-window.ts) or the provider's refusal.
 */
export function tooLong(failure: unknown): boolean {
  if (isCachetError(failure) && failure.code === "CONTEXT_TOO_LONG") return true;
  if (!(failure instanceof ProviderError) || failure.status === undefined || failure.status >= 500) return false;
  return /too long|context length|context limit|context window|maximum context|exceeds the maximum|input token count/i.test(failure.message);
}


