/**
 * One model resolution (issue 13): for every built-in provider, the model
 * `run -m` accepts is accepted, and priced the same, by `price`, `cost
 * --tree`, `stats`, `models --provider` and `schema check --provider`
 * (the compiled binary against the in-process emulator).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../../src/config.ts";
import { embeddedCatalog } from "../../src/meter/catalog.ts";
import { catalogIdOf, loadModelHost } from "../../src/run/model-resolution.ts";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";

afterAll(cleanHomes);

const host = await loadModelHost(parseConfig({}, "test"), {});
const catalog = embeddedCatalog();
/** Servers of any model: no catalog lists their prices; the config's `[prices]` does. */
const ANY_SERVER = "openai-compatible";

/** One model per provider that the catalog prices (a chat model the emulator serves). */
function pricedModel(provider: string): string | undefined {
  const models = catalog[catalogIdOf(host.provider(provider))]?.models ?? {};
  const preferred = ["claude-sonnet-4-6", "gpt-5", "gemini-2.5-flash", "deepseek-chat", "kimi-k2.6", "qwen-plus", "anthropic/claude-sonnet-4.5", "grok-4"];
  return preferred.find((m) => models[m]?.cost?.input !== undefined);
}

describe("every built-in provider: run, price, cost, stats, models and schema check accept the same model", () => {
  const providers = [...host.providers.keys()].sort();

  test("the built-in providers are all here, and each but the any-server one has a priced model", () => {
    expect(providers).toEqual(["alibaba", "anthropic", "deepseek", "google", "moonshotai", "openai", "openai-compatible", "openai-responses", "openrouter", "xai"]);
    for (const p of providers) if (p !== ANY_SERVER) expect([p, pricedModel(p)]).toEqual([p, expect.any(String)]);
  });

  for (const provider of providers) {
    test(provider, async () => {
      const home = freshHome();
      const model = provider === ANY_SERVER ? "local-model" : pricedModel(provider)!;
      const ref = `${provider}/${model}`;
      if (provider === ANY_SERVER) writeFileSync(join(home, "config.toml"), `[prices."${ref}"]\ninput = 1\noutput = 2\ncache_read = 0.1\n`);

      const run = await cachet(["--emulate", "--json", "-m", ref, "say hello"], { home });
      expect(run.stderr).not.toContain("internal error");
      expect(run.code).toBe(0);
      const list = events(run.stdout);
      const cost = ofType(list, "cost")[0]!;
      const raw = ofType(list, "usage")[0]!.raw;
      expect(typeof cost.cost_usd).toBe("number");

      const usageFile = join(home, "usage.json");
      writeFileSync(usageFile, JSON.stringify(raw));
      const price = await cachet(["price", "-m", ref, "--usage", usageFile, "--json"], { home });
      expect({ code: price.code, stderr: price.stderr }).toEqual({ code: 0, stderr: "" });
      expect(Math.abs(JSON.parse(price.stdout).cost_usd - (cost.cost_usd as number))).toBeLessThan(1e-9);

      const tree = await cachet(["cost", "--tree", "--json"], { home });
      expect(tree.code).toBe(0);
      const request = JSON.parse(tree.stdout).requests[0];
      expect(request.output.usd).not.toBeNull();
      for (const node of request.tree) expect([node.id, node.usd === null]).toEqual([node.id, false]);

      const stats = await cachet(["stats", "--by", "model", "--json"], { home });
      expect(stats.code).toBe(0);
      const group = JSON.parse(stats.stdout).groups[0];
      expect(group).toMatchObject({ key: ref, unpricedRequests: 0, savingsLeftOut: 0 });

      const schema = await cachet(["schema", "check", '{"type":"object","properties":{"a":{"type":"string"}}}', "--provider", ref], { home });
      expect({ code: schema.code, stderr: schema.stderr }).toEqual({ code: 0, stderr: "" });
      const byProvider = await cachet(["schema", "check", '{"type":"object","properties":{"a":{"type":"string"}}}', "--provider", provider], { home });
      expect(byProvider.code).toBe(0);

      if (provider !== ANY_SERVER) {
        const models = await cachet(["models", "--provider", provider, "--json"], { home });
        expect(models.code).toBe(0);
        expect(models.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l).id)).toContain(ref);
      }
    }, 120_000);
  }
});
