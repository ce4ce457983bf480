/**
 * The contract kit has teeth: a plugin that breaks a rule fails exactly the
 * check for that rule, with a message saying what broke. (That every
 * built-in provider passes it is in plugins/contract.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinPlugins } from "../../plugins/index.ts";
import { startEmulator } from "../emulator/index.ts";
import { runContract } from "./contract-kit.ts";
import type { PluginApi } from "./define-plugin.ts";
import { PluginHost } from "./host.ts";
import type { ProviderAdapter } from "./provider.ts";
import type { WireRequest } from "./wire.ts";

let emulator: { url: string; stop: () => unknown };
beforeAll(async () => {
  process.env.CACHET_HOME ??= mkdtempSync(join(tmpdir(), "cachet-kit-test-"));
  emulator = await startEmulator({ statePath: null });
});
afterAll(async () => {
  await emulator?.stop();
});

/** Built-ins plus `acme` (openai-chat through openai-compatible), with `change` applied to its adapter and `extra` in setup. */
async function acmeHost(change: (base: ProviderAdapter) => Partial<ProviderAdapter>, extra: (api: PluginApi) => void = () => {}, examples?: unknown): Promise<PluginHost> {
  const host = new PluginHost();
  const compatible = (await builtinPlugins["openai-compatible"]!()) as { default: unknown };
  await host.load(compatible.default, "builtin:openai-compatible");
  await host.load(
    {
      name: "acme",
      api: "^1",
      setup(api: PluginApi) {
        api.provider({
          id: "acme",
          protocol: "openai-chat",
          env: ["ACME_API_KEY"],
          defaultBaseUrl: "https://api.acme.invalid/v1",
          emulatorPath: "/acme/v1",
          models: ["m1"],
          ...(examples ? { usageExamples: examples as never } : {}),
          create(config) {
            const base = api.adapter("openai-compatible", config);
            return { ...base, ...change(base) };
          },
        });
        extra(api);
      },
    },
    "acme.js",
  );
  expect(host.failures).toEqual([]);
  return host;
}

const failed = async (host: PluginHost) => (await runContract(host, "acme", { emulatorUrl: emulator.url })).filter((c) => !c.ok).map((c) => [c.check.split(":")[0], c.detail]);

test("a well-behaved wrapper passes every check", async () => {
  expect(await failed(await acmeHost(() => ({})))).toEqual([]);
});

test("a render that puts a clock in the request fails determinism and the prefix check", async () => {
  let n = 0;
  const host = await acmeHost((base) => ({ render: (c) => ({ ...base.render(c), body: { ...base.render(c).body, user: `t${n++}` } }) }));
  const failures = await failed(host);
  expect(failures[0]).toEqual(["render is deterministic", "the body differs between two renders"]);
});

test("a strategy that marks every message fails the 4-marker limit, and only that check", async () => {
  const everySegment = (w: WireRequest) => {
    const body = structuredClone(w.body) as { messages: { cache_control?: unknown }[] };
    for (const m of body.messages) m.cache_control = { type: "ephemeral" };
    return { ...w, body };
  };
  const host = await acmeHost(() => ({}), (api) => api.cacheStrategy({ id: "mark-all", protocols: ["openai-chat"], providers: ["acme"], apply: everySegment }));
  const failures = await failed(host);
  expect(failures).toHaveLength(1);
  expect(failures[0]![0]).toBe("cache strategies over a 10-turn session");
  expect(failures[0]![1]).toMatch(/^turn 1: \d+ cache markers \(at most 4\)$/);
});

test("a usage mapping that disagrees with a declared example fails the round trip, naming the field", async () => {
  const host = await acmeHost(
    () => ({ usage: (raw) => ({ raw, usage: { input: (raw as { prompt_tokens: number }).prompt_tokens, output: 1 } }) }),
    () => {},
    [{ source: "https://docs.acme.example/usage", raw: { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 60 } }, usage: { input: 40, cacheRead: 60, output: 5 } }],
  );
  expect(await failed(host)).toEqual([["usage() round-trips the provider's documented usage examples", "example #0 (https://docs.acme.example/usage): input is 100, expected 40"]]);
});
