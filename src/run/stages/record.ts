/**
 * Stage "record": the call's usage is read, priced and written to the ledger
 * with its wire hash chain and cacheable maximum; `usage:record` observers and
 * the sink's `usage` and `cost` events follow.
 */
import { newId } from "../../context/ids.ts";
import { ProviderError } from "../../errors.ts";
import type { RequestContext } from "../../context/types.ts";
import type { UsageReport } from "../../plugin/usage.ts";
import type { WireRequest } from "../../plugin/wire.ts";
import type { LedgerRow } from "../../session/types.ts";
import { DEFAULT_CACHE_RULES, LIVE_ENTRY_ROWS, liveCacheableMaximum } from "../../wire/divergence.ts";
import { usageEvent } from "../output.ts";
import type { Priced, Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";
import type { AssembledContext } from "./context.ts";
import type { TurnInput } from "./input.ts";
import type { SendOutcome } from "./send.ts";
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
  const requestId = newId("r");
  // A cut stream keeps the usage the provider reported before the cut (CASES.md case 44), priced as a lower bound.
  const rawUsage = result.finish ? result.finish.rawUsage : result.reportedUsage;
  const mapped = rawUsage === undefined ? undefined : input.resolved.adapter.usageOrUnknown(rawUsage);
  if (mapped?.warning) options.notice?.(mapped.warning);
  const report = mapped === undefined ? undefined : servedReport(mapped.report, result.finish?.serviceTier);
  const priced: Priced = report ? await runtime.price(sent.catalogRef, report, { partial: failure !== undefined }) : unreportedCost(failure, result.content.length > 0);
  sent.reservation?.settle(priced.costUsd);
  if (report && priced.costUsd === null && priced.reason) options.notice?.(`cost unknown: ${priced.reason}`);
  const chain = await sent.chain;
  const previousRow = store.lastRequest(sessionId) ?? opened.parentLast ?? null;
  const row = ledgerRow({ requestId, sessionId, options, input, assembled, context, wire, sent, report, priced, chain });
  const earlier = previousRow ? (opened.parentLast && previousRow === opened.parentLast ? [previousRow] : store.recentRequests(sessionId, LIVE_ENTRY_ROWS)) : [];
  row.cacheableMax = previousRow ? liveCacheableMaximum(earlier, row, input.resolved.spec.cacheRules?.(input.ref.model) ?? DEFAULT_CACHE_RULES).tokens : null;
  if (opened.exactFork && !store.lastRequest(sessionId)) row.expectedCacheRead = row.cacheableMax ?? 0;
  store.recordRequest(row);
  if (report) {
    // An observer failing after the answer is stored must not turn a good turn into a failed run.
    try {
      await host.callParallel("usage:record", { sessionId, requestId, role: options.role, model: input.modelRef, report, costUsd: priced.costUsd });
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
    rawUsage: (result.finish ? result.finish.rawUsage : result.reportedUsage) ?? null,
    costUsd: p.priced.costUsd,
    noCacheCostUsd: p.priced.noCacheCostUsd ?? null,
    costEstimate: p.priced.estimate ?? null,
    providerCostUsd: p.report?.providerCostUsd ?? null,
    providerRequestId: result.finish?.requestId ?? null,
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
  };
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
