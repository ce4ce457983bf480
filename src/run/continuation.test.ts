import { describe, expect, test } from "bun:test";
import type { ChainLink, LedgerRow } from "../session/types.ts";
import { chainHash } from "../wire/hash.ts";
import { previousCall } from "./continuation.ts";

/** A chain over node ids whose content is the id itself (same id, same bytes). */
function chain(...ids: string[]): ChainLink[] {
  let prefix: string | undefined;
  return ids.map((nodeId) => {
    prefix = chainHash(prefix, nodeId);
    return { nodeId, kind: nodeId === "overlay" ? "overlay" : "text", content: nodeId, prefix, tokens: 1 };
  });
}

const ref = { provider: "openai-responses", model: "gpt-4.1", protocol: "openai-responses" };
const row = (over: Partial<LedgerRow>): LedgerRow =>
  ({ status: "ok", providerRequestId: "resp_1", messageId: "a1", provider: ref.provider, model: ref.model, protocol: ref.protocol, chain: chain("sys", "u1#0"), ...over }) as LedgerRow;

describe("previousCall: when a request only appends to the session's previous one", () => {
  test("previous request, then its answer, then new input: continues after the answer", () => {
    expect(previousCall(row({}), chain("sys", "u1#0", "a1#0", "a1#1", "u2#0"), ref)).toEqual({ requestId: "resp_1", sharedSegments: 4 });
  });

  test("no continuation: first request, failed or unanswered previous, another model, a changed start, an overlay before, no new input", () => {
    const now = chain("sys", "u1#0", "a1#0", "u2#0");
    expect(previousCall(null, now, ref)).toBeUndefined();
    expect(previousCall(row({ status: "error" }), now, ref)).toBeUndefined();
    expect(previousCall(row({ providerRequestId: null }), now, ref)).toBeUndefined();
    expect(previousCall(row({ messageId: null }), now, ref)).toBeUndefined();
    expect(previousCall(row({ model: "gpt-5" }), now, ref)).toBeUndefined();
    // A compaction or prefix change rewrote the start.
    expect(previousCall(row({}), chain("sys2", "u1#0", "a1#0", "u2#0"), ref)).toBeUndefined();
    // The previous request carried an overlay: the provider stored it, this request does not have it there.
    expect(previousCall(row({ chain: chain("sys", "u1#0", "overlay") }), now, ref)).toBeUndefined();
    // The answer is not what follows (another branch), or nothing follows it.
    expect(previousCall(row({}), chain("sys", "u1#0", "b1#0", "u2#0"), ref)).toBeUndefined();
    expect(previousCall(row({}), chain("sys", "u1#0", "a1#0"), ref)).toBeUndefined();
  });
});
