/**
 * Runs every benchmark in test/bench (`npm run bench`): builds the host binary
 * first so start-up is measured on the current source, then each `*.ts` here
 * (start-up first), one at a time so they do not compete for the cores.
 * Each bench prints its figures and its ratios through test/bench/ratios.ts,
 * and exits 1 when a ratio misses its target or is beyond 2× its committed
 * baseline (test/bench/baseline.json); this runner exits 1 when any bench did.
 *
 *   npm run bench                        measure and judge
 *   npm run bench -- --write-baseline    measure and record every ratio as the new baseline
 */
import { basename, join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const forwarded = process.argv.slice(2).filter((a) => a === "--write-baseline");
const benches = [...new Bun.Glob("*.ts").scanSync({ cwd: import.meta.dir })]
  .filter((f) => f !== basename(import.meta.path) && f !== "ratios.ts" && !f.endsWith(".test.ts"))
  .sort((a, b) => (a === "startup.ts" ? -1 : b === "startup.ts" ? 1 : a.localeCompare(b)));

const build = Bun.spawnSync([process.execPath, join(ROOT, "build", "build.ts"), "--host"], { stdio: ["ignore", "inherit", "inherit"] });
if (build.exitCode !== 0) {
  console.log("bench: the host build failed; no benchmark ran");
  process.exit(1);
}

const failed: string[] = [];
for (const bench of benches) {
  console.log(`\n=== ${bench}`);
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, bench), ...forwarded], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  const code = await proc.exited;
  console.log(`=== ${bench}: ${code === 0 ? "ok" : `exit ${code}`} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
  if (code !== 0) failed.push(bench);
}

console.log(`\nbench: ${benches.length - failed.length} of ${benches.length} ok${failed.length ? `; regressed or failed: ${failed.join(", ")}` : ""}`);
process.exit(failed.length ? 1 : 0);
