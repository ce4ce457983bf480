/**
 * Misbehaving third-party plugins through the compiled binary (CASES.md case
 * 49 and its kind): each bad adapter, strategy, hook or plugin file is named
 * in one line (plugin + call), never reported as an internal error, and
 * `cachet cost`, `cachet stats` and `-c` still work afterwards.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { API_VERSION } from "../../src/plugin/define-plugin.ts";
import { cachet, cleanHomes, events, freshHome, ofType, type Run } from "./harness.ts";

afterAll(cleanHomes);

const GOOD_MODEL = "anthropic/claude-sonnet-4-6";

/**
 * A bundled plugin serving provider `acme` over openai-chat by wrapping the
 * openai-compatible adapter; `override` replaces parts of the created adapter
 * and `extra` runs in setup (strategies, hooks).
 */
function acme(override: string, extra = "", head = 'name: "acme", api: "^1",'): string {
  return `export default {
  ${head}
  setup(api) {
    api.provider({
      id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"],
      defaultBaseUrl: "https://api.acme.invalid/v1", emulatorPath: "/acme/v1",
      create(config) {
        const base = api.adapter("openai-compatible", config);
        return { render: base.render, send: base.send, usage: base.usage, ${override} };
      },
    });
    ${extra}
  },
};
`;
}

function pluginFile(home: string, text: string, name = "acme.mjs"): string {
  const path = join(home, name);
  writeFileSync(path, text);
  return path;
}

/** `cachet cost`, `cachet stats` and `-c` (on the given model) all succeed in `home`. */
async function laterCommandsWork(home: string, env: Record<string, string>, model: string): Promise<void> {
  const cost = await cachet(["cost"], { home, env });
  expect({ code: cost.code, stderr: cost.stderr }).toEqual({ code: 0, stderr: "" });
  const stats = await cachet(["stats", "--json"], { home, env });
  expect(stats.code).toBe(0);
  expect(JSON.parse(stats.stdout)).toBeTruthy();
  const again = await cachet(["--emulate", "--json", "-c", "-m", model, "and again"], { home, env });
  expect(again.stderr).not.toMatch(/internal error|this is a bug/i);
  expect(again.code).toBe(0);
  expect(ofType(events(again.stdout), "done")).toHaveLength(1);
}

function firstLine(run: Run): string {
  return run.stderr.split("\n").find((line) => line.trim() !== "")!.replace(/^\S*\s*(error|warn(ing)?)?:?\s*/i, "");
}

describe("case 49, a bad usage mapping: the answer stays, the turn is stored with usage unknown, one warning names the plugin", () => {
  const cases: [string, string, RegExp][] = [
    // Case 49: a mapping written for DeepSeek's field names on a response that lacks them.
    ["returns NaN", "usage: (raw) => ({ raw, usage: { input: raw.prompt_tokens - raw.prompt_cache_hit_tokens, output: raw.completion_tokens } })", /acme: provider acme: usage\(\) returned input NaN/],
    ["returns a string", 'usage: (raw) => ({ raw, usage: { input: String(raw.prompt_tokens), output: raw.completion_tokens } })', /acme: provider acme: usage\(\) returned input "\d+"/],
    ["throws", "usage: (raw) => ({ raw, usage: { input: raw.prompt_tokens - raw.prompt_tokens_details.cache_hits.tokens } })", /acme: provider acme: usage\(\) threw: /],
  ];
  test.each(cases)("usage() %s", async (_, override, warning) => {
    const home = freshHome();
    const env = { CACHET_PLUGINS: pluginFile(home, acme(override)) };
    const r = await cachet(["--emulate", "--json", "-m", "acme/m1", "hi"], { home, env });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(warning);
    expect(r.stderr).toContain("usage unknown for this request");
    expect(r.stderr).not.toMatch(/internal error|this is a bug/i);
    const list = events(r.stdout);
    expect(ofType(list, "text").length).toBeGreaterThan(0);
    expect(ofType(list, "usage")[0]).toMatchObject({ input: null, cacheRead: null, output: null });
    expect(ofType(list, "cost")[0]!.cost_usd).toBeNull();
    const exported = await cachet(["export"], { home, env });
    expect(exported.stdout).toContain('"role":"assistant"');
    await laterCommandsWork(home, env, "acme/m1");
  }, 60_000);
});

describe("a failing call is one line naming the plugin and the call, exit 1, and nothing later breaks", () => {
  const strategy = 'api.cacheStrategy({ id: "acme-keys", protocols: ["openai-chat"], providers: ["acme"], apply() { throw new Error("no key"); } });';
  // request:before sees every provider's requests; this one breaks only acme's.
  const hook = 'api.hook("request:before", (wire, context) => (context.provider === "acme" ? { body: 1 } : undefined));';
  const cases: [string, string, string][] = [
    ["create() returns {}", acme("").replace(/return \{ render: base\.render.*\};/, "return {};"), "acme: provider acme: create() returned missing render, send, usage"],
    ["render() throws", acme('render() { throw new TypeError("context.messages.at is not a function"); }'), "acme: provider acme: render() threw: context.messages.at is not a function"],
    ["send() yields a wrong event", acme('async *send() { yield { type: "text", delta: 7 }; }'), "acme: provider acme: send() yielded a wrong event #0: delta 7 (expected string)"],
    ["a cache strategy throws", acme("", strategy), "acme: cache strategy acme-keys: apply() threw: no key"],
    ["request:before returns junk", acme("", hook), "acme: hook request:before returned missing protocol, headers, segments; body 1 (expected Object)"],
  ];
  test.each(cases)(
    "%s",
    async (_, text, message) => {
      const home = freshHome();
      const env = { CACHET_PLUGINS: pluginFile(home, text) };
      // A good turn first, so the store has something cost and stats must keep reading.
      expect((await cachet(["--emulate", "-q", "-m", GOOD_MODEL, "first"], { home, env })).code).toBe(0);
      const r = await cachet(["--emulate", "-m", "acme/m1", "hi"], { home, env });
      expect(r.code).toBe(1);
      expect(firstLine(r)).toBe(message);
      expect(r.stderr).not.toMatch(/internal error|this is a bug|\$bunfs/i);
      await laterCommandsWork(home, env, GOOD_MODEL);
    },
    60_000,
  );
});

describe("load-time refusals: one line each, the other plugins still load", () => {
  const cases: [string, (home: string) => string, RegExp][] = [
    ["an unknown protocol", (home) => pluginFile(home, acme("").replace('protocol: "openai-chat"', 'protocol: "grpc"')), /plugin "acme" \(.*acme\.mjs\) failed to load: provider "acme" has protocol "grpc" \(expected/],
    ["missing fields", (home) => pluginFile(home, acme("").replace('defaultBaseUrl: "https://api.acme.invalid/v1", emulatorPath: "/acme/v1",', "")), /plugin "acme" \(.*\) failed to load: provider "acme" has missing defaultBaseUrl, emulatorPath$/m],
    ["an API range this cachet does not serve", (home) => pluginFile(home, acme("", "", 'name: "acme", api: "^2",')), new RegExp(`plugin "acme" \\(.*\\) failed to load: it needs plugin API \\^2, this cachet serves ${API_VERSION.replaceAll(".", "\\.")}$`, "m")],
    ["a missing file", () => "/nonexistent/acme.mjs", /^\S* ?plugin file \/nonexistent\/acme\.mjs does not exist$/m],
    ["a bare import", (home) => pluginFile(home, `import { definePlugin } from "cachet-plugin-api";\n${acme("").replace("export default {", "export default definePlugin({").replace(/};\n$/, "});\n")}`), /imports "cachet-plugin-api", which cachet cannot resolve at run time; hint: bundle it into one ESM file/],
  ];
  test.each(cases)(
    "%s",
    async (_, make, message) => {
      const home = freshHome();
      const env = { CACHET_PLUGINS: make(home) };
      const r = await cachet(["--emulate", "--json", "-m", GOOD_MODEL, "hi"], { home, env });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).not.toContain("$bunfs");
      expect(ofType(events(r.stdout), "done")).toHaveLength(1);
      const listed = await cachet(["plugins", "list"], { home, env });
      expect(listed.code).toBe(1);
      expect(listed.stdout).toContain("anthropic");
    },
    60_000,
  );
});
