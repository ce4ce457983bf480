/**
 * Start-up benchmark of the compiled binary (dist/cachet, from `npm run build:host`):
 * `cachet --version` and `cachet --help` against two yardsticks measured in the
 * same run, interleaved so each sees the same load:
 * - a trivial compiled Bun program, a hello world (test/bench/fixtures/yardstick.ts):
 *   target ≤ 1.2× its wall and CPU medians;
 * - the native codex binary's `--version` / `--help` (@openai/codex, pinned, installed on
 *   demand into the bench cache, never a dependency of cachet): target ≤ 0.85×. Without
 *   the network it cannot be installed: those ratios are skipped with a message.
 *
 *   bun test/bench/startup.ts [--write-baseline]
 *
 * Each command: 5 warm-up runs (page cache, disk), then 30 measured rounds;
 * wall time from spawn to exit, CPU time (user + system) from the child's
 * rusage. CACHET_HOME is a fresh temp dir so no user state is read.
 * The bench cache: BENCH_CACHE in fixtures/yardstick.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BENCH_CACHE, timeRun, trivialBinary } from "./fixtures/yardstick.ts";
import { median, ratio, skip } from "./ratios.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = process.env.CACHET_BENCH_BINARY ?? join(ROOT, "dist", "cachet");
/** The codex release measured against; bump it deliberately (its start-up is the yardstick). */
const CODEX_VERSION = "0.171.0";
const WARMUP = 5;
const RUNS = 30;

interface Figures {
  wallMs: number;
  cpuMs: number;
}

if (!existsSync(BINARY)) {
  console.log(`startup: ${BINARY} does not exist; run \`npm run build:host\` first`);
  process.exit(1);
}
const trivial = await trivialBinary();
const codex = await installCodex();

const home = mkdtempSync(join(tmpdir(), "cachet-bench-"));
const commands: Record<string, string[]> = {
  "cachet --version": [BINARY, "--version"],
  "cachet --help": [BINARY, "--help"],
  "trivial bun": [trivial],
  ...(typeof codex === "string" ? { "codex --version": [codex, "--version"], "codex --help": [codex, "--help"] } : {}),
};
let results: Record<string, Figures>;
try {
  results = await measureInterleaved(commands);
} finally {
  rmSync(home, { recursive: true, force: true });
}

console.log(`startup, ${RUNS} interleaved rounds after ${WARMUP} warm-up, ${navigator.hardwareConcurrency} cores`);
for (const [name, r] of Object.entries(results)) {
  console.log(`  ${name.padEnd(17)} wall median ${r.wallMs.toFixed(2).padStart(6)} ms   cpu median ${r.cpuMs.toFixed(2).padStart(6)} ms`);
}
for (const flag of ["version", "help"] as const) {
  const own = results[`cachet --${flag}`]!;
  const bun = results["trivial bun"]!;
  ratio(`startup.${flag}_vs_bun.wall`, own.wallMs / bun.wallMs, 1.2);
  ratio(`startup.${flag}_vs_bun.cpu`, own.cpuMs / bun.cpuMs, 1.2);
  const other = results[`codex --${flag}`];
  for (const clock of ["wall", "cpu"] as const) {
    const name = `startup.${flag}_vs_codex.${clock}`;
    if (other) ratio(name, clock === "wall" ? own.wallMs / other.wallMs : own.cpuMs / other.cpuMs, 0.85);
    else skip(name, typeof codex === "string" ? "not measured" : codex.skipped);
  }
}

/** Installs @openai/codex@CODEX_VERSION into the cache once; returns its native binary, or why it is skipped. */
async function installCodex(): Promise<string | { skipped: string }> {
  const prefix = join(BENCH_CACHE, `codex-${CODEX_VERSION}`);
  mkdirSync(prefix, { recursive: true });
  const find = () => [...new Bun.Glob("node_modules/@openai/codex-*/vendor/*/bin/{codex,codex.exe}").scanSync({ cwd: prefix })][0];
  if (!find()) {
    const npm = Bun.spawn(["npm", "install", "--prefix", prefix, "--no-save", "--no-audit", "--no-fund", `@openai/codex@${CODEX_VERSION}`], {
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      timeout: 180_000,
    });
    const [code, stderr] = await Promise.all([npm.exited, new Response(npm.stderr).text()]);
    const line = stderr.trim().split("\n").at(-1) ?? "";
    if (code !== 0) return { skipped: `npm could not install @openai/codex@${CODEX_VERSION} (exit ${code}${line ? `: ${line}` : ""}); offline?` };
  }
  const found = find();
  return found ? join(prefix, found) : { skipped: `@openai/codex@${CODEX_VERSION} has no native binary for ${process.platform}-${process.arch}` };
}

/** Runs every command once per round, in turn, so all of them see the same background load. */
async function measureInterleaved(cmds: Record<string, string[]>): Promise<Record<string, Figures>> {
  const samples = Object.fromEntries(Object.keys(cmds).map((n) => [n, { wall: [] as number[], cpu: [] as number[] }]));
  for (let round = 0; round < WARMUP + RUNS; round++) {
    for (const [name, argv] of Object.entries(cmds)) {
      let run: { wallMs: number; cpuMs: number };
      try {
        run = await timeRun(argv, { ...process.env, CACHET_HOME: home, CODEX_HOME: home, NO_COLOR: "1" });
      } catch (error) {
        console.log(`startup: ${(error as Error).message}`);
        process.exit(1);
      }
      if (round < WARMUP) continue;
      const s = samples[name]!;
      s.wall.push(run.wallMs);
      s.cpu.push(run.cpuMs);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([n, s]) => [n, { wallMs: median(s.wall), cpuMs: median(s.cpu) }]));
}
