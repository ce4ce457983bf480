/**
 * Builds the plugin API package `cachet-plugin-api` from src/plugin/index.ts
 * and packs it with `npm pack`:
 *
 *   dist/plugin-api/                  the package: index.js (ESM runtime), types/ (.d.ts), package.json, README.md
 *   dist/cachet-plugin-api-X.Y.Z.tgz  what `npm publish` would upload
 *   src/plugin/api-package.generated.tgz  the same bytes, embedded in the binary:
 *                                      `cachet plugins new` vendors it into the project
 *
 * The runtime targets any ESM host (node or bun); the declarations need no
 * Bun types, only the ES and DOM libs (fetch, AbortSignal). Its version is
 * the API version the host serves (API_VERSION), so a plugin's `api` range
 * and its dependency range read the same.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { API_VERSION } from "../src/plugin/define-plugin.ts";

const ROOT = join(import.meta.dir, "..");
const ENTRY = join(ROOT, "src", "plugin", "index.ts");

/** The npm name of the plugin API package. */
export const PLUGIN_API_PACKAGE = "cachet-plugin-api";

/** The tarball's copy the binary embeds (gitignored; src/plugin/scaffold.ts imports it). */
export const EMBEDDED_PLUGIN_API = join(ROOT, "src", "plugin", "api-package.generated.tgz");

/** Where the packed tarball lands for a dist directory. */
export function pluginApiTarball(dist: string): string {
  return join(dist, `${PLUGIN_API_PACKAGE}-${API_VERSION}.tgz`);
}

/**
 * Builds and packs the package into `dist`.
 * @returns the tarball's path.
 * @throws Error naming the step that failed (bundle, declarations, pack).
 */
export async function buildPluginApi(dist: string): Promise<string> {
  const dir = join(dist, "plugin-api");
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });

  const bundle = await Bun.build({ entrypoints: [ENTRY], target: "node", format: "esm", outdir: dir, naming: "index.js", throw: false });
  if (!bundle.success) throw new Error(`plugin API bundle failed:\n${bundle.logs.map(String).join("\n")}`);

  await emitDeclarations(join(dir, "types"));
  const license = join(ROOT, "LICENSE");
  if (existsSync(license)) await Bun.write(join(dir, "LICENSE"), Bun.file(license));
  await writeFile(join(dir, "README.md"), README);
  await writeFile(
    join(dir, "package.json"),
    `${JSON.stringify(
      {
        name: PLUGIN_API_PACKAGE,
        version: API_VERSION,
        description: "Types and helpers for writing cachet plugins (provider adapters, cache strategies, hooks).",
        license: "MIT",
        type: "module",
        sideEffects: false,
        exports: { ".": { types: "./types/plugin/index.d.ts", import: "./index.js", default: "./index.js" } },
        types: "./types/plugin/index.d.ts",
        module: "./index.js",
        files: ["index.js", "types", "README.md", "LICENSE"],
        keywords: ["cachet", "cachet-plugin", "llm", "prompt-cache"],
      },
      null,
      2,
    )}\n`,
  );

  const tarball = pluginApiTarball(dist);
  await rm(tarball, { force: true });
  const pack = Bun.spawnSync(["npm", "pack", "--silent", "--pack-destination", dist], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false" } });
  if (pack.exitCode !== 0 || !existsSync(tarball)) throw new Error(`npm pack of ${PLUGIN_API_PACKAGE} failed: ${pack.stderr.toString().trim()}`);
  await Bun.write(EMBEDDED_PLUGIN_API, Bun.file(tarball));
  return tarball;
}

/**
 * Emits the .d.ts tree of index.ts and what it imports with the repo's tsc,
 * then points the relative specifiers at .js files (declarations keep the
 * source's `.ts` extensions, which a consumer's tsc would refuse).
 */
async function emitDeclarations(outDir: string): Promise<void> {
  const tsconfig = join(outDir, "..", ".tsconfig.json");
  await writeFile(
    tsconfig,
    JSON.stringify({
      compilerOptions: {
        target: "ESNext",
        module: "Preserve",
        moduleResolution: "bundler",
        lib: ["ESNext", "DOM"],
        // The host's sources use Bun (e.g. its hash); the emitted declarations must not, which the check below enforces.
        types: ["bun"],
        typeRoots: [join(ROOT, "node_modules", "@types")],
        strict: true,
        declaration: true,
        emitDeclarationOnly: true,
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        resolveJsonModule: true,
        skipLibCheck: true,
        rootDir: join(ROOT, "src"),
        outDir,
      },
      files: [ENTRY],
    }),
  );
  const tsc = Bun.spawnSync([join(ROOT, "node_modules", ".bin", "tsc"), "-p", tsconfig], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  await rm(tsconfig, { force: true });
  if (tsc.exitCode !== 0) throw new Error(`plugin API declarations failed:\n${tsc.stdout.toString()}${tsc.stderr.toString()}`);
  for (const file of await listFiles(outDir)) {
    const text = readFileSync(file, "utf8");
    if (/\bBun\.|from "bun"|types="bun"/.test(text)) throw new Error(`plugin API declarations need Bun types: ${relative(outDir, file)}`);
    await writeFile(file, text.replace(/(from\s+["']\.{1,2}\/[^"']+)\.ts(["'])/g, "$1.js$2").replace(/(import\(["']\.{1,2}\/[^"']+)\.ts(["']\))/g, "$1.js$2"));
  }
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(join(entry.parentPath, entry.name));
  }
  return out;
}

const README = `# cachet-plugin-api

Types and helpers for writing [cachet](https://github.com/) plugins: provider
adapters, cache strategies and lifecycle hooks.

\`\`\`ts
import { definePlugin } from "cachet-plugin-api";

export default definePlugin({
  name: "acme",
  api: "^${API_VERSION.split(".")[0]}",
  setup(api) {
    api.provider({ id: "acme", protocol: "openai-chat", env: ["ACME_API_KEY"], defaultBaseUrl: "https://api.acme.example/v1",
      emulatorPath: "/acme/v1", create: (config) => api.adapter("openai-compatible", config) });
  },
});
\`\`\`

Bundle the plugin into one ESM file (\`bun build src/index.ts --target=bun --format=esm --outfile=dist/index.js\`),
check it with \`cachet plugins test dist/index.js\`, install it with \`cachet plugins add .\`.
\`cachet plugins new NAME\` writes a ready project. The package's version is the plugin API version:
minor versions only add optional fields and hooks.
`;

if (import.meta.main) {
  const dist = join(ROOT, "dist");
  await mkdir(dist, { recursive: true });
  process.stderr.write(`build: ${relative(ROOT, await buildPluginApi(dist))}\n`);
}
