import { describe, expect, test } from "bun:test";
import type { ChainLink } from "../session/types.ts";
import { affinityKeyOf, SessionFinder } from "./session-finder.ts";

const link = (kind: string, content: string): ChainLink => ({ nodeId: content, kind, content, prefix: content, tokens: 1 });
const chain = (system: string, ...log: string[]) => [link("system", system), ...log.map((c) => link("text", c))];

describe("affinityKeyOf", () => {
  test("metadata.user_id, prompt_cache_key, session_id, else a session-id header", () => {
    const none = new Headers();
    expect(affinityKeyOf("anthropic-messages", { metadata: { user_id: "u1" } }, none)).toEqual({ value: "u1", via: "affinity-key" });
    expect(affinityKeyOf("openai-chat", { prompt_cache_key: "k" }, none)).toEqual({ value: "k", via: "affinity-key" });
    expect(affinityKeyOf("openai-chat", { session_id: "or" }, none)).toEqual({ value: "or", via: "affinity-key" });
    expect(affinityKeyOf("gemini", {}, new Headers({ "x-claude-code-session-id": "h" }))).toEqual({ value: "h", via: "header" });
    expect(affinityKeyOf("gemini", {}, new Headers({ "x-request-id": "r" }))).toBeUndefined();
  });
});

describe("SessionFinder", () => {
  test("a request whose log extends an earlier one joins its session, even with another system prompt", () => {
    const finder = new SessionFinder();
    expect(finder.find(undefined, "anthropic", chain("s1", "a"))).toEqual({ sessionId: undefined, via: "new" });
    finder.remember("S", undefined, "anthropic", chain("s1", "a"));
    expect(finder.find(undefined, "anthropic", chain("s2", "a", "b", "c"))).toEqual({ sessionId: "S", via: "log" });
    // Another conversation (another first message), or the same bytes at another provider, is another session.
    expect(finder.find(undefined, "anthropic", chain("s1", "z", "b")).sessionId).toBeUndefined();
    expect(finder.find(undefined, "openai", chain("s1", "a", "b")).sessionId).toBeUndefined();
  });

  test("the longest shared log wins", () => {
    const finder = new SessionFinder();
    finder.remember("A", undefined, "p", chain("s", "x"));
    finder.remember("B", undefined, "p", chain("s", "x", "y", "z"));
    finder.remember("A", undefined, "p", chain("s", "x", "q"));
    expect(finder.find(undefined, "p", chain("s", "x", "y", "z", "w")).sessionId).toBe("B");
    expect(finder.find(undefined, "p", chain("s", "x", "q", "r")).sessionId).toBe("A");
  });

  test("a known key wins over the log; a new key is a new session", () => {
    const finder = new SessionFinder();
    finder.remember("K", "key-1", "p", chain("s", "a"));
    expect(finder.find({ value: "key-1", via: "affinity-key" }, "p", chain("s", "other"))).toEqual({ sessionId: "K", via: "affinity-key" });
    expect(finder.find({ value: "key-2", via: "header" }, "p", chain("s", "a", "b"))).toEqual({ sessionId: undefined, via: "new" });
  });
});
