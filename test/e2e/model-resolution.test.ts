/**
 * One model resolution (issue 13): for every built-in provider, the model
 * `run -m` accepts is accepted, and priced the same, by `price`, `cost
 * --tree`, `stats`, `models --provider` and `schema check --provider`
 * (the compiled binary against the in-process emulator). Every provider
 * `cachet plugins` lists has at least one model the catalog prices; for
 * `openai-compatible` (any server) that is a model id naming a catalog
 * model, as LiteLLM and vLLM name served models.
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
/** Servers of any model: the catalog has no list of their own; a model id naming a catalog model is priced as it. */
const ANY_SERVER = "openai-compatible";

/** One model per provider that the catalog prices (a chat model the emulator serves). */
function pricedModel(provider: string): string | undefined {
  const models = catalog[catalogIdOf(host.provider(provider))]?.models ?? {};
  if (provider === ANY_SERVER) return catalog.deepseek?.models["deepseek-chat"]?.cost?.input !== undefined ? "deepseek/deepseek-chat" : undefined;
  const preferred = ["claude-sonnet-4-6", "gpt-5", "gemini-2.5-flash", "deepseek-chat", "kimi-k2.6", "qwen-plus", "anthropic/claude-sonnet-4.5", "grok-4"];
  return preferred.find((m) => models[m]?.cost?.input !== undefined);
}

describe("every built-in provider: run, price, cost, stats, models and schema check accept the same model", () => {
  const providers = [...host.providers.keys()].sort();

  test("every provider `cachet plugins` lists has a model `cachet price` prices from the catalog", async () => {
    const home = freshHome();
    const listed = await cachet(["plugins", "--json"], { home });
    expect(listed.code).toBe(0);
    const ids = (JSON.parse(listed.stdout).plugins as { providers: { id: string }[] }[]).flatMap((p) => p.providers.map((s) => s.id)).sort();
    expect(ids).toEqual(providers);
    expect(ids).toEqual(["alibaba", "anthropic", "deepseek", "google", "moonshotai", "openai", "openai-compatible", "openai-responses", "openrouter", "xai"]);
    const usageFile = join(home, "usage.json");
    writeFileSync(usageFile, JSON.stringify({ prompt_tokens: 1000, completion_tokens: 100, input_tokens: 1000, output_tokens: 100, promptTokenCount: 1000, candidatesTokenCount: 100 }));
    for (const p of ids) {
      const model = pricedModel(p);
      expect([p, model]).toEqual([p, expect.any(String)]);
      const price = await cachet(["price", "-m", `${p}/${model}`, "--usage", usageFile, "--json"], { home });
      expect([p, price.code, price.stderr]).toEqual([p, 0, ""]);
      const out = JSON.parse(price.stdout);
      expect([p, out.estimate ?? false, out.cost_usd > 0]).toEqual([p, false, true]);
    }
    // Any other model of an any-model server is priced from the config, under its own id.
    writeFileSync(join(home, "config.toml"), `[prices."${ANY_SERVER}/local-model"]\ninput = 1\noutput = 2\n`);
    const local = await cachet(["price", "-m", `${ANY_SERVER}/local-model`, "--usage", usageFile, "--json"], { home });
    expect(Math.abs(JSON.parse(local.stdout).cost_usd - (1000 * 1 + 100 * 2) / 1e6)).toBeLessThan(1e-12);
  }, 120_000);

  for (const provider of providers) {
    test(provider, async () => {
      const home = freshHome();
      const model = pricedModel(provider)!;
      const ref = `${provider}/${model}`;

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

      const models = await cachet(["models", "--provider", provider, "--json"], { home });
      if (provider !== ANY_SERVER) {
        expect(models.code).toBe(0);
        expect(models.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l).id)).toContain(ref);
      } else {
        // No list of its own: the refusal says how its models are priced.
        expect(models.code).toBe(2);
        expect(models.stderr).toContain(`${ANY_SERVER}/deepseek/deepseek-chat`);
      }
    }, 120_000);
  }
});
