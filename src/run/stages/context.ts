/**
 * Stage "assemble the context": the request context of a turn (stable prefix,
 * summary, log plus the new user message, overlay); what the turn changes in
 * the session (a new prefix version, the model, sticky settings) is stored
 * and announced once its request is cleared to go.
 */
import { afterSummary } from "../../compaction/plan.ts";
import { prefixChange } from "../../context/prefix.ts";
import type { RequestContext } from "../../context/types.ts";
import type { PrefixVersion } from "../../session/types.ts";
import type { Runtime } from "../runtime.ts";
import { stickyCache } from "../sticky-cache.ts";
import { generationChanged } from "../sticky-generation.ts";
import { catalogRefOf } from "../model-resolution.ts";
import { checkGeneration } from "../context-window.ts";
import type { TurnOptions } from "../turn-types.ts";
import type { TurnInput } from "./input.ts";
import type { OpenedSession } from "./session.ts";

/** A turn's assembled context. */
export interface AssembledContext {
  sessionId: string;
  /** The prefix version the request is rendered with. */
  prefixVersion: PrefixVersion;
  context: RequestContext;
  /**
   * Writes of this turn held until its request is cleared to go (the model and settings switch, a compaction made
   * for it): run, and emptied, by sendRequest once the checks that can refuse the turn before sending have passed,
   * so that a turn refused before sending leaves the session as it was. Shared by reference along the stages.
   */
  pending: (() => void)[];
}

/**
 * Assembles the context and emits the `session` event; a changed prefix (a
 * new version), a change of the session's model or generation settings is
 * stored and announced only once the request is cleared to go
 * ({@link AssembledContext.pending}). Cache mode and TTL left
 * open by the options stick to the session's (sticky-cache.ts), and so do the
 * generation settings (sticky-generation.ts). Overlays are the
 * `--overlay` text then what `context:overlay` hooks return, joined by newlines.
 * @throws CachetError PLUGIN_HOOK when a `context:overlay` hook fails; BAD_FLAG (exit 2) for settings the model
 *   refuses (checkGeneration), before anything is stored or printed
 */
export async function assembleContext(runtime: Runtime, options: TurnOptions, opened: OpenedSession, input: TurnInput): Promise<AssembledContext> {
  const { store, host } = runtime;
  const { loaded } = opened;
  const sessionId = loaded.session.id;
  // Settings the model refuses are a usage error: refused before anything is stored, and before the `session` line.
  const generation = await sentGeneration(runtime, input);
  await checkGeneration(runtime.catalogEntry, catalogRefOf(input.resolved.spec, input.ref.model), generation);
  let prefixVersion = loaded.prefix;
  const change = prefixChange(prefixVersion.prefix, input.prefix);
  const pending: (() => void)[] = [];
  if (change) {
    // Under the turn lease nobody else stores a version: the next number is this one's, stored once the request is cleared.
    prefixVersion = { version: prefixVersion.version + 1, prefix: input.prefix, createdAt: Date.now(), reason: change };
    const { version } = prefixVersion;
    pending.push(() => {
      store.setPrefix(sessionId, input.prefix, change);
      options.notice?.(`stable prefix changed (${change}): version ${version}; the provider's cache restarts from here`);
    });
  }
  options.sink.event({
    type: "session",
    id: sessionId,
    name: loaded.session.name,
    model: input.modelRef,
    prefix_version: prefixVersion.version,
    ...(opened.forkedFrom ? { forked_from: opened.forkedFrom } : {}),
    ...(change ? { prefix_change: change } : {}),
  });
  if (loaded.session.model !== input.modelRef) {
    // Only a continued session can differ here (a new session or fork is created with the turn's model); a cache entry belongs to one model.
    pending.push(() => {
      options.notice?.(`model ${loaded.session.model} → ${input.modelRef} for this session from now on; the provider's cache starts over`);
      store.setModel(sessionId, input.modelRef);
    });
  }
  pending.push(() => {
    for (const change of input.generation.changes) options.notice?.(change);
    if (generationChanged(loaded.generation, input.generation.stored)) store.setGeneration(sessionId, input.generation.stored);
  });
  // A session created for this turn has no ledger row yet (nothing is stored before its request is cleared): a fork's cache settings are its parent's.
  const last = opened.created ? null : store.lastRequest(sessionId);
  const sticky = stickyCache(options.cache, last ?? opened.parentLast ?? null, runtime.config);
  // The cache settings stick through the ledger rows the request writes: announced once it is cleared to go.
  pending.push(() => {
    for (const change of sticky.changes) options.notice?.(`${change} for this session from now on`);
  });

  // The summary zone stands for the messages it covers: the log after them follows it (Z2, Z3).
  const messages = afterSummary(loaded.messages, loaded.summary.coversThrough, input.userMessage);
  const context: RequestContext = {
    model: input.ref.model,
    provider: input.ref.provider,
    prefix: prefixVersion.prefix,
    summary: loaded.summary.messages,
    messages,
    generation,
    cache: { ...sticky.settings, affinityKey: loaded.session.affinityKey },
  };
  const overlays = [...(options.overlay ? [options.overlay] : []), ...(await host.callCollect("context:overlay", context))];
  if (overlays.length) context.overlay = overlays.join("\n");
  return { sessionId, prefixVersion, context, pending };
}

/**
 * The generation settings as sent: without `--max-tokens`, a provider's
 * default (ProviderSpec.defaultMaxTokens: Anthropic's 8,192) above the
 * model's output limit (claude-3-haiku: 4,096) is sent as that limit, which
 * the API refuses otherwise ("max_tokens: 8192 > 4096"). Not stored: the
 * session keeps what the user set.
 * @see https://docs.claude.com/en/docs/about-claude/models/overview (each model's max output)
 */
async function sentGeneration(runtime: Runtime, input: TurnInput): Promise<RequestContext["generation"]> {
  const settings = input.generation.settings;
  const fallback = input.resolved.spec.defaultMaxTokens;
  if (settings.maxTokens !== undefined || fallback === undefined) return settings;
  const { output } = await runtime.modelLimits(catalogRefOf(input.resolved.spec, input.ref.model));
  return output !== undefined && output < fallback ? { ...settings, maxTokens: output } : settings;
}
