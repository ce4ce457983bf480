/**
 * Third-party plugins through the compiled binary: a provider `acme` over the
 * openai-chat protocol with its own usage mapping, shipped as one ESM file in
 * a directory outside the repo and loaded through CACHET_PLUGINS; and a
 * plugin that throws in setup, which is named in an error while the other
 * providers keep working.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType } from "./harness.ts";

afterAll(cleanHomes);

/** What a published plugin looks like after bundling: one ESM file, no imports but node builtins. */
const ACME = `
import { appendFileSync } from "node:fs";
export default {
  name: "acme-provider",
  api: 1,
  setup(api) {
    api.provider({
      id: "acme",
      name: "ACME Inference",
      protocol: "openai-chat",
      env: ["ACME_API_KEY"],
      defaultBaseUrl: "https://api.acme.invalid/v1",
      emulatorPath: "/acme/v1",
      create(config) {
        const base = api.adapter("openai-compatible", config);
        return {
          render: base.render,
          send: base.send,
          // ACME's own mapping: prompt_tokens include cached tokens; no cache writes.
          usage(raw) {
            appendFileSync(process.env.ACME_USAGE_LOG, JSON.stringify(raw) + "\\n");
            const cached = raw.prompt_tokens_details?.cached_tokens ?? 0;
            return {
              raw,
              usage: { input: raw.prompt_tokens - cached, cacheRead: cached, cacheWrite5m: 0, cacheWrite1h: 0, output: raw.completion_tokens, reasoning: undefined },
            };
          },
        };
      },
    });
  },
};
`;

const BROKEN = `export default { name: "broken-plugin", api: 1, setup() { throw new Error("cannot reach license server"); } };`;

describe("third-party plugins", () => {
  test("acme, loaded from a bundled file through CACHET_PLUGINS, answers through its own usage mapping", async () => {
    const dir = freshHome();
    const plugin = join(dir, "acme-plugin.mjs");
    const log = join(dir, "usage.log");
    writeFileSync(plugin, ACME);
    writeFileSync(log, "");
    const r = await cachet(["--emulate", "--json", "-m", "acme/acme-large", "hello acme"], { env: { CACHET_PLUGINS: plugin, ACME_USAGE_LOG: log } });
    // The only diagnostic: the catalog has no price for this model.
    expect(r.stderr).toMatch(/^\S* ?cost unknown: .*acme\/acme-large.*\n$/);
    expect(r.code).toBe(0);
    const list = events(r.stdout);
    expect(ofType(list, "text").length).toBeGreaterThan(0);
    const raw = JSON.parse(readFileSync(log, "utf8").trim()) as { prompt_tokens: number; completion_tokens: number };
    const [usage] = ofType(list, "usage");
    expect(usage).toMatchObject({ input: raw.prompt_tokens, cacheRead: 0, output: raw.completion_tokens, reasoning: null });
    // Unknown to the catalog: unpriced, not free.
    expect(ofType(list, "cost")[0]!.cost_usd).toBeNull();

    const listed = await cachet(["plugins", "--json"], { env: { CACHET_PLUGINS: plugin } });
    const info = JSON.parse(listed.stdout) as { plugins: { name: string; providers: { id: string; protocol: string }[] }[] };
    expect(info.plugins.find((p) => p.name === "acme-provider")?.providers).toEqual([{ id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"] }] as never);
  });

  test("a plugin that throws in setup is named in an error; the other providers still work", async () => {
    const dir = freshHome();
    const plugin = join(dir, "broken.mjs");
    writeFileSync(plugin, BROKEN);
    const r = await cachet(["--emulate", "--json", "-m", "anthropic/claude-sonnet-4-6", "hello"], { env: { CACHET_PLUGINS: plugin } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('plugin "broken-plugin"');
    expect(r.stderr).toContain("cannot reach license server");
    expect(ofType(events(r.stdout), "done")).toHaveLength(1);

    const listed = await cachet(["plugins"], { env: { CACHET_PLUGINS: plugin } });
    expect(listed.code).toBe(1);
    expect(listed.stdout).toContain("FAILED broken-plugin");
  });

  test("a plugin path that does not exist is reported with its path; the run goes on", async () => {
    const r = await cachet(["--emulate", "-q", "--json", "hello"], { env: { CACHET_PLUGINS: "/nonexistent/plugin.mjs" } });
    expect(r.code).toBe(0);
  });
});

describe("session:fork", () => {
  test("is fired once per fork with the parent, the child and whether the fork is exact", async () => {
    const home = freshHome();
    const log = join(home, "forks.log");
    const plugin = join(home, "fork-observer.mjs");
    writeFileSync(plugin, `import { appendFileSync } from "node:fs";
export default { name: "fork-observer", api: "^1", setup(api) {
  api.hook("session:fork", (event) => appendFileSync(${JSON.stringify(log)}, JSON.stringify(event) + "\\n"));
} };`);
    const env = { CACHET_PLUGINS: plugin };
    const first = await cachet(["--emulate", "--json", "hello"], { home, env });
    const parent = ofType(events(first.stdout), "session")[0]!.id as string;
    const forked = await cachet(["--emulate", "--json", "--fork", "another branch"], { home, env });
    expect(forked.code).toBe(0);
    const child = ofType(events(forked.stdout), "session")[0]!;
    expect(child.forked_from).toBe(parent);
    expect(readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l))).toEqual([{ parentId: parent, childId: child.id, exact: true }]);
  }, 30_000);
});
