/**
 * Live smoke tests: one short real request per provider through the compiled
 * binary, asserting streamed text and a priced usage. Each runs only when its
 * provider's key is set in the environment and says so when skipped; CI has
 * no keys and never depends on them.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cachet, cleanHomes, events, ofType } from "./harness.ts";

afterAll(cleanHomes);

const LIVE: { model: string; env: string[] }[] = [
  { model: "anthropic/claude-haiku-4-5", env: ["ANTHROPIC_API_KEY"] },
  { model: "openai/gpt-5-mini", env: ["OPENAI_API_KEY"] },
  { model: "openai-responses/gpt-5-mini", env: ["OPENAI_API_KEY"] },
  { model: "google/gemini-2.5-flash", env: ["GEMINI_API_KEY", "GOOGLE_API_KEY"] },
  { model: "deepseek/deepseek-chat", env: ["DEEPSEEK_API_KEY"] },
  { model: "moonshotai/kimi-k2.6", env: ["MOONSHOT_API_KEY"] },
  { model: "alibaba/qwen-plus", env: ["DASHSCOPE_API_KEY"] },
  { model: "openrouter/openai/gpt-5-mini", env: ["OPENROUTER_API_KEY"] },
  { model: "xai/grok-4", env: ["XAI_API_KEY"] },
];

describe("live providers (only with their API key set)", () => {
  for (const { model, env } of LIVE) {
    const name = env.find((n) => process.env[n]);
    const title = name ? `${model} (live, ${name})` : `${model}: skipped, set ${env.join(" or ")} to run it`;
    test.skipIf(name === undefined)(title, async () => {
      const r = await cachet(["--json", "--max-tokens", "64", "-m", model, "Reply with the single word: pong"], {
        env: { [name!]: process.env[name!]! },
        timeoutMs: 60_000,
      });
      expect(r.code).toBe(0);
      const list = events(r.stdout);
      expect(ofType(list, "text").map((e) => e.delta).join("").length).toBeGreaterThan(0);
      const [usage] = ofType(list, "usage");
      expect(usage!.input as number).toBeGreaterThan(0);
      expect(usage!.output as number).toBeGreaterThan(0);
      const [cost] = ofType(list, "cost");
      // xAI is not in the embedded catalog: its cost is unknown, reported as null with a reason.
      if (model.startsWith("xai/")) expect(cost!.cost_usd).toBeNull();
      else expect(cost!.cost_usd as number).toBeGreaterThan(0);
    }, 90_000);
  }
});
