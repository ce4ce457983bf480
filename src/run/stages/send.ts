/**
 * Stage "send": the user message is stored, the wire request is sent and its
 * stream consumed (text to the sink, the answer stored as it grows), with
 * retries of a retryable failure before any output was written (never of a
 * non-streamed answer the provider accepted: it generated, and bills, it whole).
 */
import { catalogRefOf } from "../model-resolution.ts";
import { checkContextWindow } from "../context-window.ts";
import type { Reservation } from "../../budget/budget.ts";
import { reserveCall } from "./budget.ts";
import { newId } from "../../context/ids.ts";
import type { Message, RequestContext } from "../../context/types.ts";
import { CachetError, ProviderError, isCachetError, withHintText } from "../../errors.ts";
import type { UsageEvent } from "../../plugin/stream.ts";
import type { WireRequest } from "../../plugin/wire.ts";
import { abortableSleep } from "../../sleep.ts";
import type { ChainLink, LedgerRow, RequestForm } from "../../session/types.ts";
import { previousCall } from "../continuation.ts";
import { acceptedStatus, responseSince, unbilledFailure } from "../attempt-billing.ts";
import { consume, StreamFailure, type ConsumeResult } from "../consume.ts";
import { checkpoint, interruptedAt } from "../interrupt.ts";
import type { Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";
import type { TurnInput } from "./input.ts";
import { PartialAnswer } from "./partial-answer.ts";

/** What sending produced. */
export interface SendOutcome {
  /** The stream's result, or what arrived before the failure. */
  result: ConsumeResult;
  /** The failure (with a hint), undefined on success. */
  failure: unknown;
  /** The assistant message, stored (when anything arrived) under `answer.id`. */
  answer: PartialAnswer;
  /** Wire hash chain of the request, computed while the provider answered. */
  chain: Promise<ChainLink[]>;
  /** The budget's reservation of the last attempt, settled once the call is priced (src/budget). */
  reservation: Reservation | undefined;
  /** `provider/model` of the price catalog. */
  catalogRef: string;
  /** Unix epoch ms when the last attempt started and ended. */
  startedAt: number;
  finishedAt: number;
  /** 1-based number of the last attempt. */
  attempts: number;
  /** The attempts before the last one, all failed: each gets its own ledger row. */
  earlier: FailedAttempt[];
  /** The last attempt failed provably unbilled (src/run/attempt-billing.ts): it costs exactly $0. */
  unbilled: boolean;
  /** How the last attempt was sent: the whole request, or only the new input after the provider's stored previous response. */
  form: RequestForm;
  /**
   * Ids of the in-flight ledger rows written as each attempt was sent (index: attempt − 1): the turn's
   * final rows take these ids and replace them; a crash leaves them, to be marked lost by the next turn.
   */
  inFlight: string[];
}

/** A failed attempt before the last one. */
export interface FailedAttempt {
  /** 1-based. */
  attempt: number;
  /** Unix epoch ms. */
  startedAt: number;
  finishedAt: number;
  /** The usage the provider reported before the failure (a lower bound of the bill), if any. */
  usage: UsageEvent | undefined;
  /** Events of generated output that arrived before the failure (src/meter/cut-stream.ts). */
  streamedOutput: number;
  error: unknown;
  /** Provably not billed (src/run/attempt-billing.ts): its row costs exactly $0 and the budget holds nothing for it. */
  unbilled: boolean;
  /** How it was sent (a continuation the provider lost was incremental). */
  form: RequestForm;
}

/** Inputs from this many characters on get garbage collected between the steps that copy them. */
const HUGE_INPUT_CHARS = 8 << 20;

/**
 * Reserves the call's forecast under a spending limit, stores the user
 * message, sends `wire` and consumes the answer. Never throws
 * for a provider failure: it is returned in `failure` with the partial answer
 * stored and marked incomplete.
 * @param prefixVersion the stable prefix version the request is rendered with (AssembledContext.prefixVersion), stored
 *   once `pending` has run; the in-flight rows carry it, as the turn's final rows do
 * @param pending the turn's held writes (AssembledContext.pending): run, and emptied, once the checks that can
 *   refuse the request before sending (the window, the model's parameters, a budget, a signal) have passed
 * @param kept OpenedSession.kept of a session made for this turn: awaited once the window and budget checks have
 *   passed, before the last signal check and before anything is stored
 * @throws CachetError CONTEXT_TOO_LONG for a request larger than the model's window (nothing stored or sent); STORE when the store refuses a write; the budget's refusal of the first attempt (nothing stored)
 */
export async function sendRequest(runtime: Runtime, options: TurnOptions, input: TurnInput, sessionId: string, prefixVersion: number, context: RequestContext, wire: WireRequest, pending: (() => void)[] = [], kept?: () => Promise<void>): Promise<SendOutcome> {
  const { store, host } = runtime;
  await checkpoint(options.signal);
  // With a huge input (100 MB on stdin) each step makes a transient copy of it
  // (stored JSON, canonical JSON for hashing); collecting between the steps
  // keeps them from piling up in the peak memory.
  const huge = messageChars(input.userMessage) >= HUGE_INPUT_CHARS;
  if (huge) Bun.gc(true);
  // Hashing and token-counting the request (loading the tokenizer takes ~10 ms) begins once the request has
  // left, overlapping the provider's time to first token, unless a check before sending asks for the estimate
  // (a prompt near the window, a spending limit) or the input is huge (below).
  let counting: Promise<ChainLink[]> | undefined;
  const chain = () => {
    if (counting) return counting;
    counting = runtime.chainOf(wire);
    counting.catch(() => {});
    return counting;
  };
  const { adapter } = input.resolved;
  // Only the new input, when the provider keeps the conversation and this request just appends to it (continuation.ts).
  const previous = adapter.continueFrom && input.resolved.incremental ? previousCall(store.lastRequest(sessionId), runtime.prefixHashes(wire), { provider: input.ref.provider, model: input.ref.model, protocol: wire.protocol }) : undefined;
  let sending = (previous && adapter.continueFrom?.(wire, previous)) || wire;
  const catalogRef = catalogRefOf(input.resolved.spec, input.ref.model);
  // A fork's first request has no ledger row of the fork yet: its hint names the parent, the one that stays.
  const sessionOf = () => ({ id: sessionId, forkOf: store.lastRequest(sessionId) ? null : store.findSession(sessionId).parentId });
  await checkContextWindow(runtime.catalogEntry, catalogRef, context, chain, options.generation.maxTokens ?? input.resolved.spec.defaultMaxTokens, sessionOf);
  // Under a spending limit the forecast needs the prompt estimate before sending; a refusal stores nothing.
  // The output it may bill is the max_tokens it sends: `--max-tokens` (or the session's), else the provider's default
  // (Anthropic's 8,192); a provider that sends none may answer up to the model's output limit, which the budget reads.
  const maxTokens = context.generation.maxTokens ?? input.resolved.spec.defaultMaxTokens;
  const gate = await reserveCall(runtime, sessionId, { catalogRef, chain, maxTokens, cache: context.cache });
  if (huge) {
    // Counted now, before anything is stored: held while the input is stored and the body streamed, the tokenizer
    // (about 8 MB with its tables) would sit beside their transient copies at the turn's peak. Once the count is
    // made it is let go of (the next count loads it again, tens of ms) and collected with the catalog's garbage.
    await chain().catch(() => {});
    (await import("../../tokenizer/o200k.ts")).unloadO200k();
    Bun.gc(true);
  }
  // A session made for this turn is kept from here: its held `session` line and `session:fork` (a plugin hook,
  // which may take its time) come before the last checkpoint, so that a signal during them still stores nothing.
  await kept?.();
  // The last moment nothing is stored or sent (a signal after it aborts the attempt at once).
  await checkpoint(options.signal);
  for (const write of pending.splice(0)) write();
  // Stored with the first attempt's in-flight row, in one write (below); a huge one first, on its own.
  let prompt: Message | undefined = input.userMessage;
  if (huge) {
    store.appendMessage(sessionId, prompt);
    prompt = undefined;
    Bun.gc(true);
  }

  const answer = new PartialAnswer(store, sessionId, newId("m"));
  let startedAt = Date.now();
  const earlier: FailedAttempt[] = [];
  let unbilled = false;
  let outcome: ConsumeResult | undefined;
  let failure: unknown;
  let partial: ConsumeResult | undefined;
  let emitted = false;
  let attempts = 0;
  // Attempts that resent the whole request after the provider lost the previous response: not retries.
  let resent = 0;
  const inFlight: string[] = [];

  for (let attempt = 0; ; attempt++) {
    attempts = attempt + 1;
    // Written as the request leaves, so that a process killed mid-answer leaves a row saying the attempt happened.
    const flight = inFlightRow(prefixVersion, sessionId, options, input, context, wire, attempts, startedAt);
    // The prompt, then, in the same write, the row: both are stored before the request leaves, or neither.
    const unstored = prompt;
    store.transaction(() => {
      if (unstored) store.appendMessage(sessionId, unstored);
      store.recordRequest(flight);
    });
    prompt = undefined;
    inFlight.push(flight.id);
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    if (options.signal?.aborted) abort.abort();
    const responsesBefore = runtime.responsesSeen();
    void runtime.nextRequestSent().then(chain);
    try {
      outcome = await consume(adapter.send(sending, { signal: abort.signal }), {
        idleMs: options.idleMs,
        ...(options.thinkingMs ? { thinkingMs: options.thinkingMs } : {}),
        stream: options.generation.stream,
        abort,
        onArrive: (event) => host.callParallel("response:event", event, context),
        onEvent: async (event, content) => {
          // A signature alone (empty delta) shows nothing.
          if (event.type === "text" && event.delta !== "" && !context.prefix.schema) {
            options.sink.text(event.delta);
            emitted = true;
          } else if (event.type === "tool_call") {
            options.sink.event({ type: "tool_call", id: event.id, name: event.name, arguments: event.arguments });
            emitted = true;
          } else if (event.type === "image") {
            options.sink.event({ type: "image", media_type: event.mediaType, data: event.data });
            emitted = true;
          } else if (event.type === "provider_block") {
            options.sink.event({ type: "provider_block", block: event.block });
            emitted = true;
          }
          // Persist the partial answer as it grows, so a crash keeps it (marked incomplete).
          // Not before there is content: an empty thinking start must not store an empty assistant message.
          if (event.type !== "chatter" && event.type !== "finish" && event.type !== "usage" && content.length > 0) answer.saveSoon(content);
        },
      });
      break;
    } catch (error) {
      const f = error instanceof StreamFailure ? error : new StreamFailure(error, { content: [], finish: undefined, firstContentAt: undefined });
      const nothingYet = !emitted && f.partial.content.length === 0;
      const status = responseSince(responsesBefore, runtime.responsesSeen());
      // A non-streamed answer accepted (a 2xx came) was generated whole before its body left: whatever broke in that
      // body, the provider bills it, so it is never sent again. A stream that failed before any content is retried
      // cleanly (CASES.md case 30), each attempt metered.
      const accepted = options.generation.stream === false && acceptedStatus(status);
      const cause = options.signal?.aborted
        ? interruptedAt(options.signal, interruptedWhat(f.partial.content.length > 0, runtime.ephemeral))
        : accepted && nothingYet
          ? notResent(f.error, status, input.ref.provider, runtime.ephemeral ? undefined : sessionId)
          : f.error;
      unbilled = unbilledFailure(f.error, f.partial, status, options.signal?.aborted === true);
      const failed: FailedAttempt = { attempt: attempt + 1, startedAt, finishedAt: Date.now(), usage: f.partial.partialUsage, streamedOutput: f.partial.streamedOutput ?? 0, error: cause, unbilled, form: sending === wire ? "full" : "incremental" };
      if (sending !== wire && nothingYet && !accepted && !options.signal?.aborted && adapter.isContinuationLost?.(cause)) {
        options.notice?.(`${(cause as Error).message}; sending the whole request instead`);
        // The whole request goes out under the same reservation; the lost continuation was refused, so not billed.
        earlier.push(failed);
        sending = wire;
        resent++;
        startedAt = Date.now();
        continue;
      }
      const retryable = cause instanceof ProviderError && cause.retryable && nothingYet && !accepted;
      if (retryable && attempt - resent < options.retries && !options.signal?.aborted) {
        const wait = Math.min((cause as ProviderError).retryAfterMs ?? 500 * 2 ** attempt, 30_000);
        options.notice?.(`${(cause as ProviderError).message}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 2} of ${options.retries + 1})`);
        try {
          await abortableSleep(wait, options.signal);
        } catch {
          // Ctrl-C during the wait: nothing more is sent (CASES.md case 45).
          failure = interruptedAt(options.signal!, "while waiting to retry: nothing more was sent");
          partial = f.partial;
          break;
        }
        try {
          await gate.retry(unbilled);
        } catch (refusal) {
          failure = refusal;
          partial = { content: [], finish: undefined, firstContentAt: undefined };
          break;
        }
        if (options.signal?.aborted) {
          // The next attempt was reserved but never sent.
          gate.reservation?.settle(0);
          failure = interruptedAt(options.signal!, "while waiting to retry: nothing more was sent");
          partial = f.partial;
          break;
        }
        earlier.push(failed);
        startedAt = Date.now();
        continue;
      }
      failure = cause;
      partial = f.partial;
      break;
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  answer.cancel();
  const result = outcome ?? partial!;
  if (failure !== undefined) failure = withHint(failure, result.content.length > 0, attempts, runtime.ephemeral ? undefined : sessionId);
  if (result.content.length > 0 || answer.saved) {
    try {
      answer.save(result.content, failure !== undefined);
    } catch (error) {
      // The store refused the answer (disk full, read-only, the lease taken over): the turn fails with that, and the
      // ledger write that follows names what was kept and what was not.
      if (!refusedWrite(failure)) failure = error;
    }
  }
  return { result, failure, answer, chain: chain(), reservation: gate.reservation, catalogRef, startedAt, finishedAt: Date.now(), attempts, earlier, unbilled: outcome === undefined && unbilled, form: sending === wire ? "full" : "incremental", inFlight };
}

/**
 * The ledger row of an attempt being sent: status `in_flight`, usage and cost
 * unknown, no chain yet; recordCall replaces it (same id) when the answer ends.
 * @param prefixVersion the session's stable prefix version the request is rendered with (already stored)
 */
export function inFlightRow(prefixVersion: number, sessionId: string, options: TurnOptions, input: TurnInput, context: RequestContext, wire: WireRequest, attempt: number, startedAt: number): LedgerRow {
  const unknown = undefined;
  return {
    id: newId("r"),
    sessionId,
    attempt,
    prefixVersion,
    role: options.role,
    provider: input.ref.provider,
    model: input.ref.model,
    protocol: wire.protocol,
    startedAt,
    firstTokenAt: null,
    finishedAt: null,
    latencyMs: null,
    ttftMs: null,
    outputTps: null,
    usage: { input: unknown, cacheRead: unknown, cacheWrite5m: unknown, cacheWrite1h: unknown, output: unknown, reasoning: unknown },
    rawUsage: null,
    costUsd: null,
    noCacheCostUsd: null,
    costEstimate: null,
    providerCostUsd: null,
    providerRequestId: null,
    affinityKey: context.cache.mode === "off" ? null : (context.cache.affinityKey ?? null),
    cacheMode: context.cache.mode,
    cacheTtl: context.cache.ttl,
    chain: [],
    expectedCacheRead: null,
    cacheableMax: null,
    status: "in_flight",
    error: null,
    messageId: null,
    finishReason: null,
  };
}

/**
 * The failure of a non-streamed attempt the provider accepted (HTTP `status`, a 2xx) whose body was cut or
 * unreadable, saying that it was not resent and why: the provider generated, and may have billed, the whole answer.
 * The adapter's own failure (a JSON parser's error, which alone says neither) follows in parentheses. The hint names
 * the session's ledger (`cachet cost`) where the attempt's row is, in the words that row is listed with there (none under --no-store: `sessionId` undefined); how
 * to resend it is the turn's rollback note (record.ts). A stall keeps its own message and hint (its limit is what to
 * change), and so does any failure that is no ProviderError.
 * @returns a ProviderError PROVIDER_STREAM, not retryable, the original as its cause
 */
function notResent(error: unknown, status: number, provider: string, sessionId: string | undefined): unknown {
  if (!(error instanceof ProviderError) || error.code === "PROVIDER_STALL") return error;
  const own = error.message.startsWith(`${provider}: `) ? error.message.slice(provider.length + 2) : error.message;
  const what = `the response body was cut or unreadable after HTTP ${status} (${own.replace(/^stream failed: /, "")})`;
  return new ProviderError("PROVIDER_STREAM", `${provider}: ${what}; not resent, as the provider may have billed it`, {
    cause: error,
    ...(sessionId === undefined ? {} : { hint: `\`cachet cost ${sessionId}\` shows its ledger row (status error, cost unknown)` }),
    ...(error.status !== undefined ? { status: error.status } : {}),
  });
}

/** What an interrupt after sending kept: with `--no-store` (`ephemeral`) nothing, whatever came. */
function interruptedWhat(partial: boolean, ephemeral: boolean): string {
  if (ephemeral) return `${partial ? "mid-answer" : "after the request was sent, before any answer came"}: nothing was stored (--no-store)`;
  return partial
    ? "mid-answer: the partial answer is stored and marked incomplete (`cachet -c` continues)"
    : "after the request was sent, before any answer came: there was no answer to store; the attempt is in the ledger with the usage the provider reported, if any";
}

/**
 * The failure with a hint saying what to do. After a partial answer, what was
 * kept comes first, before the failure's own hint (a stall's names the idle
 * limit) or else how to go on: the partial answer, stored and marked
 * incomplete, and the commands that show it (`sessionId` undefined under
 * --no-store: nothing was kept). Without one, when it carries no hint: after a
 * retryable refusal, how many attempts were made and how to allow more.
 * Applied before the answer's last save: a save the store refuses replaces
 * this failure, so "stored" is never said of an answer that was not.
 */
function withHint(failure: unknown, partial: boolean, attempts: number, sessionId: string | undefined): unknown {
  if (!(failure instanceof ProviderError)) return failure;
  if (partial) {
    const kept = sessionId === undefined ? "the partial answer was not stored (--no-store)" : `the partial answer is stored and marked incomplete (\`cachet sessions show ${sessionId}\` and \`cachet export ${sessionId}\` show it)`;
    return withHintText(failure, `${kept}; ${failure.hint ?? (sessionId === undefined ? "run the command again for a whole answer" : "`cachet -c` continues the session")}`);
  }
  if (failure.hint) return failure;
  let hint: string | undefined;
  if (failure.retryable) hint = `${attempts === 1 ? "no retry was made" : `gave up after ${attempts} attempts`}; wait a moment and run again, or allow more with --retries N`;
  else if (failure.status !== undefined) hint = "the provider refused this request; check the model id, the flags and -o options (--debug shows more)";
  return hint ? withHintText(failure, hint) : failure;
}

/** Whether `error` is the store refusing a write (a full disk, a read-only file, a lease taken over). */
export function refusedWrite(error: unknown): boolean {
  return isCachetError(error) && (error.code === "STORE" || error.code === "SESSION_CONFLICT");
}

function messageChars(message: Message): number {
  let n = 0;
  for (const block of message.content) n += block.type === "text" ? block.text.length : block.type === "tool_result" ? block.content.length : 0;
  return n;
}
