/**
 * Tokenizer benchmark (run: `bun test/bench/tokenizer.ts`): the o200k counter
 * (src/tokenizer/o200k.ts) that every turn with new text loads, for per-node
 * token estimates. Ratios (test/bench/ratios.ts):
 * - tokenizer.load_vs_trivial.cpu: CPU of loading it in a fresh process
 *   (median of 7) over the CPU of a whole run of the trivial compiled Bun
 *   program (fixtures/yardstick.ts), target ≤ 5 (on a loaded 2-core machine:
 *   35 ms against 10 ms). gpt-tokenizer's load, what cachet paid before, is
 *   printed (1.2 s there, a ratio of 120).
 * - tokenizer.prose_vs_gpt_tokenizer / tokenizer.code_vs_gpt_tokenizer: time
 *   to count 10 MB of prose (the repository's Markdown, repeated) and 1 MB of
 *   code (its TypeScript sources) over gpt-tokenizer's time for the same
 *   text, target ≤ 1.25 (counting no slower than the library it replaced). The
 *   counts are printed: ours count a text over 1 MB in slices
 *   (src/tokenizer/o200k.ts), so they may differ by a token or two.
 */
import { join } from "node:path";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { loadO200k } from "../../src/tokenizer/o200k.ts";
import { timeRun, trivialBinary } from "./fixtures/yardstick.ts";
import { median, ratio } from "./ratios.ts";

const ROOT = join(import.meta.dir, "..", "..");
const LOAD_CHILD = join(import.meta.dir, "fixtures", "tokenizer-load.ts");
const ROUNDS = 7;

async function childCpu(args: string[]): Promise<number> {
  const proc = Bun.spawn([process.execPath, LOAD_CHILD, ...args], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`${LOAD_CHILD} exited ${proc.exitCode}`);
  return Number(out.trim());
}

const trivial = await trivialBinary();
const loads: number[] = [];
const yardsticks: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  loads.push(await childCpu([]));
  yardsticks.push((await timeRun([trivial])).cpuMs);
}
const load = median(loads);
const yardstick = median(yardsticks);
console.log(`o200k load: ${load.toFixed(1)} ms CPU (median of ${ROUNDS}); trivial Bun program: ${yardstick.toFixed(1)} ms CPU`);
console.log(`gpt-tokenizer o200k_base load (one run): ${(await childCpu(["gpt-tokenizer"])).toFixed(0)} ms CPU`);
ratio("tokenizer.load_vs_trivial.cpu", load / yardstick, 5);

async function texts(pattern: string, size: number): Promise<string> {
  const files = [...new Bun.Glob(pattern).scanSync({ cwd: ROOT })].sort();
  const all = (await Promise.all(files.map((f) => Bun.file(join(ROOT, f)).text()))).join("\n");
  return all.repeat(Math.ceil(size / all.length)).slice(0, size);
}

const count = await loadO200k();
const ordinary = { disallowedSpecial: new Set<string>() };
countTokens("warm up", ordinary);
for (const [name, text] of [["prose", await texts("**/*.md", 10 << 20)], ["code", await texts("src/**/*.ts", 1 << 20)]] as const) {
  let started = performance.now();
  const ours = count(text);
  const oursMs = performance.now() - started;
  started = performance.now();
  const theirs = countTokens(text, ordinary);
  const theirsMs = performance.now() - started;
  const mb = text.length / (1 << 20);
  console.log(`${name}: ${mb.toFixed(0)} MB, ${ours} tokens; ours ${(mb / (oursMs / 1000)).toFixed(1)} MB/s, gpt-tokenizer ${(mb / (theirsMs / 1000)).toFixed(1)} MB/s (${theirs} tokens)`);
  ratio(`tokenizer.${name}_vs_gpt_tokenizer`, oursMs / theirsMs, 1.25);
}
