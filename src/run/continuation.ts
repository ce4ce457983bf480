/**
 * When a request may be sent in its incremental form (ProviderAdapter.continueFrom:
 * OpenAI Responses `previous_response_id`): it must be the session's previous
 * request, unchanged, then that request's answer, then new input. Only then
 * does the conversation the provider stored equal the start of this request.
 * A fork's first request and the first request after a compaction or a prefix
 * change never qualify (no previous request of the session, or a changed start),
 * and neither does a request after one that carried an overlay (the provider
 * stored the overlay; the whole request no longer has it).
 */
import type { PreviousCall } from "../plugin/provider.ts";
import type { ChainLink, LedgerRow } from "../session/types.ts";
import { sharedPrefixLength } from "../wire/prefix-chain.ts";

/**
 * The previous call this request continues, or undefined.
 * @param previous the session's latest ledger row (null for none)
 * @param chain the request's hash chain (tokens not needed), one link per segment
 * @param ref the request's provider, model and protocol
 */
export function previousCall(previous: LedgerRow | null, chain: readonly ChainLink[], ref: { provider: string; model: string; protocol: string }): PreviousCall | undefined {
  if (!previous || previous.status !== "ok" || previous.providerRequestId === null || previous.messageId === null) return undefined;
  if (previous.provider !== ref.provider || previous.model !== ref.model || previous.protocol !== ref.protocol) return undefined;
  const before = previous.chain;
  if (before.length === 0 || sharedPrefixLength(before, chain) !== before.length) return undefined;
  const answer = previous.messageId;
  let end = before.length;
  while (end < chain.length && (chain[end]!.nodeId === answer || chain[end]!.nodeId.startsWith(`${answer}#`))) end++;
  if (end === before.length || end === chain.length) return undefined;
  return { requestId: previous.providerRequestId, sharedSegments: end };
}
