/**
 * Compiles cachet into standalone binaries.
 *
 *   bun build/build.ts          the full matrix (build/targets.ts) into dist/, plus dist/SHA256SUMS,
 *                               dist/install.sh and the npm distribution in dist/npm/ (build/npm-dist.ts):
 *                               everything a release publishes
 *   bun build/build.ts --host   only this machine's binary, as dist/cachet (tests and benchmarks use it)
 *
 * Both also build and `npm pack` the plugin API package (build/plugin-api.ts)
 * into dist/cachet-plugin-api-X.Y.Z.tgz, which the plugin e2e tests install.
 *
 * Every binary this machine can execute is smoke-tested (`--version`, and
 * `help run`, which loads a lazy command chunk) before it takes its final
 * name: a wrong flag combination (e.g. `--bytecode` without `--format=esm`)
 * yields a binary that builds fine and exits 1, and only running it shows
 * that. Exits non-zero on any failure, naming the target.
 */
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { DAEMON_JSC_OPTIONS } from "../src/daemon/self.ts";
import { buildNpmDist } from "./npm-dist.ts";
import { buildPluginApi } from "./plugin-api.ts";
import { runnableHere, TARGETS } from "./targets.ts";
import { generateTokenizerData } from "./tokenizer-data.ts";

const ROOT = join(import.meta.dir, "..");
const DIST = join(ROOT, "dist");
const ENTRY = join(ROOT, "src", "cli", "main.ts");
/** The issue's ceiling for the host binary; the Bun runtime alone is ~100 MB. */
const MAX_HOST_BYTES = 120 * 1000 * 1000;
/** Cross-compiles download a runtime each and bundle on both cores; more in parallel only thrashes. */
const PARALLEL = 3;

const version: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
const hostOnly = process.argv.includes("--host");
const unknown = process.argv.slice(2).filter((a) => a !== "--host");
if (unknown.length > 0) fail(`unknown argument ${unknown[0]}; usage: bun build/build.ts [--host]`);

const started = performance.now();
await mkdir(DIST, { recursive: true });
await generateCatalogIfPresent();
await generateTokenizerData();
try {
  log(`${(await buildPluginApi(DIST)).slice(ROOT.length + 1)}  (plugin API package)`);
} catch (error) {
  fail((error as Error).message);
}

if (hostOnly) {
  const out = join(DIST, "cachet");
  await compile(undefined, out, "host", true);
  const size = (await stat(out)).size;
  checkHostSize(size);
  log(`dist/cachet  ${mb(size)}  (${seconds(performance.now() - started)})`);
} else {
  await removeStaleBinaries();
  const runnable = runnableHere(TARGETS, hostFacts());
  if (runnable.length === 0) fail(`no target of the matrix runs on ${process.platform}-${process.arch}; nothing would be smoke-tested`);
  await pool(TARGETS, PARALLEL, (t) => compile(t.bunTarget, join(DIST, t.file), t.file, runnable.includes(t)));
  const sums: string[] = [];
  for (const t of TARGETS) {
    const path = join(DIST, t.file);
    const size = (await stat(path)).size;
    sums.push(`${await sha256(path)}  ${t.file}`);
    log(`dist/${t.file.padEnd(32)} ${mb(size)}`);
  }
  await Bun.write(join(DIST, "SHA256SUMS"), `${sums.join("\n")}\n`);
  await Bun.write(join(DIST, "install.sh"), Bun.file(join(import.meta.dir, "install.sh")));
  await chmod(join(DIST, "install.sh"), 0o755);
  try {
    log(`npm distribution: ${buildNpmDist(DIST).map((t) => basename(t)).join(", ")} in dist/npm/`);
  } catch (error) {
    fail((error as Error).message);
  }
  const host = runnable.find((t) => !t.baseline && t.libc === "glibc") ?? runnable[0]!;
  checkHostSize((await stat(join(DIST, host.file))).size);
  const skipped = TARGETS.filter((t) => !runnable.includes(t)).map((t) => t.file);
  log(`smoke-tested ${runnable.map((t) => t.file).join(", ")}; not runnable here: ${skipped.join(", ")}`);
  log(`${TARGETS.length} binaries, dist/SHA256SUMS, dist/install.sh, dist/npm/ and the plugin API package in ${seconds(performance.now() - started)}`);
}

/** The price catalog is generated before bundling so the binary embeds it (build/catalog.ts, owned by the meter). */
async function generateCatalogIfPresent(): Promise<void> {
  const path = join(import.meta.dir, "catalog.ts");
  if (!existsSync(path)) {
    log("note: build/catalog.ts does not exist yet; skipping price catalog generation");
    return;
  }
  const mod = (await import(path)) as typeof import("./catalog.ts");
  if (typeof mod.generateCatalog !== "function") fail("build/catalog.ts does not export generateCatalog()");
  try {
    log(`price catalog: ${mod.cacheFindingsSummary((await mod.generateCatalog()).cacheFindings)}`);
  } catch (error) {
    fail(`price catalog generation (build/catalog.ts) failed: ${(error as Error).message}`);
  }
}

/**
 * One `bun build --compile`. Writes to a temporary name, smoke-tests it when
 * `runnable`, and only then renames, so a failed or broken build never sits
 * where tests and install.sh look for a binary.
 */
async function compile(target: Bun.Build.CompileTarget | undefined, outfile: string, label: string, runnable: boolean): Promise<void> {
  // Same suffix as the final name: Bun appends ".exe" to Windows outfiles that lack it.
  const tmp = join(dirname(outfile), `.tmp-${process.pid}-${basename(outfile)}`);
  const result = await Bun.build({
    // The lease keeper runs in a worker thread (src/session/leases.ts): a second entry point of the binary.
    entrypoints: [ENTRY, join(ROOT, "src", "session", "lease-keeper.ts")],
    compile: {
      ...(target === undefined ? {} : { target }),
      outfile: tmp,
      // The user's .env or bunfig.toml in the working directory must not change how cachet runs.
      autoloadDotenv: false,
      autoloadBunfig: false,
      // Any exec argv makes Bun's start-up read its own arguments, which tolerates a working directory removed since
      // the shell entered it; without one, a compiled executable started there exits 1 ("The current working directory
      // was deleted") before any of cachet runs (Bun 1.4.5; a trivial compiled program does the same). `--` ends Bun's
      // flags and changes nothing else: process.argv is as typed, and --version is no slower (measured).
      execArgv: ["--"],
    },
    minify: true,
    splitting: true,
    // Bytecode for ESM exists only with format "esm"; without it Bun silently emits a broken binary.
    bytecode: true,
    // Bytecode for every function, not only each module's top level: the first request
    // runs SDK and pipeline code once, and compiling it lazily showed on the first-byte
    // benchmark (measured here, same load: process start → first request byte median
    // 31 ms at full depth vs 51 ms at depth 0; --version unchanged). Full depth is
    // 118.4 MB with the tokenizer ranks and the catalog embedded as files (depth 0: 113.1 MB).
    format: "esm",
    throw: false,
  });
  if (!result.success) {
    await rm(tmp, { force: true });
    fail(`${label}: compile failed:\n${result.logs.map(String).join("\n")}`);
  }
  if (runnable) {
    try {
      await smokeTest(tmp, label);
    } catch (error) {
      await rm(tmp, { force: true });
      fail((error as Error).message);
    }
  }
  await rename(tmp, outfile);
}

/**
 * Runs `<binary> --version` and requires exactly the package version on stdout,
 * then `<binary> help run`, which loads citty and the run command's chunk: a
 * broken lazy chunk passes `--version` (it imports nothing) but fails here.
 * `--version` runs with the engine options every daemon is started with
 * (src/daemon/self.ts DAEMON_JSC_OPTIONS): a Bun that no longer knows one
 * ends the process at start, and would end every daemon so.
 */
async function smokeTest(path: string, label: string): Promise<void> {
  const versionRun = await execute([path, "--version"], DAEMON_JSC_OPTIONS);
  if (versionRun.code !== 0 || versionRun.stdout.trim() !== version) {
    throw new Error(
      `${label}: smoke test failed: \`--version\` with the daemon's engine options (src/daemon/self.ts) exited ${versionRun.code} and printed ${JSON.stringify(versionRun.stdout.trim())} (expected ${version})${versionRun.stderr ? `; stderr: ${versionRun.stderr.trim()}` : ""}`,
    );
  }
  const helpRun = await execute([path, "help", "run"]);
  if (helpRun.code !== 0 || !helpRun.stdout.includes("run")) {
    throw new Error(`${label}: smoke test failed: \`help run\` (a lazily loaded command) exited ${helpRun.code}${helpRun.stderr ? `; stderr: ${helpRun.stderr.trim()}` : ""}`);
  }
}

async function execute(argv: string[], env: Readonly<Record<string, string>> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", stdin: "ignore", timeout: 20_000, env: { ...process.env, ...env, NO_COLOR: "1" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

function checkHostSize(size: number): void {
  if (size > MAX_HOST_BYTES) fail(`host binary is ${mb(size)}, over the ${mb(MAX_HOST_BYTES)} ceiling; look for a dependency that is imported eagerly or embedded twice`);
}

async function removeStaleBinaries(): Promise<void> {
  // The plugin API tarball (cachet-plugin-api-*.tgz) was just built: not a stale binary.
  const names = [...new Bun.Glob("{cachet-*,.tmp-*}").scanSync({ cwd: DIST, dot: true }), "SHA256SUMS"].filter((n) => !n.startsWith("cachet-plugin-api-"));
  await Promise.all(names.map((n) => rm(join(DIST, n), { force: true })));
}

function hostFacts(): { os: string; arch: string; avx2: boolean; musl: boolean } {
  let avx2 = process.arch !== "x64";
  if (process.platform === "linux" && process.arch === "x64") avx2 = /^flags\s*:.*\bavx2\b/m.test(readFileSync("/proc/cpuinfo", "utf8"));
  if (process.platform === "darwin" && process.arch === "x64") {
    const out = Bun.spawnSync(["sysctl", "-n", "machdep.cpu.leaf7_features"]).stdout.toString();
    avx2 = /\bAVX2\b/.test(out);
  }
  const musl = process.platform === "linux" && [...new Bun.Glob("ld-musl-*").scanSync({ cwd: "/lib" })].length > 0;
  return { os: process.platform, arch: process.arch, avx2, musl };
}

async function sha256(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(await Bun.file(path).arrayBuffer());
  return hasher.digest("hex");
}

async function pool<T>(items: readonly T[], width: number, job: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await job(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function log(line: string): void {
  process.stderr.write(`build: ${line}\n`);
}

function fail(message: string): never {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}
