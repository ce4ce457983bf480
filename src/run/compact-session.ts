/**
 * `cachet compact`: compacts a session now, whatever its size, through the
 * same stage as a turn (src/run/stages/compact.ts) but with no message to
 * send: the kept tail is the newest turns within the tail budget.
 */
import { afterSummary } from "../compaction/plan.ts";
import type { CompactionRecord } from "../session/compactions.ts";
import type { JsonEvent, OutputSink } from "./output.ts";
import type { Runtime } from "./runtime.ts";
import { compactNow } from "./stages/compact.ts";
import { resolveInput } from "./stages/input.ts";
import { chooseSession, inSession } from "./stages/session.ts";
import { stickyCache } from "./sticky-cache.ts";
import type { TurnOptions } from "./turn-types.ts";

/**
 * Compacts the named session (id or name), or the latest. A turn running on
 * it finishes first: the compaction takes the session's turn lease, and
 * `onBusy` is called once before waiting for it.
 * @returns the session, with its compaction and the compaction's `--json` event (the one a turn prints,
 *   src/run/stages/compact.ts compactionEvent), or with `why` there is none: nothing to summarize (the
 *   session is its current turn alone), nothing new since the last compaction, or it would not make the next request smaller
 * @throws CachetError SESSION_NOT_FOUND; SESSION_CONFLICT when the running turn outlasts the wait (180 s); STORE; a summary call's provider errors are notices (the extractive render is used)
 */
export async function compactSession(
  runtime: Runtime,
  ref: string | undefined,
  notice: (message: string) => void,
  onBusy?: TurnOptions["onBusy"],
): Promise<{ sessionId: string; compaction?: CompactionRecord; event?: JsonEvent; why?: string }> {
  let event: JsonEvent | undefined;
  const sink: OutputSink = {
    text() {},
    event(e) {
      if (e.type === "compaction") event = e;
    },
    async end() {},
  };
  const options: TurnOptions = {
    // resolveInput needs something to send; the compaction sends nothing of it.
    prompt: "(compaction)",
    session: ref === undefined ? { mode: "continue", by: "compact" } : { mode: "named", ref, by: "compact" },
    generation: { stream: true, providerOptions: {} },
    cache: {},
    role: "main",
    idleMs: 120_000,
    retries: 0,
    sink,
    notice,
    ...(onBusy ? { onBusy } : {}),
  };
  return inSession(runtime, options, () => chooseSession(runtime, options) ?? runtime.store.findSession(ref ?? ""), (loaded) => resolveInput(runtime, options, loaded), async (opened, input) => {
    const { loaded } = opened;
    const sticky = stickyCache(options.cache, runtime.store.lastRequest(loaded.session.id), runtime.config);
    const context = {
      model: input.ref.model,
      provider: input.ref.provider,
      prefix: loaded.prefix.prefix,
      summary: loaded.summary.messages,
      messages: afterSummary(loaded.messages, loaded.summary.coversThrough),
      generation: input.generation.settings,
      cache: { ...sticky.settings, affinityKey: loaded.session.affinityKey },
    };
    const done = await compactNow(runtime, options, input, opened, { sessionId: loaded.session.id, prefixVersion: loaded.prefix, context, pending: [] }, "on demand", false);
    return { sessionId: loaded.session.id, ...(done.compaction ? { compaction: done.compaction, event } : { why: done.why }) };
  });
}
