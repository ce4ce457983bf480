/**
 * `export.otlp_url` in config: after a run, the ledger rows not exported yet
 * go to the collector from a detached `cachet export --otlp` process, so the
 * run never waits on the collector: a down or slow collector neither delays
 * the run's exit nor changes its exit code, and unsent rows wait for the next
 * export (the watermark in the store).
 */
import { spawn } from "node:child_process";
import type { Config } from "../config.ts";

/**
 * Starts the detached exporter and returns at once (a spawn, a few ms).
 * Does nothing without `export.otlp_url`, or when this process is not the
 * cachet binary or its source entry point (a test runner must not spawn itself).
 * A failure to spawn is reported through `notice` only: the run's result stands.
 */
export function exportInBackground(config: Config, env: Record<string, string | undefined>, notice: (message: string) => void): void {
  const url = config.export?.otlp_url;
  if (url === undefined) return;
  const self = selfCommand();
  if (self === undefined) return;
  const args = ["export", "--otlp", url, "--otlp-format", config.export?.otlp_format ?? "protobuf", ...(config.export?.with_content ? ["--with-content"] : []), "--quiet"];
  try {
    const child = spawn(self[0]!, [...self.slice(1), ...args], { detached: true, stdio: "ignore", env: env as NodeJS.ProcessEnv });
    child.on("error", (error) => notice(`background OTLP export not started: ${error.message}; run \`cachet export --otlp ${url}\``));
    child.unref();
  } catch (error) {
    notice(`background OTLP export not started: ${(error as Error).message}; run \`cachet export --otlp ${url}\``);
  }
}

/** How to run this cachet again: the compiled binary alone, or Bun with the source entry point. */
function selfCommand(): string[] | undefined {
  const main = Bun.main;
  // A compiled binary's entry point lives in its embedded file system.
  if (main.startsWith("/$bunfs/") || /^[A-Z]:[\\/]~BUN[\\/]/.test(main)) return [process.execPath];
  if (/[\\/]src[\\/]cli[\\/]main\.ts$/.test(main)) return [process.execPath, main];
  return undefined;
}
