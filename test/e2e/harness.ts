/**
 * Running the compiled binary in end-to-end tests: a fresh CACHET_HOME per
 * test, no provider keys, optional stdin, and JSON-lines parsing.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The host binary built by `npm run build:host` (npm test builds it first). */
export const BINARY = join(import.meta.dir, "..", "..", "dist", "cachet");
if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run \`npm run build:host\` (npm test does it first)`);

const homes: string[] = [];

/** A new empty state directory, removed by {@link cleanHomes}. */
export function freshHome(): string {
  const home = mkdtempSync(join(tmpdir(), "cachet-e2e-"));
  homes.push(home);
  return home;
}

/** Removes every state directory made by {@link freshHome}. */
export function cleanHomes(): void {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
}

/** A finished run of the binary. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@link cachet}. */
export interface RunOptions {
  home?: string;
  /** Bytes on stdin; undefined means stdin is /dev/null. */
  stdin?: string | Uint8Array;
  /** Variables added to (or, undefined, removed from) the base environment. */
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Working directory (default: this process's). */
  cwd?: string;
}

/** Runs the binary to completion. */
export async function cachet(args: string[], options: RunOptions = {}): Promise<Run> {
  const home = options.home ?? freshHome();
  const proc = Bun.spawn([BINARY, ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: definedOnly({ ...homeEnv(home), ...options.env }),
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
    timeout: options.timeoutMs ?? 20_000,
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/**
 * The environment of a cachet process a test starts with `home` as its HOME and CACHET_HOME, nothing else of this
 * process's but PATH: no colour, and no resident daemon started by its turns (src/daemon/autostart.ts; every test's
 * home would keep one running, and later turns would run in it). Spread what a test adds over it; a test of
 * auto-start sets CACHET_DAEMON_AUTOSTART itself.
 */
export function homeEnv(home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", CACHET_DAEMON_AUTOSTART: "0", HOME: home, CACHET_HOME: home, NO_COLOR: "1" };
}

/** `env` without its undefined variables: a child's environment. */
function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** Pids of `cachet daemon run` processes whose CACHET_HOME is `h` (a successor started by a daemon included), from /proc. */
export function daemonsOf(h: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const env = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (argv[1] === "daemon" && argv[2] === "run" && env.includes(`CACHET_HOME=${h}`)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or another user's.
    }
  }
  return pids;
}

/** One parsed `--json` line. */
export type Event = { type: string } & Record<string, unknown>;

/** Parses `--json` output; every line must be a JSON object with a `type`. */
export function events(stdout: string): Event[] {
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const event = JSON.parse(line) as Event;
      if (typeof event.type !== "string") throw new Error(`line without a type: ${line}`);
      return event;
    });
}

/** The events of one type. */
export function ofType(list: Event[], type: string): Event[] {
  return list.filter((e) => e.type === type);
}

/**
 * Resolves once `check` holds, asking again every 5 ms: a wait for an event another process makes visible (a file, a
 * line, a request at the emulator), never a fixed delay. Throws after 20 s, or as soon as `alive` says the process it
 * waits on has ended.
 */
export async function until(what: string, check: () => boolean | Promise<boolean>, alive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (!alive()) throw new Error(`the process ended before ${what}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

/** Reads `stream` until its text contains `needle` (the answer has begun), then releases it; throws if it ends first. */
export async function readUntil(stream: ReadableStream<Uint8Array>, needle: string): Promise<void> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  while (!seen.includes(needle)) {
    const r = await reader.read();
    if (r.done) throw new Error(`the stream ended before "${needle}": ${seen}`);
    seen += decoder.decode(r.value, { stream: true });
  }
  reader.releaseLock();
}

/**
 * Reads `stream` until a whole line holding `needle` arrived (and no further): that line (without its newline), and
 * `rest`, which reads on and resolves to the text after the line once the stream ends. Throws if the stream ends first.
 */
export async function readLine(stream: ReadableStream<Uint8Array>, needle: string): Promise<{ line: string; rest: () => Promise<string> }> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  for (;;) {
    const lines = seen.split("\n");
    const at = lines.slice(0, -1).findIndex((line) => line.includes(needle));
    if (at !== -1) {
      const rest = async () => {
        let text = lines.slice(at + 1).join("\n");
        for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
        return text + decoder.decode();
      };
      return { line: lines[at]!, rest };
    }
    const r = await reader.read();
    if (r.done) throw new Error(`the stream ended before a line holding "${needle}": ${seen}`);
    seen += decoder.decode(r.value, { stream: true });
  }
}
