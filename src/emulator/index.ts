/**
 * The provider emulator: a loopback HTTP server speaking the Anthropic
 * Messages, OpenAI Chat Completions and Responses, and Gemini generateContent
 * protocols, with each provider's usage shape and prompt-cache accounting
 * (providers.md). Used by `cachet emulate`, by `--emulate` (in-process, port
 * 0) and by tests.
 *
 * Controls (header beats environment; the environment is read per request
 * from `options.env`):
 * - `x-emulator-clock-offset-ms` / `CACHET_EMULATOR_CLOCK_OFFSET_MS`: shift the clock (ms).
 * - `x-emulator-clock-ms` / `CACHET_EMULATOR_CLOCK_MS`: fix the clock at an absolute time (ms since the epoch).
 * - `x-emulator-fault` / `CACHET_EMULATOR_FAULT`: a fault (see faults.ts).
 * - `x-emulator-script` / `CACHET_EMULATOR_SCRIPT`: scripted answers file (see script.ts).
 * - `CACHET_EMULATOR_ANSWER_TOKENS`: default answer length (20).
 * - `CACHET_EMULATOR_SEED`: seed of overflow routing (`cachet`).
 * - `x-emulator-forget-responses` / `CACHET_EMULATOR_FORGET_RESPONSES`: forget stored
 *   Responses API responses (`all`, or ids separated by commas) before serving (stored-responses.ts).
 * Inspection: `GET /_emulator/requests[?limit=N]`, `GET /_emulator/counters`,
 * `POST /_emulator/release` (starts the responses the `hold` fault holds),
 * `POST /_emulator/reset` (requests, counters, fault counts, cache state and stored responses),
 * `POST /_emulator/forget-responses[?id=ID]` (stored responses: the ids given, or all).
 */
import { join } from "node:path";
import { CachetError } from "../errors.ts";
import { listenError } from "../listen.ts";
import { statePaths } from "../paths.ts";
import { checkAnswerTokensEnv } from "./answer.ts";
import { CacheStore } from "./cache-store.ts";
import { checkClockEnv } from "./clock.ts";
import { checkByokEnv } from "./facts/openrouter-byok.ts";
import { checkFaultEnv, FaultPlan } from "./faults.ts";
import { Inspection } from "./inspection.ts";
import { checkScriptEnv } from "./script.ts";
import { handleRequest } from "./server.ts";
import { loadTokenizer } from "./tokenizer.ts";
import type { ReceivedRequest } from "./types.ts";

/** Largest request body the emulator reads, bytes (2 GiB). */
const MAX_REQUEST_BYTES = 2 ** 31;

export type { ReceivedRequest } from "./types.ts";

/** Options of {@link startEmulator}. */
export interface EmulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Cache state file; null keeps it in memory. Default `<data dir>/emulator/cache.sqlite`. */
  statePath?: string | null;
  /** Environment read per request for the emulator's variables (default `process.env`). */
  env?: Record<string, string | undefined>;
}

/** A running emulator. */
export interface EmulatorHandle {
  /** Root URL, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  /** Stops serving (open streams are closed) and closes the state file. */
  stop(): Promise<void>;
  /** Requests received (wire bodies, headers minus secrets, usage returned), newest last; the last 1,000. */
  requests(): ReceivedRequest[];
  /** Counters: `requests`, `requests.<provider>`, `status.<code>`, `faults.<name>`, `tokens.input|cache_read|cache_write|output`, `cache.hits`. */
  counters(): Record<string, number>;
}

/** Default cache state file: `<data dir>/emulator/cache.sqlite`. */
export function defaultStatePath(env: Record<string, string | undefined> = process.env): string {
  return join(statePaths(env).data, "emulator", "cache.sqlite");
}

/**
 * Starts the emulator and resolves once it listens and its tokenizer is loaded.
 * @throws CachetError BAD_FLAG (exit 2) for a clock, BYOK, fault or answer-length variable it cannot read;
 *   INPUT_INVALID (exit 3) for a `CACHET_EMULATOR_SCRIPT` file that is missing, unreadable, not JSON or not a script;
 *   BAD_FLAG (src/listen.ts) when it cannot listen on the host and port; EMULATOR when the state file cannot be opened.
 */
export async function startEmulator(options: EmulatorOptions = {}): Promise<EmulatorHandle> {
  const env = options.env ?? process.env;
  // A mistyped variable would be ignored, or refused as if by the provider, request after request: refused once, here.
  checkClockEnv(env);
  checkByokEnv(env);
  checkFaultEnv(env);
  checkAnswerTokensEnv(env);
  checkScriptEnv(env);
  const statePath = options.statePath === undefined ? defaultStatePath(env) : options.statePath;
  let store: CacheStore;
  try {
    store = new CacheStore(statePath);
  } catch (error) {
    throw new CachetError("EMULATOR", `cannot open the emulator cache state ${statePath}: ${(error as Error).message}`, {
      hint: "check that the directory is writable, or set CACHET_HOME to another directory",
      cause: error,
    });
  }
  await loadTokenizer();
  const state = { store, faults: new FaultPlan(), inspection: new Inspection(), env };
  const host = options.host ?? "127.0.0.1";
  let server: ReturnType<typeof Bun.serve>;
  try {
    // Bun's default request limit (128 MiB) is no provider's: a big input is refused, when it is, by the model's context window.
    server = Bun.serve({ port: options.port ?? 0, hostname: host, idleTimeout: 0, maxRequestBodySize: MAX_REQUEST_BYTES, fetch: (request) => handleRequest(request, state) });
  } catch (error) {
    store.close();
    throw listenError(error, host, options.port ?? 0);
  }
  const urlHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${server.port}`,
    async stop() {
      await server.stop(true);
      store.close();
    },
    requests: () => state.inspection.requests(),
    counters: () => state.inspection.counters(),
  };
}
