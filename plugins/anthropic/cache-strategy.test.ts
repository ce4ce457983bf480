import { describe, expect, test } from "bun:test";
import type { Message, RequestContext, WireRequest, WireSegment } from "../../src/plugin/index.ts";
import { pluginServices } from "../../src/plugin/services.ts";
import { countBreakpoints, findCacheMarks } from "../shared/breakpoints.ts";
import { LookbackCache, flattenBlocks } from "../shared/lookback-model.ts";
import { ANTHROPIC_CACHE_ORDER, applyAnthropicBreakpoints, strategies } from "./cache-strategy.ts";
import { renderAnthropic } from "./render.ts";

type Json = Record<string, unknown>;

function context(cache: Partial<RequestContext["cache"]> = {}, model = "claude-sonnet-4-5"): RequestContext {
  return {
    model,
    provider: "anthropic",
    prefix: { system: [], tools: [], fingerprint: "0000000000000000" },
    summary: [],
    messages: [],
    generation: { stream: true, providerOptions: {} },
    cache: { mode: "auto", ttl: "5m", affinityKey: "session-1", ...cache },
  };
}

const TOOLS: Json[] = ["bash", "read", "write"].map((name) => ({ name, description: `tool ${name}`, input_schema: { type: "object" } }));
const SYSTEM: Json[] = [
  { type: "text", text: "You are a careful assistant." },
  { type: "text", text: "Answer briefly." },
];

/** A wire request of the documented Anthropic shape; the overlay (if any) is the last block of the final user message. */
function wire(messages: Json[], overlay?: string, extra: Json = {}): WireRequest {
  const body: Json = { model: "claude-sonnet-4-5", max_tokens: 1024, tools: structuredClone(TOOLS), system: structuredClone(SYSTEM), messages: structuredClone(messages), stream: true, ...extra };
  const segments: WireSegment[] = [];
  if (overlay !== undefined) {
    const list = body.messages as Json[];
    const last = list[list.length - 1]!;
    const content = last.content as Json[];
    segments.push({ nodeId: "overlay", kind: "overlay", path: ["messages", list.length - 1, "content", content.length] });
    content.push({ type: "text", text: overlay });
  }
  return { protocol: "anthropic-messages", body, headers: {}, segments };
}

const user = (...content: Json[]): Json => ({ role: "user", content });
const assistant = (...content: Json[]): Json => ({ role: "assistant", content });
const text = (t: string): Json => ({ type: "text", text: t });
const toolUse = (id: string): Json => ({ type: "tool_use", id, name: "bash", input: { command: `echo ${id}` } });
const toolResult = (id: string): Json => ({ type: "tool_result", tool_use_id: id, content: `out ${id}` });

function markedPaths(body: Json): string[] {
  return findCacheMarks(body, ANTHROPIC_CACHE_ORDER).map((m) => `${m.path.join(".")}:${m.ttl}`);
}

/** A tool loop: turn t adds an assistant message with k(t) tool calls and a user message with their k(t) results. */
function toolLoop(turns: number, callsPerTurn: (turn: number) => number, overlayOf: (turn: number) => string | undefined): WireRequest[] {
  const log: Json[] = [user(text("Fix the failing test."))];
  const out: WireRequest[] = [wire(log, overlayOf(1))];
  for (let turn = 2; turn <= turns; turn++) {
    const k = callsPerTurn(turn);
    const ids = Array.from({ length: k }, (_, i) => `t${turn}c${i}`);
    log.push(assistant({ type: "thinking", thinking: `plan ${turn}`, signature: `sig${turn}` }, text(`step ${turn}`), ...ids.map(toolUse)));
    log.push(user(...ids.map(toolResult)));
    out.push(wire(log, overlayOf(turn)));
  }
  return out;
}

/** 1..30 blocks per turn, in a fixed scrambled order that includes the lookback edges 19, 20, 21 and the maximum 30. */
const SCRAMBLED = [0, 30, 1, 19, 20, 21, 7, 25, 2, 14, 30, 9, 18, 3, 28, 11, 5, 22, 30, 1];

describe("anthropic-breakpoints: rolling breakpoint never strands the previous entry", () => {
  const cases: [string, (t: number) => number][] = [
    ["1 to 30 blocks per turn", (t) => SCRAMBLED[t - 1]!],
    ["30 blocks every turn", () => 15],
    ["1 block every turn", () => 1],
  ];
  for (const [name, k] of cases) {
    test(`20-turn tool loop, ${name}: every request reads the previous request's tail entry`, () => {
      const cache = new LookbackCache();
      const requests = toolLoop(20, k, (t) => `Today is day ${t}.`);
      let previousTail = -1;
      let previousMarked: string[] = [];
      for (const [i, request] of requests.entries()) {
        const sent = applyAnthropicBreakpoints(request, context());
        const result = cache.send(sent.body, ANTHROPIC_CACHE_ORDER);
        expect(result.breakpoints.length).toBeLessThanOrEqual(4);
        // The overlay is the last block and never carries a mark.
        expect(result.breakpoints).not.toContain(result.blocks.length - 1);
        if (i > 0) {
          expect(result.read).toBe(previousTail);
          // Case 17: the previous request's tail mark stays on the same block.
          const marked = markedPaths(sent.body);
          expect(marked).toContain(previousMarked.at(-1)!);
        }
        previousTail = result.breakpoints.at(-1)!;
        expect(previousTail).toBe(result.blocks.length - 2);
        previousMarked = markedPaths(sent.body);
      }
    });
  }

  test("with the adapter's own renderer: 20 turns of 1 to 30 blocks read the previous tail every turn", () => {
    const cache = new LookbackCache();
    const log: Message[] = [{ id: "m0", role: "user", content: [{ type: "text", text: "Fix the failing test." }] }];
    let previousTail = -1;
    for (let turn = 1; turn <= 20; turn++) {
      if (turn > 1) {
        const ids = Array.from({ length: SCRAMBLED[turn - 1]! }, (_, i) => `t${turn}c${i}`);
        log.push({ id: `a${turn}`, role: "assistant", content: [{ type: "thinking", text: "plan", signature: "sig" }, ...ids.map((id) => ({ type: "tool_use" as const, id, name: "bash", arguments: `{"cmd":"${id}"}` }))] });
        log.push({ id: `u${turn}`, role: "user", content: ids.map((id) => ({ type: "tool_result" as const, toolUseId: id, content: `out ${id}` })) });
      }
      const ctx: RequestContext = {
        ...context(),
        prefix: { system: [{ id: "s0", text: "You are careful." }], tools: [{ name: "bash", parameters: { type: "object" } }], fingerprint: "0000000000000000" },
        messages: structuredClone(log),
        overlay: `Today is day ${turn}.`,
      };
      const result = cache.send(applyAnthropicBreakpoints(renderAnthropic(ctx, pluginServices), ctx).body, ANTHROPIC_CACHE_ORDER);
      expect(result.breakpoints.length).toBeLessThanOrEqual(4);
      expect(result.breakpoints).not.toContain(result.blocks.length - 1);
      if (turn > 1) expect(result.read).toBe(previousTail);
      previousTail = result.breakpoints.at(-1)!;
    }
  });

  test("control: marking only the tail strands the previous entry when a turn adds 20 or more blocks", () => {
    const cache = new LookbackCache();
    const requests = toolLoop(3, () => 15, () => undefined);
    const reads = requests.map((request) => {
      const body = structuredClone(request.body);
      const messages = body.messages as Json[];
      const content = messages.at(-1)!.content as Json[];
      content.at(-1)!.cache_control = { type: "ephemeral" };
      return cache.send(body, ANTHROPIC_CACHE_ORDER).read;
    });
    expect(reads).toEqual([-1, -1, -1]);
  });
});

describe("anthropic-breakpoints: placement", () => {
  const log = [user(text("hi")), assistant(toolUse("a"), toolUse("b"), toolUse("c")), user(toolResult("a"), toolResult("b"), toolResult("c")), assistant(text("done")), user(text("next"))];

  test("case 15: a multi-result message gets one mark on its last block, 4 marks in all", () => {
    const sent = applyAnthropicBreakpoints(wire(log, "overlay text"), context());
    expect(markedPaths(sent.body)).toEqual(["tools.2:5m", "system.1:5m", "messages.2.content.2:5m", "messages.4.content.0:5m"]);
    expect(countBreakpoints(sent.body, ANTHROPIC_CACHE_ORDER)).toBe(4);
    const messages = sent.body.messages as Json[];
    expect((messages[2]!.content as Json[]).map((b) => b.cache_control)).toEqual([undefined, undefined, { type: "ephemeral" }]);
    expect((messages[4]!.content as Json[])[1]).toEqual({ type: "text", text: "overlay text" });
  });

  test("case 15: five block-level marks (system + 3 results + last turn) are refused before sending", () => {
    const marked = structuredClone(log);
    for (const block of marked[2]!.content as Json[]) block.cache_control = { type: "ephemeral" };
    (marked[4]!.content as Json[])[0]!.cache_control = { type: "ephemeral" };
    const request = wire(marked);
    (request.body.system as Json[])[1]!.cache_control = { type: "ephemeral" };
    expect(() => applyAnthropicBreakpoints(request, context())).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining("5 cache_control marks") }));
  });

  test("a mark on a message object (not a block) is refused", () => {
    const marked = structuredClone(log);
    marked[2]!.cache_control = { type: "ephemeral" };
    expect(() => applyAnthropicBreakpoints(wire(marked), context())).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining("messages[2]") }));
  });

  test("a mark on a message object is refused when the other messages are the very objects of the previous request", () => {
    const first = wire(log);
    const messages = first.body.messages as Json[];
    expect(() => applyAnthropicBreakpoints(first, context())).not.toThrow();
    const replaced = { ...messages[2]!, cache_control: { type: "ephemeral" } };
    const edited: WireRequest = { ...first, body: { ...first.body, messages: [...messages.slice(0, 2), replaced, ...messages.slice(3)] } };
    expect(() => applyAnthropicBreakpoints(edited, context())).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining("messages[2]") }));
    const appended: WireRequest = { ...first, body: { ...first.body, messages: [...messages, assistant(text("ok")), { ...user(text("next")), cache_control: { type: "ephemeral" } }] } };
    expect(() => applyAnthropicBreakpoints(appended, context())).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining(`messages[${messages.length + 1}]`) }));
    expect(() => applyAnthropicBreakpoints(first, context())).not.toThrow();
  });

  test("two conversations in turn: each one's new marks are found, whatever the other's last request held", () => {
    const a = wire(log);
    const b = wire([user(text("another session")), assistant(text("hi")), user(text("more"))]);
    const messagesA = a.body.messages as Json[];
    for (const request of [a, b, a, b]) expect(() => applyAnthropicBreakpoints(request, context())).not.toThrow();
    // A's next request: its old messages as they were, and a new one whose block carries a manual 1h mark.
    const next: WireRequest = { ...a, body: { ...a.body, messages: [...messagesA, assistant(text("ok")), user({ ...text("go"), cache_control: { type: "ephemeral", ttl: "1h" } })] } };
    expect(() => applyAnthropicBreakpoints(b, context())).not.toThrow();
    expect(markedPaths(applyAnthropicBreakpoints(next, context({ ttl: "1h" })).body)).toContain(`messages.${messagesA.length + 1}.content.0:1h`);
    const itself: WireRequest = { ...a, body: { ...a.body, messages: [...messagesA, { ...assistant(text("ok")), cache_control: { type: "ephemeral" } }] } };
    expect(() => applyAnthropicBreakpoints(b, context())).not.toThrow();
    expect(() => applyAnthropicBreakpoints(itself, context())).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining(`messages[${messagesA.length}]`) }));
  });

  test("manual marks are kept and count; automatic ones are dropped from the lowest priority (tools, then system)", () => {
    const marked = structuredClone(log);
    (marked[0]!.content as Json[])[0]!.cache_control = { type: "ephemeral" };
    (marked[1]!.content as Json[])[0]!.cache_control = { type: "ephemeral" };
    const sent = applyAnthropicBreakpoints(wire(marked), context());
    expect(markedPaths(sent.body)).toEqual(["messages.0.content.0:5m", "messages.1.content.0:5m", "messages.2.content.2:5m", "messages.4.content.0:5m"]);
  });

  test("a manual mark on an automatic position is not doubled", () => {
    const marked = structuredClone(log);
    (marked[4]!.content as Json[])[0]!.cache_control = { type: "ephemeral" };
    const sent = applyAnthropicBreakpoints(wire(marked), context());
    expect(markedPaths(sent.body)).toEqual(["tools.2:5m", "system.1:5m", "messages.2.content.2:5m", "messages.4.content.0:5m"]);
  });

  test("the newest message's last block is marked whatever its type, thinking and empty text skipped", () => {
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
    const sent = applyAnthropicBreakpoints(wire([user(text("look"), image)], "overlay"), context());
    expect(markedPaths(sent.body)).toEqual(["tools.2:5m", "system.1:5m", "messages.0.content.1:5m"]);
    const prefill = applyAnthropicBreakpoints(wire([user(text("q")), assistant(text("a"), { type: "thinking", thinking: "x", signature: "s" }, text(""))]), context());
    expect(markedPaths(prefill.body)).toEqual(["tools.2:5m", "system.1:5m", "messages.0.content.0:5m", "messages.1.content.0:5m"]);
  });

  test("first turn: tools, system and the user block; no previous tail", () => {
    const sent = applyAnthropicBreakpoints(wire([user(text("hello"))], "now"), context());
    expect(markedPaths(sent.body)).toEqual(["tools.2:5m", "system.1:5m", "messages.0.content.0:5m"]);
  });

  test("no tools and a string system: only message marks", () => {
    const request = wire(log);
    delete request.body.tools;
    request.body.system = "plain";
    expect(markedPaths(applyAnthropicBreakpoints(request, context()).body)).toEqual(["messages.2.content.2:5m", "messages.4.content.0:5m"]);
  });
});

describe("anthropic-breakpoints: TTL (case 16)", () => {
  const log = [user(text("q1")), assistant(text("a1")), user(text("q2"))];

  test("--cache-ttl 1h puts 1h on every automatic mark", () => {
    const sent = applyAnthropicBreakpoints(wire(log), context({ ttl: "1h" }));
    expect(markedPaths(sent.body)).toEqual(["tools.2:1h", "system.1:1h", "messages.0.content.0:1h", "messages.2.content.0:1h"]);
    expect((sent.body.tools as Json[])[2]!.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
  });

  test("the reported input (5m on the last tool, 1h on messages[15]) is refused before sending", () => {
    const long = Array.from({ length: 17 }, (_, i) => (i % 2 === 0 ? user(text(`q${i}`), text(`more ${i}`)) : assistant(text(`a${i}`))));
    (long[15]!.content as Json[])[0] = text("a15 part 1");
    (long[15]!.content as Json[])[1] = { ...text("a15 part 2"), cache_control: { type: "ephemeral", ttl: "1h" } };
    const request = wire(long);
    (request.body.tools as Json[])[2]!.cache_control = { type: "ephemeral" };
    expect(() => applyAnthropicBreakpoints(request, context())).toThrow(
      expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining("1h cache_control mark at messages[15].content[1] follows a 5m mark at tools[2]") }),
    );
  });

  test("automatic marks before a manual 1h mark become 1h, so 1h always precedes 5m", () => {
    const sent = applyAnthropicBreakpoints(wire([user({ ...text("document"), cache_control: { type: "ephemeral", ttl: "1h" } }, text("question"))]), context());
    expect(markedPaths(sent.body)).toEqual(["tools.2:1h", "system.1:1h", "messages.0.content.0:1h", "messages.0.content.1:5m"]);
  });

  test("automatic marks after a manual 5m mark stay 5m under --cache-ttl 1h", () => {
    const request = wire([user(text("document"), text("question"))]);
    (request.body.system as Json[])[0]!.cache_control = { type: "ephemeral" };
    const sent = applyAnthropicBreakpoints(request, context({ ttl: "1h" }));
    expect(markedPaths(sent.body)).toEqual(["tools.2:1h", "system.0:5m", "system.1:5m", "messages.0.content.1:5m"]);
  });

  test("1h on a model that is not Claude is refused", () => {
    expect(() => applyAnthropicBreakpoints(wire(log), context({ ttl: "1h" }, "kimi-k2"))).toThrow(expect.objectContaining({ code: "CACHE_CONTRACT", message: expect.stringContaining("kimi-k2") }));
    expect(markedPaths(applyAnthropicBreakpoints(wire(log), context({}, "kimi-k2")).body)).toHaveLength(4);
  });
});

describe("anthropic-breakpoints: contract", () => {
  const log = [user(text("q1")), assistant(text("a1")), user(text("q2"))];

  test("affinity key goes to metadata.user_id; an existing user_id is kept", () => {
    expect(applyAnthropicBreakpoints(wire(log), context()).body.metadata).toEqual({ user_id: "session-1" });
    expect(applyAnthropicBreakpoints(wire(log, undefined, { metadata: { user_id: "me" } }), context()).body.metadata).toEqual({ user_id: "me" });
    expect(applyAnthropicBreakpoints(wire(log), context({ affinityKey: undefined })).body.metadata).toBeUndefined();
  });

  test("--cache off returns the request untouched", () => {
    const request = wire(log, "overlay");
    expect(applyAnthropicBreakpoints(request, context({ mode: "off", ttl: "1h" }))).toBe(request);
  });

  test("pure, deterministic, only adds markers: stripping them gives the input back", () => {
    const request = wire(log, "overlay");
    const before = JSON.stringify(request);
    const a = applyAnthropicBreakpoints(request, context());
    const b = applyAnthropicBreakpoints(request, context());
    expect(JSON.stringify(request)).toBe(before);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const stripped = structuredClone(a.body);
    delete stripped.metadata;
    expect(flattenBlocks(stripped, ANTHROPIC_CACHE_ORDER).blocks).toEqual(flattenBlocks(request.body, ANTHROPIC_CACHE_ORDER).blocks);
    expect(JSON.stringify(stripped, (k, v) => (k === "cache_control" ? undefined : v))).toBe(JSON.stringify(request.body));
  });

  test("registers one strategy for the anthropic-messages protocol", () => {
    expect(strategies.map((s) => [s.id, s.protocols])).toEqual([["anthropic-breakpoints", ["anthropic-messages"]]]);
  });
});
