/**
 * Server-side compaction in the Anthropic render: the log is sent from its
 * last message holding a compaction block on, that block first. The render
 * keeps each conversation's last scan and looks only at messages it has not
 * seen, so these tests grow, fork, edit and stream logs and compare every
 * render with the log cut by a plain backward search.
 */
import { describe, expect, test } from "bun:test";
import type { Block, Message, RequestContext } from "../../src/plugin/index.ts";
import { pluginServices } from "../../src/plugin/services.ts";
import { buildPrefix } from "../../src/context/prefix.ts";
import { renderAnthropic } from "./render.ts";

const prefix = buildPrefix({ system: ["You are terse."], tools: [] });

function context(messages: Message[], summary: Message[] = []): RequestContext {
  return { model: "claude-sonnet-4-6", provider: "anthropic", prefix, summary, messages, generation: { stream: false, providerOptions: {} }, cache: { mode: "auto", ttl: "5m" } };
}

const text = (t: string): Block => ({ type: "text", text: t });
const compaction = (summary: string): Block => ({ type: "provider", protocol: "anthropic-messages", data: { type: "compaction", content: summary } });

/** What the API reads of a log: from the last compaction block with a summary on (shared/compaction.md; a plain search, the oracle). */
function expected(all: Message[]): Message[] {
  for (let i = all.length - 1; i >= 0; i--) {
    const at = all[i]!.content.findLastIndex((b) => b.type === "provider" && b.data.type === "compaction" && typeof b.data.content === "string");
    if (at >= 0) return [{ ...all[i]!, content: all[i]!.content.slice(at) }, ...all.slice(i + 1)];
  }
  return all;
}

function sentMessages(messages: Message[], summary: Message[] = []): unknown {
  return renderAnthropic(context(messages, summary), pluginServices).body.messages;
}

function oracle(messages: Message[], summary: Message[] = []): unknown {
  // The expected log starts at its only compaction block (or holds none), so rendering it sends it as it is.
  return renderAnthropic(context(expected([...summary, ...messages])), pluginServices).body.messages;
}

describe("anthropic render: server-side compaction", () => {
  test("a growing log is sent from its latest compaction block on, whichever message holds it", () => {
    const log: Message[] = [];
    let n = 0;
    for (let turn = 0; turn < 30; turn++) {
      log.push({ id: `u${n++}`, role: "user", content: [text(`question ${turn}`)] });
      // Every seventh answer starts with a compaction block; one in eleven has it after its text.
      const content = turn % 7 === 3 ? [compaction(`summary ${turn}`), text("answer")] : turn % 11 === 5 ? [text("answer"), compaction(`late ${turn}`)] : [text("answer")];
      log.push({ id: `a${n++}`, role: "assistant", content });
      const messages = log.slice();
      expect(sentMessages(messages)).toEqual(oracle(messages));
    }
    expect((sentMessages(log) as { content: { type: string }[] }[])[0]!.content[0]!.type).toBe("compaction");
  });

  test("forks, edits, a streaming answer and a summary zone: each render as the plain search cuts it", () => {
    const base: Message[] = [
      { id: "u1", role: "user", content: [text("one")] },
      { id: "a1", role: "assistant", content: [text("two")] },
      { id: "u2", role: "user", content: [text("three")] },
      { id: "a2", role: "assistant", content: [compaction("first summary"), text("four")] },
      { id: "u3", role: "user", content: [text("five")] },
    ];
    const renders: [Message[], Message[]][] = [];
    renders.push([base, []]);
    // A fork before the compaction: its log holds none.
    renders.push([base.slice(0, 3), []]);
    renders.push([[...base.slice(0, 3), { id: "a9", role: "assistant", content: [text("other")] }], []]);
    // Back on the main branch, then an edited message (a new object) before the compaction block: the block now gone.
    renders.push([base, []]);
    renders.push([[...base.slice(0, 3), { ...base[3]!, content: [text("four, rewritten")] }, base[4]!], []]);
    // A summary zone before the log (cachet's own compaction), with and without a block in the log.
    const zone: Message[] = [{ id: "s1", role: "user", content: [text("so far")] }];
    renders.push([base.slice(0, 3), zone]);
    renders.push([base, zone]);
    for (const [messages, summary] of renders) expect(sentMessages(messages, summary)).toEqual(oracle(messages, summary));
    // An answer still streaming (the same object, its content growing): no block yet, then the block it grew.
    const streaming: Message = { id: "a3", role: "assistant", content: [text("six")], incomplete: true };
    const log = [...base.slice(0, 3), { ...base[3]!, content: [text("four")] }, base[4]!, streaming];
    expect(sentMessages(log)).toEqual(oracle(log));
    streaming.content.push(compaction("second summary"));
    expect(sentMessages(log)).toEqual(oracle(log));
    expect((sentMessages(log) as unknown[]).length).toBe(1);
  });
});
