/**
 * A big stdin through the compiled binary (issue 18): 20 MB piped to an
 * OpenAI-compatible server (the emulator in its own process) under a model the
 * catalog does not know, so it is streamed to the socket rather than refused.
 * The peak-memory figures for 10, 100 and 500 MiB are measured by
 * test/bench/big-stdin.ts, never here.
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";
import { exportSession, startEmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

test("20 MB of stdin with a PROMPT: the emulator receives every byte (multi-byte characters, quotes and control characters included) with its length announced, and the stored turn holds the same text", async () => {
  const line = 'déjà vu: "quoted" \\ back-slashed\ttabbed 😀 ∑ \u0001 — a line of input\n';
  const input = line.repeat(Math.ceil(20_000_000 / Buffer.byteLength(line)));
  const emulator = await startEmulatorProcess(freshHome());
  try {
    const home = freshHome();
    const r = await cachet(["-q", "-m", "openai-compatible/e2e-unlisted-model", "--base-url", `${emulator.url}/openai-compatible/v1`, "say", "hello"], {
      home,
      stdin: new TextEncoder().encode(input),
      timeoutMs: 120_000,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const [request] = await emulator.received();
    const sent = `${input}\nsay hello`;
    const body = request!.body as { messages: { role: string; content: { type: string; text: string }[] }[] };
    const text = body.messages.at(-1)!.content[0]!.text;
    expect(text.length).toBe(sent.length);
    expect(text === sent).toBe(true);
    expect(Number((request!.headers as Record<string, string>)["content-length"])).toBe(Buffer.byteLength(JSON.stringify(body)));
    const { messages, requests } = await exportSession(home);
    const stored = (messages[0] as { content: { text: string }[] }).content[0]!.text;
    expect(stored === sent).toBe(true);
    // A huge input's count is made before it is stored, and the tokenizer let go of before the body streams: the
    // ledger row still has the estimate, within 2% of the emulator's exact count.
    const row = requests[0] as unknown as { chain: { tokens: number }[]; usage: { input: number } };
    expect(row.chain).toHaveLength(1);
    expect(Math.abs(row.chain[0]!.tokens - row.usage.input) / row.usage.input).toBeLessThan(0.02);
  } finally {
    emulator.stop();
  }
}, 180_000);
