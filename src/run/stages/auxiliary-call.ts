/**
 * A call the turn makes besides its main request (a compaction's summary
 * call, its boundary request): rendered through the cache strategies, held
 * to the budget like the main call, sent once, and recorded in the ledger
 * under its own role without writing to stdout.
 */
import { catalogRefOf } from "../model-resolution.ts";
import { newId } from "../../context/ids.ts";
import { isCachetError } from "../../errors.ts";
import type { RequestContext } from "../../context/types.ts";
import { responseSince, unbilledFailure } from "../attempt-billing.ts";
import { consume, StreamFailure, type ConsumeResult } from "../consume.ts";
import { checkpoint } from "../interrupt.ts";
import type { OutputSink } from "../output.ts";
import type { Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";
import type { AssembledContext } from "./context.ts";
import type { TurnInput } from "./input.ts";
import { PartialAnswer } from "./partial-answer.ts";
import { recordCall } from "./record.ts";
import { inFlightRow } from "./send.ts";
import { type BudgetGate, reserveCall } from "./budget.ts";
import { applyCacheStrategies, renderRequest } from "./render.ts";
import type { OpenedSession } from "./session.ts";

/** A sink for calls that write nothing to stdout (summary calls, a refused attempt): their usage is in the ledger. */
export const QUIET_SINK: OutputSink = { text() {}, event() {}, async end() {} };

/** What an auxiliary call gave. */
export interface AuxiliaryResult {
  /** The answer as far as it came. */
  result: ConsumeResult;
  /** Why it failed, if it did (its usage, if any, is still in the ledger). */
  failure: unknown;
  /** Its ledger row id. */
  requestId: string;
  /** Its cost, USD; null when unpriced. */
  costUsd: number | null;
}

/**
 * Sends `request` (a context of the turn's session) once and records it with
 * `role`. Under a spending limit it is forecast and reserved first; refused,
 * nothing is sent and `refused` is called with the refusal.
 * @returns undefined when the budget refused the call
 * @throws CachetError STORE when the ledger write fails; budget errors other than a refusal
 */
export async function auxiliaryCall(
  runtime: Runtime,
  options: TurnOptions,
  input: TurnInput,
  opened: OpenedSession,
  assembled: AssembledContext,
  request: RequestContext,
  role: string,
  refused: (refusal: Error) => void,
): Promise<AuxiliaryResult | undefined> {
  const wire = await applyCacheStrategies(runtime.host, renderRequest(input, request), request, input.resolved.spec.cacheRules?.(input.ref.model));
  const chain = runtime.chainOf(wire);
  chain.catch(() => {});
  const catalogRef = catalogRefOf(input.resolved.spec, input.ref.model);
  let gate: BudgetGate;
  try {
    gate = await reserveCall(runtime, assembled.sessionId, { catalogRef, chain: () => chain, maxTokens: request.generation.maxTokens, cache: request.cache });
  } catch (refusal) {
    if (!isCachetError(refusal) || !refusal.code.startsWith("BUDGET_")) throw refusal;
    refused(refusal);
    return undefined;
  }
  // Its ledger row keeps a session (a fork) made for this turn: said before it is written (OpenedSession.kept).
  await opened.kept?.();
  await checkpoint(options.signal);
  const startedAt = Date.now();
  // As for the turn's own request: a process killed during the call leaves a row saying it was sent.
  // The version stored now: a prefix change of the turn is among its held writes, which run once its own request is cleared.
  const flight = inFlightRow(runtime.store.currentPrefix(assembled.sessionId)?.version ?? 1, assembled.sessionId, { ...options, role }, input, request, wire, 1, startedAt);
  runtime.store.recordRequest(flight);
  let result: ConsumeResult;
  let failure: unknown;
  const abort = new AbortController();
  const onAbort = () => abort.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const responsesBefore = runtime.responsesSeen();
  let unbilled = false;
  try {
    result = await consume(input.resolved.adapter.send(wire, { signal: abort.signal }), { idleMs: options.idleMs, stream: request.generation.stream, abort });
  } catch (error) {
    const f = error instanceof StreamFailure ? error : new StreamFailure(error, { content: [], finish: undefined, firstContentAt: undefined });
    result = f.partial;
    failure = f.error;
    unbilled = unbilledFailure(f.error, f.partial, responseSince(responsesBefore, runtime.responsesSeen()), options.signal?.aborted === true);
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
  }
  const sent = { result, failure, answer: new PartialAnswer(runtime.store, assembled.sessionId, newId("m")), chain, reservation: gate.reservation, catalogRef, startedAt, finishedAt: Date.now(), attempts: 1, earlier: [], unbilled, form: "full" as const, inFlight: [flight.id] };
  const recorded = await recordCall(runtime, { ...options, role, sink: QUIET_SINK }, input, opened, { ...assembled, context: request }, wire, sent);
  return { result, failure, requestId: recorded.row.id, costUsd: recorded.row.costUsd };
}
