/**
 * What `export.otlp_url` adds to a run (dist/cachet, `--emulate`): the run
 * starts a detached exporter and exits without waiting for the collector, so
 * a hanging or down collector should add only the spawn. Not a test: it
 * prints medians of interleaved runs without export, with a collector that
 * never answers and with a collector that is down, and the median of the
 * paired differences, in wall time and in the run's CPU time (user + system,
 * from rusage: on a loaded shared machine the wall time is mostly other
 * processes' noise, while the run's own work is what the export could add,
 * since it waits on nothing). Ratios (test/bench/ratios.ts): the CPU median
 * with each collector over the CPU median without export, target ≤ TARGET.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ratio } from "./ratios.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = process.env.CACHET_BENCH_BINARY ?? join(ROOT, "dist", "cachet");
const ROUNDS = Number(process.env.CACHET_BENCH_ROUNDS ?? 15);
/** The issue's ceiling, 50 ms of CPU added to a run, over the 807 ms CPU median of a run without export when the ratio was introduced. */
const TARGET = 1.06;

// A collector that takes every export and never answers.
const hanging = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Promise<Response>(() => {}) });
const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
const downUrl = `http://127.0.0.1:${closed.port}`;
await closed.stop(true);

const homes = {
  none: home(undefined),
  hanging: home(`http://127.0.0.1:${hanging.port}`),
  down: home(downUrl),
};

function home(url: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), "cachet-bench-export-"));
  if (url) writeFileSync(join(dir, "config.toml"), `[export]\notlp_url = "${url}"\n`);
  return dir;
}

async function timeRun(dir: string): Promise<{ wall: number; cpu: number }> {
  const started = performance.now();
  const proc = Bun.spawn([BINARY, "--emulate", "-q", "hello"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: dir, CACHET_HOME: dir, NO_COLOR: "1" }, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`run exited ${code} in ${dir}`);
  const wall = performance.now() - started;
  const usage = proc.resourceUsage()!;
  return { wall, cpu: Number(usage.cpuTime.user + usage.cpuTime.system) / 1000 };
}

const times: Record<keyof typeof homes, { wall: number; cpu: number }[]> = { none: [], hanging: [], down: [] };
await timeRun(homes.none);
for (let i = 0; i < ROUNDS; i++) for (const kind of Object.keys(homes) as (keyof typeof homes)[]) times[kind].push(await timeRun(homes[kind]));

const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(1)}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`runs of \`cachet --emulate -q hello\`, ${ROUNDS} interleaved rounds`);
const of = (kind: keyof typeof homes, key: "wall" | "cpu") => times[kind].map((t) => t[key]);
console.log(`  no export          wall median ${median(of("none", "wall")).toFixed(1)} ms  cpu median ${median(of("none", "cpu")).toFixed(1)} ms`);
for (const kind of ["hanging", "down"] as const) {
  const paired = (key: "wall" | "cpu") => median(times[kind].map((t, i) => t[key] - times.none[i]![key]));
  console.log(
    `  ${`${kind} collector`.padEnd(18)} wall median ${median(of(kind, "wall")).toFixed(1)} ms (paired ${signed(paired("wall"))} ms)  cpu median ${median(of(kind, "cpu")).toFixed(1)} ms (paired ${signed(paired("cpu"))} ms, ratio ${(median(of(kind, "cpu")) / median(of("none", "cpu"))).toFixed(3)})`,
  );
}
for (const kind of ["hanging", "down"] as const) ratio(`export.${kind}_vs_none.cpu`, median(of(kind, "cpu")) / median(of("none", "cpu")), TARGET);
await hanging.stop(true);
for (const dir of Object.values(homes)) rmSync(dir, { recursive: true, force: true });
process.exit(process.exitCode ?? 0);
