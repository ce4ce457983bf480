/**
 * One turn of the main job, as a short pipeline of named stages
 * (DESIGN.md, "Data flow of one turn"), each a function in stages/ with data
 * in and out:
 *
 *   choose the session → resolve the input → assemble the context →
 *   render → cache strategies → compact if due → request:before → send →
 *   record → finish
 *
 * The context is rendered and marked once: the compaction check estimates
 * that very request (a compaction renders and marks the new context again),
 * and the hash chain it computes is the one recorded.
 *
 * A provider's "too long" refusal gets one recovery compaction and one retry
 * (never a second compaction in the same turn).
 *
 * Only the store, the network and the sink do I/O. A runtime (plugins, config,
 * store, emulator) is opened once and can serve many turns (the probe command
 * runs whole scenarios through it).
 */
import { isCachetError } from "../errors.ts";
import { checkpoint } from "./interrupt.ts";
import type { Runtime } from "./runtime.ts";
import type { JsonEvent, OutputSink } from "./output.ts";
import { QUIET_SINK } from "./stages/auxiliary-call.ts";
import { compactIfDue, compactNow, tooLong } from "./stages/compact.ts";
import { assembleContext } from "./stages/context.ts";
import { finishTurn } from "./stages/finish.ts";
import { resolveInput } from "./stages/input.ts";
import { recordCall } from "./stages/record.ts";
import { applyCacheStrategies, finishRequest, markRequest, renderRequest } from "./stages/render.ts";
import { sendRequest, type SendOutcome } from "./stages/send.ts";
import { chooseSession, inSession, type OpenedSession } from "./stages/session.ts";
import type { TurnOptions, TurnResult } from "./turn-types.ts";

export { DEFAULT_MODEL } from "./stages/input.ts";
export type { SessionChoice, TurnOptions, TurnResult } from "./turn-types.ts";

/**
 * Runs one turn.
 * @throws CachetError for bad input (before anything is stored or sent);
 *   ProviderError after the provider failed (a partial answer is stored with
 *   its prompt and marked incomplete; a prompt with no answer at all is rolled
 *   back out of the log, its ledger rows kept); ANSWER_INVALID when a
 *   `--schema` answer does not validate (the raw answer is stored).
 */
export async function runTurn(runtime: Runtime, options: TurnOptions): Promise<TurnResult> {
  return inSession(runtime, options, () => chooseSession(runtime, options), (loaded) => resolveInput(runtime, options, loaded), async (opened, input) => {
    // The stages see the generation settings as sent: the flags over the session's (sticky-generation.ts).
    // A session created for this turn (new or forked) is named on stdout once it is kept (OpenedSession.kept).
    const held = opened.created ? sessionLineOnceKept(options.sink) : undefined;
    const turn: TurnOptions = { ...options, generation: input.generation.settings, ...(held ? { sink: held.sink } : {}) };
    const session: OpenedSession = held ? { ...opened, kept: async () => { held.release(); await opened.kept?.(); } } : opened;
    // Between the stages a signal stops the turn before anything is sent (src/run/interrupt.ts).
    await checkpoint(options.signal);
    const context = await assembleContext(runtime, turn, session, input);
    await checkpoint(options.signal);
    // Rendered and marked once: the compaction check estimates (and hashes) this very request, which goes out
    // unless it compacts or a request:before hook changes it.
    const marked = markRequest(runtime.host, renderRequest(input, context.context), context.context);
    let assembled = await compactIfDue(runtime, turn, input, session, context, marked);
    await checkpoint(options.signal);
    const remarked = assembled.context === context.context ? marked : markRequest(runtime.host, renderRequest(input, assembled.context), assembled.context);
    let wire = await finishRequest(runtime.host, remarked, assembled.context, input.resolved.spec.cacheRules?.(input.ref.model));
    const recover = !assembled.compaction && turn.compact !== false && runtime.config.compaction?.enabled !== false;
    let sent: SendOutcome;
    try {
      sent = await sendRequest(runtime, turn, input, assembled.sessionId, assembled.prefixVersion.version, assembled.context, wire, assembled.pending, session.kept);
    } catch (error) {
      // The local window check refused it before anything was sent or stored: one recovery compaction, one retry.
      if (!recover || !tooLong(error)) throw error;
      assembled = await compactNow(runtime, turn, input, session, assembled, "too long");
      if (!assembled.compaction) throw error;
      wire = await applyCacheStrategies(runtime.host, renderRequest(input, assembled.context), assembled.context, input.resolved.spec.cacheRules?.(input.ref.model));
      sent = await sendRequest(runtime, turn, input, assembled.sessionId, assembled.prefixVersion.version, assembled.context, wire, assembled.pending, session.kept);
    }
    if (recover && !assembled.compaction && tooLong(sent.failure)) {
      // The provider refused it: one recovery compaction and one retry; the refused attempt stays in the ledger.
      await recordCall(runtime, { ...turn, sink: QUIET_SINK }, input, session, assembled, wire, sent);
      assembled = await compactNow(runtime, turn, input, session, assembled, "too long");
      if (assembled.compaction) {
        wire = await applyCacheStrategies(runtime.host, renderRequest(input, assembled.context), assembled.context, input.resolved.spec.cacheRules?.(input.ref.model));
        sent = await sendRequest(runtime, turn, input, assembled.sessionId, assembled.prefixVersion.version, assembled.context, wire, assembled.pending, session.kept);
      }
    }
    const recorded = await recordCall(runtime, turn, input, session, assembled, wire, sent);
    return finishTurn(runtime, turn, assembled, sent, recorded);
  }).catch(async (error: unknown) => {
    // A refused -m gets its "did you mean" here, off the turn's normal path (the catalog is read only now).
    if (options.model === undefined || !isCachetError(error) || (error.code !== "BAD_FLAG" && error.code !== "UNKNOWN_PROVIDER")) throw error;
    const { withModelHint } = await import("./model-hint.ts");
    throw await withModelHint(error, options.model, runtime.host, runtime.env);
  });
}

/**
 * A sink for a turn in a session created for it (a new session or a fork): the `session` line is held until
 * `release` (the session is kept: OpenedSession.kept) or the next line, which comes only once something is
 * stored (an answer, usage, or the turn's own error). A turn refused before that (too long for the window,
 * over a budget, a hook that throws) leaves no session, so it names none.
 */
function sessionLineOnceKept(sink: OutputSink): { sink: OutputSink; release: () => void } {
  let held: JsonEvent | undefined;
  const release = () => {
    if (held) sink.event(held);
    held = undefined;
  };
  return {
    release,
    sink: {
      text(delta) {
        release();
        sink.text(delta);
      },
      event(event) {
        if (event.type === "session") held = event;
        else {
          release();
          sink.event(event);
        }
      },
      end: () => sink.end(),
    },
  };
}
