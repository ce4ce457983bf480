/**
 * Gemini 3 thought signatures on text answers, through the binary and an
 * emulator process: each answer's text part is signed (streamed: alone on a
 * last part with empty text), cachet stores the signature on the text block
 * and sends it back on that text part in every later request, while the
 * stable prefix stays cached. A model that signs nothing gets nothing back.
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
import { afterAll, expect, test } from "bun:test";
import { cleanHomes, freshHome } from "./harness.ts";
import { LARGE_SYSTEM, against, cacheParts, exportSession, ok, startEmulatorProcess } from "./session-kit.ts";

type Raw = Record<string, any>;
afterAll(cleanHomes);

const QUESTIONS = ["Which rule mentions copper first?", "And which one mentions granite?", "Summarize both in one line."];

for (const [mode, flags] of [
  ["streamed", []],
  ["--no-stream", ["--no-stream"]],
] as const) {
  test(
    `gemini 3, 3 turns (${mode}): every earlier answer's text part carries the signature the emulator issued for it, the export shows it on the text block, and cache reads grow turn on turn`,
    async () => {
      const model = "google/gemini-3-flash-preview";
      const home = freshHome();
      const emulator = await startEmulatorProcess(home);
      try {
        const target = against(emulator, model);
        const answers: string[] = [];
        for (const [turn, question] of QUESTIONS.entries()) {
          const first = turn === 0 ? ["-m", model, "--system", LARGE_SYSTEM] : ["-c"];
          const r = await ok([...first, ...target.args, ...flags, question], { home, env: target.env });
          answers.push(r.stdout.trimEnd());
        }
        const received = await emulator.received();
        expect(received.map((r) => r.status)).toEqual([200, 200, 200]);
        const issued = received.map((r) => r.signatures as string[]);
        for (const list of issued) {
          expect(list).toHaveLength(1);
          expect(list[0]).toStartWith("emu-thought-signature-");
        }
        expect(new Set(issued.map((list) => list[0])).size).toBe(3);

        // Each request sends every earlier answer back as one text part signed with what the emulator issued for it.
        for (const [turn, r] of received.entries()) {
          const answered = (r.body as Raw).contents.filter((c: Raw) => c.role === "model");
          expect(answered.map((c: Raw) => c.parts)).toEqual(answers.slice(0, turn).map((text, k) => [{ text, thoughtSignature: issued[k]![0] }]));
        }

        // The stable prefix stays put and the log only grows, so the cache read grows turn on turn.
        const parts = received.map((r) => cacheParts("gemini", r.body as Raw));
        for (let turn = 1; turn < parts.length; turn++) {
          expect(parts[turn]!.head).toBe(parts[0]!.head);
          expect(parts[turn]!.list.slice(0, parts[turn - 1]!.list.length)).toEqual(parts[turn - 1]!.list);
        }
        const cacheRead = received.map((r) => (r.usage as Raw).cachedContentTokenCount ?? 0);
        expect(cacheRead[0]).toBe(0);
        expect(cacheRead[1]).toBeGreaterThan(2_000);
        expect(cacheRead[2]).toBeGreaterThan(cacheRead[1]);

        // The export shows each signature on the stored text block it came with, and no empty block.
        const { messages } = await exportSession(home);
        const stored = messages.filter((m) => m.role === "assistant").map((m) => m.content);
        expect(stored).toEqual(answers.map((text, k) => [{ type: "text", text, signature: issued[k]![0] }]));
        console.log(`gemini text signatures (${mode}): cache read per turn ${cacheRead.join(", ")}`);
      } finally {
        emulator.stop();
      }
    },
    60_000,
  );
}

test("gemini 2.5 signs no text: the answer is stored without a signature and sent back as a bare text part", async () => {
  const model = "google/gemini-2.5-flash";
  const home = freshHome();
  const emulator = await startEmulatorProcess(home);
  try {
    const target = against(emulator, model);
    const first = await ok(["-m", model, ...target.args, QUESTIONS[0]!], { home, env: target.env });
    await ok(["-c", ...target.args, QUESTIONS[1]!], { home, env: target.env });
    const received = await emulator.received();
    expect(received.map((r) => r.signatures)).toEqual([[], []]);
    const answered = (received[1]!.body as Raw).contents.filter((c: Raw) => c.role === "model");
    expect(answered.map((c: Raw) => c.parts)).toEqual([[{ text: first.stdout.trimEnd() }]]);
    const { messages } = await exportSession(home);
    expect(messages.find((m) => m.role === "assistant")!.content).toEqual([{ type: "text", text: first.stdout.trimEnd() }]);
  } finally {
    emulator.stop();
  }
}, 60_000);
