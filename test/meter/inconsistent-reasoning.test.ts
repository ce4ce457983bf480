/**
 * A provider that reports more reasoning tokens than the output they are part
 * of, through the real turn pipeline against the in-process emulator: the
 * turn says it once on stderr with both figures, the ledger row keeps it as
 * the cost's estimate note (as the other inconsistent counts are kept), and
 * the cost bills the output, reasoning counted as at most it.
 *
 * The provider is a plugin over the openai-chat protocol whose usage mapping
 * is the built-in OpenAI-compatible one (reasoning inside `completion_tokens`,
 * providers.md §1), given the emulator's usage with `reasoning_tokens` set
 * above `completion_tokens`: the inconsistency is the provider's numbers, the
 * reading is cachet's own.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OutputSink } from "../../src/run/output.ts";
import { openRuntime } from "../../src/run/runtime.ts";
import { runTurn } from "../../src/run/turn.ts";

const home = mkdtempSync(join(tmpdir(), "cachet-reasoning-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** The over-reported reasoning: this many tokens more than the completion. */
const EXCESS = 25;

const PLUGIN = `
export default {
  name: "overthink-provider",
  api: 1,
  setup(api) {
    api.provider({
      id: "overthink",
      name: "Overthink",
      protocol: "openai-chat",
      env: ["OVERTHINK_API_KEY"],
      defaultBaseUrl: "https://api.overthink.invalid/v1",
      emulatorPath: "/overthink/v1",
      create(config) {
        const base = api.adapter("openai-compatible", config);
        return {
          render: base.render,
          send: base.send,
          usage(raw) {
            return base.usage({ ...raw, completion_tokens_details: { reasoning_tokens: raw.completion_tokens + ${EXCESS} } });
          },
        };
      },
    });
  },
};
`;

test("reasoning above the output: one stderr warning naming both figures, the ledger's estimate note, the output billed", async () => {
  const plugin = join(home, "overthink.mjs");
  writeFileSync(plugin, PLUGIN);
  // $1 per million input tokens, $4 per million output tokens, $10 per million reasoning tokens.
  writeFileSync(join(home, "config.toml"), `[prices."overthink/deep-1"]\ninput = 1\noutput = 4\nreasoning = 10\n`);
  const runtime = await openRuntime({ emulate: true, env: { ...process.env, CACHET_HOME: home, CACHET_PLUGINS: plugin } });
  const notices: string[] = [];
  const sink: OutputSink = { text() {}, event() {}, end: async () => {} };
  try {
    const result = await runTurn(runtime, {
      prompt: "what is new in the release",
      model: "overthink/deep-1",
      session: { mode: "new" },
      generation: { stream: true, providerOptions: {}, maxTokens: 200 },
      cache: { mode: "auto", ttl: "5m" },
      role: "main",
      idleMs: 30_000,
      retries: 0,
      sink,
      notice: (m) => notices.push(m),
    });
    const [row] = runtime.store.requests(result.sessionId);
    // The ledger keeps the usage as the emulator sent it; the plugin's mapping read it with the reasoning raised.
    const raw = row!.rawUsage as { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
    const completion = raw.completion_tokens;
    expect(completion).toBeGreaterThan(0);
    const warning = `the provider reported ${completion + EXCESS} reasoning tokens but only ${completion} output tokens, which include them: the cost counts reasoning as at most the output (${completion})`;
    expect(notices.filter((n) => n.includes("reasoning"))).toEqual([warning]);
    expect(row!.costEstimate).toBe(warning);
    expect(row!.usage).toMatchObject({ output: completion, reasoning: completion + EXCESS });
    // Every output token is reasoning at $10, none at the $4 output rate.
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 1 + completion * 10) / 1e6;
    expect(Math.abs(row!.costUsd! - expected)).toBeLessThan(1e-12);
  } finally {
    await runtime.close();
  }
}, 120_000);
