/**
 * `cachet plugins new NAME`: a ready plugin project in ./NAME — package.json
 * depending on the plugin API package, one adapter file, the plugin entry, a
 * test that runs the contract kit (`cachet plugins test`), a tsconfig and a
 * README. It type-checks, bundles, passes the kit and installs as written.
 * The API package is not on npm: the project gets the packed package this
 * binary was built with, in vendor/, and depends on it as a `file:` tarball,
 * so `npm install` works offline.
 */
import { existsSync, readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { CachetError } from "../errors.ts";
import { API_VERSION } from "./define-plugin.ts";
// build/plugin-api.ts writes it (the bytes of dist/cachet-plugin-api-<version>.tgz); the binary embeds it.
import apiTarball from "./api-package.generated.tgz" with { type: "file" };

/** The npm name of the plugin API package (build/plugin-api.ts builds it). */
const API_PACKAGE = "cachet-plugin-api";

/** Where the project keeps the packed API package, relative to its root. */
const VENDORED_API = `vendor/${API_PACKAGE}-${API_VERSION}.tgz`;

/** What to run in a new project, in order, from its directory; each step works offline. */
export const SCAFFOLD_STEPS = ["npm install", "npm run build", "cachet plugins test dist/index.js"] as const;

/**
 * Writes the project for provider `name` into `dir` (default `./name`).
 * @returns the project directory and the files written (relative paths, vendor/ included).
 * @throws CachetError BAD_FLAG for a name that is not a lowercase id; INPUT_INVALID when the directory exists and is not empty.
 */
export async function scaffoldPlugin(name: string, cwd: string, dir?: string): Promise<{ dir: string; files: string[] }> {
  if (!/^[a-z][a-z0-9-]{0,40}$/.test(name)) {
    throw new CachetError("BAD_FLAG", `plugin name "${name}" is not a lowercase id`, { hint: "use letters, digits and dashes, starting with a letter, e.g. acme" });
  }
  const target = resolve(cwd, dir ?? name);
  if (existsSync(target) && readdirSync(target).length > 0) {
    throw new CachetError("INPUT_INVALID", `${target} exists and is not empty`, { hint: "choose another NAME, or remove the directory" });
  }
  const files = projectFiles(name);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(target, path, ".."), { recursive: true });
    await writeFile(join(target, path), text);
  }
  await mkdir(join(target, "vendor"), { recursive: true });
  // Read, not copied: the embedded file lives in the binary's own file system, which copyFile cannot read.
  await writeFile(join(target, VENDORED_API), await Bun.file(apiTarball).bytes());
  return { dir: target, files: [...Object.keys(files), VENDORED_API] };
}

function projectFiles(name: string): Record<string, string> {
  const major = API_VERSION.split(".")[0];
  const env = `${name.toUpperCase().replaceAll("-", "_")}_API_KEY`;
  const title = name.charAt(0).toUpperCase() + name.slice(1);
  return {
    "package.json": `${JSON.stringify(
      {
        name: `cachet-plugin-${name}`,
        version: "0.1.0",
        description: `cachet provider plugin for ${title}`,
        type: "module",
        main: "dist/index.js",
        // What `cachet plugins add .` and `plugins test .` bundle: the sources, never a dist/ that may be stale.
        source: "src/index.ts",
        files: ["dist"],
        keywords: ["cachet-plugin"],
        scripts: {
          build: "bun build src/index.ts --target=bun --format=esm --outfile=dist/index.js",
          typecheck: "tsc --noEmit",
          test: "bun test",
        },
        devDependencies: { [API_PACKAGE]: `file:${VENDORED_API}` },
      },
      null,
      2,
    )}\n`,
    "tsconfig.json": `${JSON.stringify(
      {
        compilerOptions: {
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "bundler",
          lib: ["ES2022", "DOM"],
          types: [],
          strict: true,
          noEmit: true,
        },
        include: ["src"],
      },
      null,
      2,
    )}\n`,
    "src/index.ts": `/**
 * The ${name} plugin: registers provider \`${name}\` (models \`${name}/...\`).
 */
import { definePlugin } from "${API_PACKAGE}";
import { create${pascal(name)}Adapter, usageExamples } from "./adapter";

export default definePlugin({
  name: "${name}",
  api: "^${major}",
  setup(api) {
    api.provider({
      id: "${name}",
      name: "${title}",
      protocol: "openai-chat",
      env: ["${env}"],
      defaultBaseUrl: "https://api.${name}.example/v1",
      emulatorPath: "/${name}/v1",
      models: ["m1"],
      usageExamples,
      create: (config) => create${pascal(name)}Adapter(api, config),
    });
  },
});
`,
    "src/adapter.ts": `/**
 * ${title}'s adapter. ${title} speaks OpenAI Chat Completions, so rendering and
 * streaming reuse cachet's openai-compatible adapter; the usage mapping is
 * ${title}'s own: \`prompt_tokens\` include the cached tokens, so the uncached
 * input is the difference. A count the response leaves out stays unknown
 * (undefined), never 0 or NaN.
 */
import type { PluginApi, ProviderAdapter, ProviderConfig, UsageExample, UsageReport } from "${API_PACKAGE}";

/** ${title}'s usage object. */
interface ${pascal(name)}Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

/** Maps ${title}'s raw usage to cachet's normalized counts. */
export function ${camel(name)}Usage(raw: unknown): UsageReport {
  const usage = (raw ?? {}) as ${pascal(name)}Usage;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  return {
    raw,
    usage: {
      input: usage.prompt_tokens === undefined ? undefined : usage.prompt_tokens - (cached ?? 0),
      cacheRead: cached,
      output: usage.completion_tokens,
      reasoning: usage.completion_tokens_details?.reasoning_tokens,
    },
  };
}

/** Usage objects as ${title} documents them, and what they map to; \`cachet plugins test\` checks each. */
export const usageExamples: UsageExample[] = [
  {
    source: "https://docs.${name}.example/usage",
    raw: { prompt_tokens: 2006, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 1920 }, completion_tokens_details: { reasoning_tokens: 120 } },
    usage: { input: 86, cacheRead: 1920, output: 300, reasoning: 120 },
  },
  {
    source: "https://docs.${name}.example/usage (no cache details)",
    raw: { prompt_tokens: 12, completion_tokens: 3 },
    usage: { input: 12, output: 3 },
  },
];

/** Creates the adapter for one run. */
export function create${pascal(name)}Adapter(api: PluginApi, config: ProviderConfig): ProviderAdapter {
  const chat = api.adapter("openai-compatible", config);
  return { render: chat.render, send: chat.send, usage: ${camel(name)}Usage };
}
`,
    "test/contract.test.ts": `/**
 * The plugin contract kit, offline against cachet's emulator: rendering,
 * streaming, usage mapping (and the examples in src/adapter.ts), cache
 * markers over a 10-turn session. Needs \`cachet\` on PATH (or CACHET=path).
 */
import { expect, test } from "bun:test";

test("passes cachet's plugin contract kit", () => {
  const build = Bun.spawnSync(["bun", "run", "build"], { stdout: "inherit", stderr: "inherit" });
  expect(build.exitCode).toBe(0);
  const kit = Bun.spawnSync([process.env.CACHET ?? "cachet", "plugins", "test", "dist/index.js"], { stdout: "pipe", stderr: "pipe" });
  const report = kit.stdout.toString() + kit.stderr.toString();
  expect(report).not.toContain("FAIL");
  expect(kit.exitCode).toBe(0);
}, 60_000);
`,
    "README.md": `# cachet-plugin-${name}

A cachet provider plugin for ${title}: models \`${name}/...\`, key in \`${env}\`.

\`\`\`sh
npm install                      # the plugin API package (types and definePlugin) from ${VENDORED_API}, offline
npm run typecheck                # tsc (npm i -D typescript)
npm run build                    # one ESM file: dist/index.js (bun build: Bun on PATH, or npm i -D bun)
cachet plugins test dist/index.js   # the contract kit, offline, against cachet's emulator
cachet plugins add .             # install it, bundled from src/ ("source" in package.json); \`cachet plugins list\` shows it
cachet --emulate -m ${name}/m1 "hi"  # try it without a key
\`\`\`

\`src/adapter.ts\` holds the usage mapping and the documented usage examples the kit checks;
\`src/index.ts\` registers the provider. The plugin declares \`api: "^${major}"\`: it loads in every
cachet that serves plugin API ${major}.x. Publish with \`npm publish\`; users install it with
\`cachet plugins add cachet-plugin-${name}\`.
`,
  };
}

function pascal(name: string): string {
  return name.split("-").map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join("");
}

function camel(name: string): string {
  const p = pascal(name);
  return p.charAt(0).toLowerCase() + p.slice(1);
}
