/**
 * Peak memory with a big stdin (issue 18): the compiled binary reads N MiB of
 * generated text from a pipe and sends it to the emulator (in a process of
 * its own whose memory is not counted) under a model id the catalog does not
 * know, so no context window stops it and the whole input goes through
 * reading, hashing, token counting, storing and sending. Measured on three
 * wires: OpenAI-compatible chat, Gemini and the OpenAI Responses API. Goal:
 * peak RSS ≤ base + 3 × N, where base is the peak RSS of the same command
 * with a tiny stdin.
 *
 * Then the refusal path: a catalog model (1M-token window) with the largest
 * input must be refused locally (exit 3) within the same bound, and the
 * emulator must have received nothing.
 *
 * Peak RSS is the child's own rusage `ru_maxrss` (Bun.spawn's resourceUsage),
 * so the generator and the emulator do not count; on Linux it starts from
 * this process's resident size at the fork, which therefore stays small (the
 * emulator's copy of a request is read back by another child). Each size is
 * sent as ASCII prose made of pseudo-random words (the common case), and on
 * the OpenAI-compatible wire also as prose mixing those words with accented
 * words, CJK words and emoji (a JavaScript string of it takes two bytes per
 * character, a UTF-8 byte of it one). The mixed prose is also redirected
 * from a file (`cachet … < FILE`, read by another path than a pipe) at
 * BIG_STDIN_FILE_MIB (default 100 MiB).
 *
 * A run's peak moves with the moment the collector runs (±0.1 of the ratio at 10 MiB,
 * where the base weighs most): each size up to 100 MiB, and the base, is run
 * three times and the median peak counts; 500 MiB runs once.
 *
 *   bun test/bench/big-stdin.ts              10, 100 and 500 MiB
 *   BIG_STDIN_MIB=10,100 BIG_STDIN_FILE_MIB=200 bun test/bench/big-stdin.ts
 */
import { existsSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { median, ratio } from "./ratios.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = process.env.CACHET_BENCH_BINARY ?? join(ROOT, "dist", "cachet");
const SIZES_MIB = (process.env.BIG_STDIN_MIB ?? "10,100,500").split(",").map(Number);
/** Sizes of the mixed prose redirected from a file: one size by default, the bench's time being mostly the emulator's. */
const FILE_SIZES_MIB = (process.env.BIG_STDIN_FILE_MIB ?? "100").split(",").map(Number);
/** Runs per size up to 100 MiB, and of each base, whose median peak counts. */
const REPEATS = 3;
/** The issue's goal: peak RSS ≤ base + TARGET × N. */
const TARGET = 3;
const MIB = 1 << 20;
/** A catalog model with a 1,000,000-token window: the largest input is refused before sending. */
const WINDOWED_MODEL = "anthropic/claude-sonnet-4-6";
/** Which prose the input is. */
type Kind = "ascii" | "nonascii";
/** How stdin is given: a pipe the bench writes, or a file the shell would redirect (`< FILE`). */
type Via = "pipe" | "file";
/**
 * The wires measured, each under a model id no catalog lists (no context window is known, so nothing refuses the
 * input locally), with the emulator path of its base URL, the prefix of its ratio names and the prose sent (the
 * non-ASCII prose once: what it costs is held before any wire).
 */
const WIRES: { model: string; path: string; name: string; kinds: readonly Kind[]; fromFile?: boolean }[] = [
  { model: "openai-compatible/bench-unlisted-model", path: "/openai-compatible/v1", name: "big_stdin", kinds: ["ascii", "nonascii"], fromFile: true },
  { model: "google/bench-unlisted-model", path: "/google", name: "big_stdin.gemini", kinds: ["ascii"] },
  { model: "openai-responses/bench-unlisted-model", path: "/openai/v1", name: "big_stdin.openai_responses", kinds: ["ascii"] },
];

const ASCII_WORDS = ["cache", "prefix", "the", "of", "request", "token", "and", "session", "stable", "node", "a", "write", "read", "breakpoint", "ledger", "usage", "to", "model"];
/** Accented (Latin-1), CJK and emoji words among the ASCII ones: about one word in three is beyond ASCII. */
const MIXED_WORDS = [...ASCII_WORDS, "café", "préfixe", "données", "naïve", "缓存", "令牌", "会话", "キャッシュ", "요청", "😀", "🚀", "✅"];


if (!existsSync(BINARY)) {
  process.stderr.write(`big-stdin: ${BINARY} does not exist; run \`npm run build:host\` first\n`);
  process.exit(1);
}

const homes: string[] = [];
const emulator = await startEmulator();
try {
  for (const wire of WIRES) {
    // The emulator counts every token of the input exactly before it answers (minutes for 500 MiB): no idle limit.
    const args = ["-q", "--idle-timeout", "0", "-m", wire.model, "--base-url", `${emulator.url}${wire.path}`];
    const bases: Run[] = [];
    for (let i = 0; i < REPEATS; i++) {
      const b = await run(args, 0);
      if (b.code !== 0) fail(`the base run exited ${b.code}: ${b.stderr}`);
      bases.push(b);
    }
    const base = { peak: median(bases.map((b) => b.peak)) };
    console.log(`base (tiny stdin, ${wire.model}): median peak of ${REPEATS} ${mib(base.peak)} MiB`);
    const cases: (readonly [Kind, number, Via])[] = SIZES_MIB.flatMap((n) => wire.kinds.map((kind) => [kind, n, "pipe"] as const));
    if (wire.fromFile) cases.push(...FILE_SIZES_MIB.map((n) => ["nonascii", n, "file"] as const));
    for (const [kind, n, via] of cases) {
      const peaks: number[] = [];
      for (let i = 0; i < (n <= 100 ? REPEATS : 1); i++) {
        const answered = await counter(emulator.url, "status.200");
        const r = await run(args, n * MIB, {}, kind, via);
        console.log(`${wire.model}, ${n} MiB ${kind} from a ${via}: peak ${mib(r.peak)} MiB, ${r.seconds.toFixed(1)} s, exit ${r.code}`);
        if (r.code !== 0) fail(`${wire.model}, ${n} MiB: exit ${r.code}: ${r.stderr}`);
        if ((await counter(emulator.url, "status.200")) !== answered + 1) fail(`${wire.model}, ${n} MiB: the emulator did not answer the request with 200`);
        // Reading a request back serializes its body as JSON in the emulator: affordable up to 100 MiB.
        if (n <= 100) {
          const received = await lastReceivedBytes(emulator.url);
          console.log(`  the emulator received ${received === n * MIB ? "every byte" : `${received} bytes of ${n * MIB}`}`);
          if (received !== n * MIB) fail(`${wire.model}, ${n} MiB: the emulator received ${received} bytes of text`);
        }
        // The emulator keeps every request it received for inspection: let go of this one.
        await fetch(`${emulator.url}/_emulator/reset`, { method: "POST" });
        peaks.push(r.peak);
      }
      const peak = median(peaks);
      const perMiB = (peak - base.peak) / (n * MIB);
      console.log(`  median peak of ${peaks.length} ${mib(peak)} MiB, base ${mib(base.peak)} MiB, ratio (X-B)/N ${perMiB.toFixed(2)} (target ≤ ${TARGET})`);
      ratio(`${wire.name}.peak_rss_per_input.${via === "file" ? "file." : kind === "ascii" ? "" : "nonascii."}${n}mib`, perMiB, TARGET);
    }
  }

  const largest = Math.max(...SIZES_MIB);
  const windowed = ["-q", "-m", WINDOWED_MODEL, "--base-url", emulator.url];
  const env = { ANTHROPIC_API_KEY: "bench-not-a-key" };
  const refusalBase = await run(windowed, 0, env);
  if (refusalBase.code !== 0) fail(`the refusal base run exited ${refusalBase.code}: ${refusalBase.stderr}`);
  const before = await counter(emulator.url, "requests");
  const refused = await run(windowed, largest * MIB, env);
  const sent = (await counter(emulator.url, "requests")) - before;
  const perMiB = (refused.peak - refusalBase.peak) / (largest * MIB);
  console.log(`refusal, ${largest} MiB to ${WINDOWED_MODEL}: peak ${mib(refused.peak)} MiB, base ${mib(refusalBase.peak)} MiB, ratio ${perMiB.toFixed(2)} (target ≤ ${TARGET}), ${refused.seconds.toFixed(1)} s, exit ${refused.code}, requests sent ${sent}`);
  console.log(`  ${refused.stderr.trim().split("\n")[0] ?? ""}`);
  if (refused.code !== 3) fail(`refusal: expected exit 3, got ${refused.code}: ${refused.stderr}`);
  if (sent !== 0) fail(`refusal: ${sent} request(s) reached the emulator`);
  ratio(`big_stdin.refusal_peak_rss_per_input.${largest}mib`, perMiB, TARGET);
} catch (error) {
  console.log(`big-stdin: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  emulator.stop();
  for (const home of homes) rmSync(home, { recursive: true, force: true });
}
process.exit(process.exitCode ?? 0);

interface Run {
  code: number;
  /** Peak RSS of the cachet process, bytes. */
  peak: number;
  seconds: number;
  stderr: string;
}

/**
 * Runs the binary in a fresh state directory with `bytes` of generated text on stdin: piped, or written to a file
 * first (not timed) and given as the child's stdin as a shell's `< FILE` does.
 */
async function run(args: string[], bytes: number, env: Record<string, string> = {}, kind: Kind = "ascii", via: Via = "pipe"): Promise<Run> {
  const home = mkdtempSync(join(tmpdir(), "cachet-big-stdin-"));
  homes.push(home);
  const input = join(home, "input.txt");
  if (via === "file") await writeInput(Bun.file(input).writer(), bytes, kind);
  const started = performance.now();
  const proc = Bun.spawn([BINARY, ...args], {
    stdin: via === "file" ? Bun.file(input) : "pipe",
    stdout: "ignore",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: home, CACHET_HOME: home, NO_COLOR: "1", ...env },
  });
  const stderr = new Response(proc.stderr).text();
  if (via === "pipe") await writeInput(proc.stdin as import("bun").FileSink, bytes, kind);
  const code = await proc.exited;
  const seconds = (performance.now() - started) / 1000;
  if (via === "file") unlinkSync(input);
  return { code, peak: proc.resourceUsage()?.maxRSS ?? Number.NaN, seconds, stderr: await stderr };
}

/** Writes `bytes` of prose (a 1 MiB block of pseudo-random words, repeated), or one short line for 0. */
async function writeInput(sink: import("bun").FileSink, bytes: number, kind: Kind): Promise<void> {
  if (bytes === 0) {
    sink.write("Say hello.\n");
    await sink.end();
    return;
  }
  const block = proseBlock(MIB, kind === "ascii" ? ASCII_WORDS : MIXED_WORDS);
  for (let written = 0; written < bytes; written += MIB) {
    sink.write(written + MIB <= bytes ? block : proseBlock(bytes - written, ASCII_WORDS));
    await sink.flush();
  }
  await sink.end();
}

/** Exactly `size` bytes of UTF-8 prose: whole words, padded with spaces to the size. */
function proseBlock(size: number, words: readonly string[]): Uint8Array {
  const encoder = new TextEncoder();
  const out = new Uint8Array(size).fill(0x20);
  let seed = 1;
  for (let at = 0; ; ) {
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    const word = encoder.encode(`${words[seed % words.length]!}${seed % 13 === 0 ? ".\n" : " "}`);
    if (at + word.byteLength > size) return out;
    out.set(word, at);
    at += word.byteLength;
  }
}

/**
 * Bytes of text in the last request the emulator received, read back by a
 * child process (test/bench/fixtures/received-bytes.ts) so that this process
 * stays small: every later run's peak would include its size at the fork.
 */
async function lastReceivedBytes(url: string): Promise<number> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "fixtures", "received-bytes.ts"), url], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) fail("reading the last request back from the emulator failed");
  return Number(out.trim());
}

/** One of the emulator's counters (`requests`, `status.200`, ...), 0 when never counted. */
async function counter(url: string, name: string): Promise<number> {
  const counters = (await (await fetch(`${url}/_emulator/counters`)).json()) as Record<string, number>;
  return counters[name] ?? 0;
}

/** `cachet emulate` in its own process and state directory; its first stdout line is the URL. */
async function startEmulator(): Promise<{ url: string; stop(): void }> {
  const home = mkdtempSync(join(tmpdir(), "cachet-big-stdin-emulator-"));
  homes.push(home);
  const proc = Bun.spawn([BINARY, "emulate", "--port", "0"], { stdout: "pipe", stderr: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: home, CACHET_HOME: home } });
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) fail("the emulator exited before printing its URL");
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return { url: out.split("\n")[0]!.trim(), stop: () => proc.kill() };
}

function mib(bytes: number): string {
  return (bytes / MIB).toFixed(0);
}

function fail(message: string): never {
  throw new Error(message);
}
