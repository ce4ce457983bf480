/**
 * Stage "record": the call's usage is read, priced and written to the ledger
 * with its wire hash chain and cacheable maximum; `usage:record` observers and
 * the sink's `usage` and `cost` events follow.
 */
import { newId } from "../../context/ids.ts";
import { cutStreamReport } from "../../meter/cut-stream.ts";
import { CachetError, ProviderError, isCachetError, withHintText } from "../../errors.ts";
import type { RequestContext } from "../../context/types.ts";
import type { UsagePass, UsageReport } from "../../plugin/usage.ts";
import type { WireRequest } from "../../plugin/wire.ts";
import type { LedgerRow } from "../../session/types.ts";
import { dollars } from "../../meter/money.ts";
import { DEFAULT_CACHE_RULES, LIVE_ENTRY_ROWS, liveCacheableMaximum, OTHER_SESSIONS, otherSessionsSince } from "../../wire/divergence.ts";
import { usageEvent } from "../output.ts";
import type { Priced, Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";
import { generationChanged } from "../sticky-generation.ts";
import type { AssembledContext } from "./context.ts";
import type { TurnInput } from "./input.ts";
import { refusedWrite, type FailedAttempt, type SendOutcome } from "./send.ts";
import { UNBILLED_COST } from "../attempt-billing.ts";
import type { PartialAnswer } from "./partial-answer.ts";
import type { OpenedSession } from "./session.ts";

/** The ledger row of a call and what it was built from. */
export interface Recorded {
  row: LedgerRow;
  report: UsageReport | undefined;
  priced: Priced;
}

/**
 * Records the call in the ledger. A fork's first request is compared with the
 * parent's last one (the cache it inherits); an exact fork's first request
 * also gets its expected cache read, so inheritance is measured, not assumed.
 * @throws CachetError STORE when the ledger write fails
 */
export async function recordCall(
  runtime: Runtime,
  options: TurnOptions,
  input: TurnInput,
  opened: OpenedSession,
  assembled: AssembledContext,
  wire: WireRequest,
  sent: SendOutcome,
): Promise<Recorded> {
  const { store, host } = runtime;
  const { sessionId, context } = assembled;
  const { result, failure } = sent;
  // The final rows take the ids of the in-flight rows written as each attempt was sent, and replace them.
  const requestId = sent.inFlight.at(-1) ?? newId("r");
  // A cut stream keeps the usage the provider reported before the cut, as a lower bound (CASES.md case 44).
  const usageLowerBound = result.finish === undefined && result.partialUsage !== undefined;
  const rawUsage = result.finish?.rawUsage ?? result.partialUsage?.rawUsage;
  const mapped = rawUsage === undefined ? undefined : input.resolved.adapter.usageOrUnknown(rawUsage);
  if (mapped?.warning) options.notice?.(mapped.warning);
  const served = mapped === undefined ? undefined : servedReport(mapped.report, result.finish?.serviceTier);
  const report = served && usageLowerBound ? cutStreamReport(served, result.streamedOutput ?? 0) : served;
  const priced: Priced = report ? await runtime.price(sent.catalogRef, report, { partial: failure !== undefined || usageLowerBound }) : unreportedCost(sent.unbilled, failure);
  sent.reservation?.settle(priced.costUsd);
  if (report && priced.costUsd === null && priced.reason) options.notice?.(`cost unknown: ${priced.reason}${priced.nearModel ? `; did you mean ${priced.nearModel}?` : ""}`);
  for (const warning of priced.warnings ?? []) options.notice?.(warning);
  const chain = await sent.chain;
  const previousRow = store.lastRequest(sessionId) ?? opened.parentLast ?? null;
  const row = ledgerRow({ requestId, sessionId, options, input, assembled, context, wire, sent, report, priced, chain, rawUsage, usageLowerBound });
  const forkStart = opened.parentLast !== undefined && opened.parentLast !== null && previousRow === opened.parentLast;
  const earlier = previousRow ? (forkStart ? [previousRow] : store.recentRequests(sessionId, LIVE_ENTRY_ROWS)) : [];
  const rules = input.resolved.spec.cacheRules?.(input.ref.model) ?? DEFAULT_CACHE_RULES;
  // A fork's first request is measured against the parent's last one (its inheritance); any other also against
  // what other sessions left in the provider's cache, shared by every session of the model.
  const others = report && !forkStart ? store.otherSessionsRequests(row, otherSessionsSince(row, rules), OTHER_SESSIONS) : [];
  // Without reported usage the prompt is unknown: a cacheable maximum beside it would count against no prompt.
  row.cacheableMax = report && (previousRow || others.length > 0) ? liveCacheableMaximum(earlier, row, rules, others).tokens : null;
  if (opened.exactFork && !store.lastRequest(sessionId)) row.expectedCacheRead = row.cacheableMax ?? 0;
  const passes = await Promise.all((report?.passes ?? []).map((pass) => passRow(runtime, row, sent.catalogRef, pass)));
  if (passes.length > 0 && (previousRow || others.length > 0)) {
    // A provider pass (server-side compaction) read the request as sent; the answer's pass then read only the
    // stable prefix and the pass's summary, so that prefix is all it could have found in the cache.
    passes[0]!.cacheableMax = row.cacheableMax;
    row.cacheableMax = liveCacheableMaximum(earlier, { ...row, chain: stableLinks(row.chain) }, rules, others).tokens;
  }
  const rows = [...(await Promise.all(sent.earlier.map((failed) => retryRow(runtime, input, row, sent.catalogRef, failed, sent.inFlight[failed.attempt - 1])))), ...passes, row];
  // Under a spending limit the budget's reservations count the call and its attempts; a provider's extra pass was
  // not reserved, so it counts from the ledger like every call of a run without a limit.
  const spend = runtime.emulatorUrl === undefined ? "real" : "emulated";
  for (const r of rows) if (!runtime.budget || passes.includes(r)) r.spend = spend;
  try {
    // One transaction: the turn's attempts are in the ledger together, or none is (its in-flight rows then stay).
    // Every attempt sent has its final row: $0 for an unbilled failure, usage as far as known for the others.
    store.transaction(() => {
      store.discardRequests(sessionId, sent.inFlight);
      for (const r of rows) store.recordRequest(r);
    });
  } catch (error) {
    throw ledgerWriteFailed(error, rows, sent.answer);
  }
  // A prompt that got no answer at all leaves the log as it was before the turn, so the next request
  // (`cachet -c` again) is well formed; its ledger rows stay.
  if (failure !== undefined && result.content.length === 0 && !sent.answer.saved && store.rollbackUnanswered(sessionId, input.userMessage.id)) {
    // So are its generation settings: an option the provider refused must not be resent by every later `-c`.
    const held = opened.loaded.generation;
    const settings = generationChanged(held, input.generation.stored);
    if (settings) store.setGeneration(sessionId, held);
    sent.failure = withNote(failure, `the prompt was not kept in the session (no answer came)${settings ? ", nor were this turn's setting changes" : ""}: run the same command again to resend it`);
  }
  if (report) {
    // An observer failing after the answer is stored must not turn a good turn into a failed run.
    try {
      await host.callParallel("usage:record", { sessionId, requestId, role: options.role, model: input.modelRef, report, costUsd: priced.costUsd });
    } catch (error) {
      options.notice?.((error as Error).message);
    }
    for (const pass of passes) {
      options.sink.event(usageEvent(pass.id, pass.usage, pass.rawUsage));
      options.sink.event({ type: "cost", request_id: pass.id, cost_usd: pass.costUsd });
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
  return { row, report, priced };
}

interface RowParts {
  requestId: string;
  sessionId: string;
  options: TurnOptions;
  input: TurnInput;
  assembled: AssembledContext;
  context: RequestContext;
  wire: WireRequest;
  sent: SendOutcome;
  report: UsageReport | undefined;
  priced: Priced;
  chain: LedgerRow["chain"];
  rawUsage: unknown;
  usageLowerBound: boolean;
}

/** The ledger row of a call, before its cacheable maximum is known. */
function ledgerRow(p: RowParts): LedgerRow {
  const { result, failure, startedAt, finishedAt, answer } = p.sent;
  const content = result.content;
  const outputTokens = p.report?.usage.output;
  const streamMs = result.firstContentAt !== undefined ? finishedAt - result.firstContentAt : undefined;
  return {
    id: p.requestId,
    sessionId: p.sessionId,
    attempt: p.sent.attempts,
    ...(p.usageLowerBound ? { usageLowerBound: true } : {}),
    prefixVersion: p.assembled.prefixVersion.version,
    role: p.options.role,
    provider: p.input.ref.provider,
    model: p.input.ref.model,
    protocol: p.wire.protocol,
    startedAt,
    firstTokenAt: result.firstContentAt ?? null,
    finishedAt,
    latencyMs: finishedAt - startedAt,
    ttftMs: result.firstContentAt !== undefined ? result.firstContentAt - startedAt : null,
    outputTps: outputTokens !== undefined && streamMs !== undefined && streamMs > 0 ? (outputTokens * 1000) / streamMs : null,
    usage: p.report?.usage ?? { input: undefined, cacheRead: undefined, cacheWrite5m: undefined, cacheWrite1h: undefined, output: undefined, reasoning: undefined },
    rawUsage: p.rawUsage ?? null,
    costUsd: p.priced.costUsd,
    noCacheCostUsd: p.priced.noCacheCostUsd ?? null,
    costEstimate: p.priced.estimate ?? null,
    providerCostUsd: p.report?.providerCostUsd ?? null,
    providerRequestId: result.finish?.requestId ?? result.partialUsage?.requestId ?? null,
    affinityKey: p.context.cache.mode === "off" ? null : (p.context.cache.affinityKey ?? null),
    cacheMode: p.context.cache.mode,
    cacheTtl: p.context.cache.ttl,
    chain: p.chain,
    expectedCacheRead: null,
    cacheableMax: null,
    status: failure === undefined ? "ok" : content.length > 0 ? "incomplete" : "error",
    error: failure === undefined ? null : failure instanceof Error ? failure.message : String(failure),
    messageId: content.length > 0 || answer.saved ? answer.id : null,
    finishReason: result.finish?.reason ?? null,
    requestForm: p.sent.form,
    ...(p.report?.serviceTier !== undefined ? { serviceTier: p.report.serviceTier } : {}),
  };
}

/** The report with the tier the finish event says was served, when the usage object did not say. */
function servedReport(report: UsageReport, serviceTier: string | undefined): UsageReport {
  return serviceTier === undefined || report.serviceTier !== undefined ? report : { ...report, serviceTier };
}

/**
 * The cost of an attempt that reported no usage: one that failed provably
 * unbilled (src/run/attempt-billing.ts) costs exactly $0; anything else is unknown.
 */
function unreportedCost(unbilled: boolean, failure: unknown): Priced {
  if (!unbilled) return { costUsd: null, noCacheCostUsd: null, reason: "the provider reported no usage" };
  const why = failure instanceof ProviderError && failure.status !== undefined ? `refused with HTTP ${failure.status}` : "refused with an HTTP error or no response came";
  return { ...UNBILLED_COST, reason: `${why} before any output: not billed` };
}

/**
 * The ledger row of a failed attempt before the last (under its in-flight row's id): the final row's request, with
 * that attempt's own times and error; an unbilled one costs exactly $0, another has its usage as far as the provider
 * reported it, flagged as a lower bound (cost unknown without any).
 */
async function retryRow(runtime: Runtime, input: TurnInput, final: LedgerRow, catalogRef: string, failed: FailedAttempt, inFlightId: string | undefined): Promise<LedgerRow> {
  const report = failed.usage === undefined ? undefined : cutStreamReport(input.resolved.adapter.usageOrUnknown(failed.usage.rawUsage).report, failed.streamedOutput);
  const priced: Priced = report ? await runtime.price(catalogRef, report, { partial: true }) : unreportedCost(failed.unbilled, failed.error);
  const { usageLowerBound: _, ...request } = final;
  const unknown = undefined;
  return {
    ...request,
    id: inFlightId ?? newId("r"),
    attempt: failed.attempt,
    ...(failed.usage !== undefined ? { usageLowerBound: true } : {}),
    startedAt: failed.startedAt,
    firstTokenAt: null,
    finishedAt: failed.finishedAt,
    latencyMs: failed.finishedAt - failed.startedAt,
    ttftMs: null,
    outputTps: null,
    usage: report?.usage ?? { input: unknown, cacheRead: unknown, cacheWrite5m: unknown, cacheWrite1h: unknown, output: unknown, reasoning: unknown },
    rawUsage: failed.usage?.rawUsage ?? null,
    costUsd: priced.costUsd,
    noCacheCostUsd: priced.noCacheCostUsd ?? null,
    costEstimate: priced.estimate ?? null,
    providerCostUsd: report?.providerCostUsd ?? null,
    providerRequestId: failed.usage?.requestId ?? null,
    expectedCacheRead: null,
    status: "error",
    error: failed.error instanceof Error ? failed.error.message : String(failed.error),
    messageId: null,
    finishReason: null,
    requestForm: failed.form,
  };
}

/** The leading links of the stable prefix (system parts, tools, schema). */
function stableLinks(chain: LedgerRow["chain"]): LedgerRow["chain"] {
  const end = chain.findIndex((link) => link.kind !== "system" && link.kind !== "tool" && link.kind !== "schema");
  return end < 0 ? chain : chain.slice(0, end);
}

/**
 * The ledger row of an extra pass the provider ran inside the request
 * (UsageReport.passes, e.g. Anthropic's server-side compaction): the same
 * request and times, the pass's role and usage, priced on its own; it read
 * no cache the previous request left for the answer, so no cacheable maximum.
 */
async function passRow(runtime: Runtime, final: LedgerRow, catalogRef: string, pass: UsagePass): Promise<LedgerRow> {
  const priced = await runtime.price(catalogRef, { usage: pass.usage, raw: pass.raw }, { partial: false });
  return {
    ...final,
    id: newId("r"),
    role: pass.role,
    ttftMs: null,
    outputTps: null,
    usage: pass.usage,
    rawUsage: pass.raw ?? null,
    costUsd: priced.costUsd,
    noCacheCostUsd: priced.noCacheCostUsd ?? null,
    costEstimate: priced.estimate ?? null,
    providerCostUsd: null,
    expectedCacheRead: null,
    cacheableMax: null,
    messageId: null,
    finishReason: null,
  };
}

/** The failure with `note` added to its hint (a CachetError keeps its code, exit code and provider details). */
function withNote(failure: unknown, note: string): unknown {
  if (!isCachetError(failure)) return failure;
  return withHintText(failure, failure.hint ? `${failure.hint}; ${note}` : note);
}

/**
 * A failed ledger write (disk full, read-only store, the session's lease
 * taken over) reported with exactly what was kept: the prompt (stored before
 * the request was sent) and the answer as far as it was stored; the billed
 * attempts were not, so their usage is named here for the user to keep.
 */
function ledgerWriteFailed(error: unknown, rows: readonly LedgerRow[], answer: Pick<PartialAnswer, "saved" | "complete">): unknown {
  if (!refusedWrite(error)) return error;
  const cachetError = error as CachetError;
  const billed = rows.map((r) => `${r.id} attempt ${r.attempt ?? 1}: input ${r.usage.input ?? "?"}, cache read ${r.usage.cacheRead ?? "?"}, cache write ${(r.usage.cacheWrite5m ?? 0) + (r.usage.cacheWrite1h ?? 0)}, output ${r.usage.output ?? "?"}, ${r.costUsd === null ? "cost unknown" : dollars(r.costUsd)}`);
  const kept = !answer.saved ? "" : answer.complete ? " and the answer" : " and the answer as far as it was stored (marked incomplete)";
  const fix = cachetError.code === "SESSION_CONFLICT" ? "the process that took the session over goes on with it; then" : "free space or fix permissions, then";
  return new CachetError(cachetError.code, `${cachetError.message}; the ledger rows of this turn were not written (${billed.join("; ")})`, {
    hint: `kept: the prompt${kept} in the session; not kept: those ledger rows; ${fix} \`cachet -c\` goes on`,
    cause: error,
  });
}
