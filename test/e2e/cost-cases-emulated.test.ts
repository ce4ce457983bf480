/**
 * Cost cases 34, 37 and 44 (shared/cases/CASES.md) through emulated runs: the
 * compiled binary against its emulator, prices pinned in config as the
 * cases pin them. The right value is computed here from the raw usage the
 * emulator sent, by the case's rule; the run, `cachet price` on that usage
 * and `cachet cost` must all give it to 1e-9.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType, type Event } from "./harness.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

async function emulatedRun(model: string, prices: string, args: string[], script?: unknown): Promise<{ home: string; cost: Event; raw: Raw }> {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), prices);
  const env: Record<string, string> = {};
  if (script) {
    writeFileSync(join(home, "script.json"), JSON.stringify(script));
    env.CACHET_EMULATOR_SCRIPT = join(home, "script.json");
  }
  const run = await cachet(["--emulate", "--json", "-m", model, ...args, "what is new in the release"], { home, env });
  expect(run.stderr).not.toContain("internal error");
  expect(run.code).toBe(0);
  const list = events(run.stdout);
  return { home, cost: ofType(list, "cost")[0]!, raw: ofType(list, "usage")[0]!.raw as Raw };
}

/** `cachet price` on a usage (or response) the run received, and `cachet cost` of the run's session, agree with `expected`. */
async function samePriceEverywhere(home: string, model: string, priced: unknown, expected: number): Promise<void> {
  writeFileSync(join(home, "usage.json"), JSON.stringify(priced));
  const price = await cachet(["price", "-m", model, "--usage", join(home, "usage.json"), "--json"], { home });
  expect(price.code).toBe(0);
  expect(Math.abs(JSON.parse(price.stdout).cost_usd - expected)).toBeLessThan(1e-9);
  const text = await cachet(["price", "-m", model, "--usage", join(home, "usage.json")], { home });
  expect(Math.abs(Number(text.stdout.split("\n").find((l) => l.startsWith("total"))!.split(/\s+/)[1]) - expected)).toBeLessThan(1e-9);
  const cost = await cachet(["cost", "--json"], { home });
  expect(Math.abs(JSON.parse(cost.stdout).requests[0].costUsd - expected)).toBeLessThan(1e-9);
}

describe("cost cases through emulated runs", () => {
  test("34: the flex tier the response says it served halves every token price", async () => {
    const prices = `[prices."openai/gpt-5-mini"]\ninput = 0.25\ncache_read = 0.025\noutput = 2.0\n`;
    const { home, cost, raw } = await emulatedRun("openai/gpt-5-mini", prices, ["-o", "service_tier=flex"]);
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 0.125 + cached * 0.0125 + raw.completion_tokens * 1.0) / 1e6;
    expect(expected).toBeGreaterThan(0);
    expect(Math.abs((cost.cost_usd as number) - expected)).toBeLessThan(1e-9);
    await samePriceEverywhere(home, "openai/gpt-5-mini", { service_tier: "flex", usage: raw }, expected);
  }, 120_000);

  test("37A: xAI reports reasoning outside completion_tokens and total_tokens says so", async () => {
    const prices = `[prices."xai/grok-4"]\ninput = 1.25\ncache_read = 0.2\noutput = 2.5\n`;
    const script = [{ thinking: "The user asks about the release. I should list the changes one by one and keep it short.", text: "Faster start-up and a new cost report." }];
    const { home, cost, raw } = await emulatedRun("xai/grok-4", prices, [], script);
    const reasoning = raw.completion_tokens_details.reasoning_tokens as number;
    expect(reasoning).toBeGreaterThan(0);
    expect(raw.total_tokens).toBe(raw.prompt_tokens + raw.completion_tokens + reasoning);
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 1.25 + cached * 0.2 + (raw.completion_tokens + reasoning) * 2.5) / 1e6;
    expect(Math.abs((cost.cost_usd as number) - expected)).toBeLessThan(1e-9);
    await samePriceEverywhere(home, "xai/grok-4", raw, expected);
  }, 120_000);

  test("37B: OpenAI reports reasoning inside completion_tokens and total_tokens says so", async () => {
    const prices = `[prices."openai/gpt-5"]\ninput = 1.25\ncache_read = 0.2\noutput = 2.5\n`;
    const script = [{ thinking: "The user asks about the release. I should list the changes one by one and keep it short.", text: "Faster start-up and a new cost report." }];
    const { home, cost, raw } = await emulatedRun("openai/gpt-5", prices, [], script);
    expect(raw.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(raw.total_tokens).toBe(raw.prompt_tokens + raw.completion_tokens);
    const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = ((raw.prompt_tokens - cached) * 1.25 + cached * 0.2 + raw.completion_tokens * 2.5) / 1e6;
    expect(Math.abs((cost.cost_usd as number) - expected)).toBeLessThan(1e-9);
    await samePriceEverywhere(home, "openai/gpt-5", raw, expected);
  }, 120_000);

  test("OpenRouter's emulated cost is billed at the model's published prices: it agrees with cachet's computed cost", async () => {
    const { cost, raw } = await emulatedRun("openrouter/anthropic/claude-sonnet-4.5", "", []);
    expect(raw.is_byok).toBe(false);
    expect(typeof cost.provider_cost_usd).toBe("number");
    expect(Math.abs((cost.provider_cost_usd as number) - (cost.cost_usd as number))).toBeLessThan(1e-9);
  }, 120_000);

  test("44: a stream cut after message_start keeps the usage reported so far, priced as a flagged lower bound", async () => {
    const home = freshHome();
    writeFileSync(join(home, "config.toml"), `[prices."anthropic/claude-sonnet-4-6"]\ninput = 3\ncache_read = 0.3\ncache_write = 3.75\noutput = 15\n`);
    const run = await cachet(["--emulate", "--json", "-m", "anthropic/claude-sonnet-4-6", "tell me a long story"], { home, env: { CACHET_EMULATOR_FAULT: "cut" } });
    expect(run.code).not.toBe(0);
    const exported = (await cachet(["export"], { home })).stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const request = exported.find((e) => e.type === "request").request;
    expect(request.status).not.toBe("ok");
    const raw = request.rawUsage as Raw;
    expect(raw.input_tokens).toBeGreaterThan(0);
    const expected = (raw.input_tokens * 3 + (raw.cache_read_input_tokens ?? 0) * 0.3 + (raw.cache_creation_input_tokens ?? 0) * 3.75 + raw.output_tokens * 15) / 1e6;
    expect(Math.abs(request.costUsd - expected)).toBeLessThan(1e-9);
    expect(request.costEstimate).toContain("lower bound");
    const cost = await cachet(["cost"], { home });
    expect(cost.stdout).toContain(`~$${request.costUsd}`);
    writeFileSync(join(home, "usage.json"), JSON.stringify(raw));
    const price = JSON.parse((await cachet(["price", "-m", "anthropic/claude-sonnet-4-6", "--usage", join(home, "usage.json"), "--partial", "--json"], { home })).stdout);
    expect(price).toMatchObject({ lower_bound: true, estimate: true });
    expect(Math.abs(price.cost_usd - expected)).toBeLessThan(1e-9);
  }, 120_000);
});
