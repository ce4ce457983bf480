/**
 * The conversation invariants checked incrementally (src/context/invariants.ts
 * with src/list-memo.ts) give the very verdicts of a check of the whole log:
 * over random logs that grow, are edited anywhere (a new object, which may
 * leave a tool call unanswered or a result without its call), fork and carry
 * incomplete answers, checkToolPairing throws exactly when some message
 * breaks the pairing, and wireMessages equals the wire forms worked out afresh.
 */
import { describe, expect, test } from "bun:test";
import { checkToolPairing, isBlankText, wireMessages } from "./invariants.ts";
import type { Block, Message } from "./types.ts";
import { prng } from "../../test/prng.ts";

/** The first message that breaks the pairing, checked pair by pair over the whole log, or undefined. */
function firstBreak(messages: readonly Message[]): number | undefined {
  for (let i = 0; i < messages.length; i++) {
    const previous = messages[i - 1];
    const called = new Set(previous?.role === "assistant" ? previous.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : []);
    const answered = new Set(messages[i]!.content.flatMap((b) => (b.type === "tool_result" ? [b.toolUseId] : [])));
    if (called.size !== answered.size || [...called].some((id) => !answered.has(id))) return i;
  }
  return undefined;
}

/** The wire form of each message worked out afresh (blank text left out, a message left empty dropped). */
function freshWire(messages: readonly Message[]): Message[] {
  return messages.flatMap((m) => {
    if (!m.content.some(isBlankText)) return [m];
    const content = m.content.filter((b) => !isBlankText(b));
    return content.some((b) => b.type !== "thinking") ? [{ ...m, content }] : [];
  });
}

/** Random logs of one conversation, each the next request's. */
function* logs(seed: number, steps: number): Generator<Message[]> {
  const random = prng(seed);
  let n = 0;
  const id = (p: string) => `${p}${seed}-${n++}`;
  const text = (): Block => ({ type: "text", text: random() < 0.15 ? " " : `word ${n}` });
  const first: Message = { id: id("u"), role: "user", content: [text()] };
  let log: Message[] = [first];
  const branches: Message[][] = [];
  for (let step = 0; step < steps; step++) {
    const r = random();
    const last = log.at(-1)!;
    if (r < 0.55) {
      if (last.role === "user") {
        const calls: Block[] = random() < 0.4 ? [{ type: "tool_use", id: id("call"), name: "read", arguments: "{}" }] : [];
        log = [...log, { id: id("a"), role: "assistant", content: [text(), ...calls], ...(random() < 0.1 ? { incomplete: true } : {}) }];
      } else {
        const calls = last.content.filter((b) => b.type === "tool_use");
        const results: Block[] = calls.map((c) => ({ type: "tool_result", toolUseId: (c as { id: string }).id, content: "ok" }));
        log = [...log, { id: id("u"), role: "user", content: [...results, text()] }];
      }
    } else if (r < 0.75 && log.length > 1) {
      // An edit anywhere but the first message: a new object that may break the pairing (a call added or dropped).
      const at = 1 + Math.floor(random() * (log.length - 1));
      const old = log[at]!;
      const content: Block[] =
        old.role === "assistant"
          ? random() < 0.5
            ? [...old.content, { type: "tool_use", id: id("call"), name: "read", arguments: "{}" }]
            : old.content.filter((b) => b.type !== "tool_use")
          : random() < 0.5
            ? old.content.filter((b) => b.type !== "tool_result")
            : [...old.content, text()];
      log = [...log.slice(0, at), { ...old, content }, ...log.slice(at + 1)];
    } else if (r < 0.9) {
      branches.push(log);
      log = random() < 0.5 && branches.length > 1 ? branches[Math.floor(random() * branches.length)]! : log.slice(0, 1 + Math.floor(random() * log.length));
    }
    yield log;
  }
}

describe("conversation invariants, checked incrementally", () => {
  test("checkToolPairing throws exactly when the whole log breaks the pairing, naming the first message that does (200 random conversations)", () => {
    let broken = 0;
    let checked = 0;
    for (let seed = 1; seed <= 200; seed++) {
      for (const log of logs(seed, 60)) {
        const at = firstBreak(log);
        let error: unknown;
        try {
          checkToolPairing(log);
        } catch (e) {
          error = e;
        }
        if (at === undefined) expect({ seed, checked, error }).toEqual({ seed, checked, error: undefined });
        else {
          expect({ seed, checked, message: (error as Error | undefined)?.message.match(/at message (\d+) \((\S+)\)/)?.slice(1) }).toEqual({ seed, checked, message: [String(at), log[at]!.id] });
          broken++;
        }
        checked++;
      }
    }
    // Both verdicts were really met, many times.
    expect(broken).toBeGreaterThan(1000);
    expect(checked - broken).toBeGreaterThan(1000);
  });

  test("wireMessages equals the wire forms worked out afresh, and gives a message the same form object every time", () => {
    let requests = 0;
    for (let seed = 1; seed <= 100; seed++) {
      for (const log of logs(seed, 60)) {
        const wire = wireMessages(log);
        expect(wire).toEqual(freshWire(log));
        const again = wireMessages(log.slice());
        for (let i = 0; i < wire.length; i++) if (!wire[i]!.incomplete) expect(again[i]).toBe(wire[i]!);
        requests++;
      }
    }
    expect(requests).toBe(100 * 60);
  });
});
