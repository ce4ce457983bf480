/**
 * Stages "render" and "cache strategies": the provider adapter turns the
 * context into the wire request; the cache strategies of the wire's protocol
 * and provider then place markers on it, and `request:before` hooks see it last.
 */
import { checkToolPairing, wireMessages, wirePrefix } from "../../context/invariants.ts";
import type { RequestContext } from "../../context/types.ts";
import type { PluginHost } from "../../plugin/host.ts";
import type { CacheRules } from "../../plugin/provider.ts";
import type { WireRequest } from "../../plugin/wire.ts";
import { assertMarkerLimit } from "../../wire/marker-limit.ts";
import type { TurnInput } from "./input.ts";

/**
 * The wire request of a context, as the provider's adapter renders it: the
 * one place every request passes before it is sent, so the conversation
 * invariants (src/context/invariants.ts) hold for every adapter: blank text
 * blocks and messages left empty go off the wire (the log keeps them), so do
 * blank system parts (a session stored before `-s " "` was refused), and
 * tool calls and results pair up.
 * @throws CachetError INTERNAL when the log breaks tool-call pairing (nothing is sent);
 *   whatever the adapter's render throws (a plugin's render is guarded by the host)
 */
export function renderRequest(input: TurnInput, context: RequestContext): WireRequest {
  const messages = wireMessages(context.messages);
  checkToolPairing(context.summary.length === 0 ? messages : context.summary.concat(messages));
  return input.resolved.adapter.render({ ...context, prefix: wirePrefix(context.prefix), messages });
}

/**
 * Applies the cache strategies (none with cache mode `off`), then the
 * `request:before` hooks, in plugin order; then checks the provider's marker
 * limit on the result, since a later strategy or a hook may add markers after
 * the strategy that checked it: {@link markRequest} then {@link finishRequest}.
 * @param rules the provider's cache rules for the model (their `maxBreakpoints`)
 * @throws CachetError PLUGIN_HOOK naming the plugin and strategy that failed;
 *   CACHE_CONTRACT when the final request carries more markers than the provider accepts (nothing is sent)
 */
export async function applyCacheStrategies(host: PluginHost, rendered: WireRequest, context: RequestContext, rules?: CacheRules): Promise<WireRequest> {
  return finishRequest(host, markRequest(host, rendered, context), context, rules);
}

/**
 * The cache strategies' markers on a rendered request (none with cache mode
 * `off`: the request as it is). Markers change no content hash or token
 * estimate (src/wire/prefix-chain.ts), so the hash chain of the marked
 * request is also that of the rendered one.
 * @throws CachetError PLUGIN_HOOK naming the plugin and strategy that failed; a CACHE_CONTRACT a strategy threw
 */
export function markRequest(host: PluginHost, rendered: WireRequest, context: RequestContext): WireRequest {
  return context.cache.mode === "off" ? rendered : host.applyStrategies(rendered, context, context.provider);
}

/**
 * The request as sent: the `request:before` hooks' result (the very `marked`
 * when no plugin has one), its markers within the provider's limit.
 * @throws CachetError PLUGIN_HOOK from a hook; CACHE_CONTRACT when the request carries more markers than the provider accepts (nothing is sent)
 */
export async function finishRequest(host: PluginHost, marked: WireRequest, context: RequestContext, rules?: CacheRules): Promise<WireRequest> {
  // Handlers may change the request in place: they get a copy, since its elements are shared with later renders (src/plugin/render-memo.ts).
  const final = host.has("request:before") ? await host.callSequential("request:before", structuredClone(marked), context) : marked;
  assertMarkerLimit(final, rules, context.provider);
  return final;
}
