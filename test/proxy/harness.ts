/**
 * Running `cachet proxy` (the compiled binary) in tests: its URL from the
 * first stdout line, its `--verbose` "recorded" lines awaited as events (no
 * sleeps), and its output once stopped, for the credential grep.
 */
import { BINARY, homeEnv } from "../e2e/harness.ts";

/** A running proxy process. */
export interface ProxyProcess {
  url: string;
  /** Resolves once `count` exchanges in total have been recorded; returns the recorded lines. */
  recorded(count: number): Promise<string[]>;
  /** SIGTERM, then the exit code and everything it printed. */
  stop(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts `cachet proxy --verbose ARGS` with CACHET_HOME=home. */
export async function spawnProxy(home: string, args: string[], env: Record<string, string> = {}): Promise<ProxyProcess> {
  const proc = Bun.spawn([BINARY, "proxy", "--verbose", ...args], {
    env: { ...homeEnv(home), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let stdout = "";
  let stderr = "";
  const waiters: { count: number; resolve: (lines: string[]) => void }[] = [];
  const recordedLines = () => stderr.split("\n").filter((line) => line.includes("recorded r_"));
  const wake = () => {
    const lines = recordedLines();
    for (const w of waiters.splice(0)) {
      if (lines.length >= w.count) w.resolve(lines);
      else waiters.push(w);
    }
  };
  const pump = async (stream: ReadableStream<Uint8Array>, append: (text: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      append(decoder.decode(chunk, { stream: true }));
      wake();
    }
  };
  let gotUrl: (url: string) => void;
  const url = new Promise<string>((resolve) => (gotUrl = resolve));
  const done = Promise.all([
    pump(proc.stdout, (text) => {
      stdout += text;
      if (stdout.includes("\n")) gotUrl(stdout.split("\n")[0]!);
    }),
    pump(proc.stderr, (text) => (stderr += text)),
  ]);
  const first = await Promise.race([url, proc.exited.then((code) => `exit ${code}`)]);
  if (!first.startsWith("http")) throw new Error(`cachet proxy did not start (${first}): ${stderr}`);
  return {
    url: first,
    recorded(count) {
      const lines = recordedLines();
      if (lines.length >= count) return Promise.resolve(lines);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async stop() {
      proc.kill("SIGTERM");
      const code = await proc.exited;
      await done;
      return { code, stdout, stderr };
    },
  };
}
