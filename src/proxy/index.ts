/**
 * `cachet proxy`: a local recording proxy. Any client pointed at it (its
 * `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, Gemini base URL) reaches its
 * provider unchanged, and every exchange becomes a ledger row of a recorded
 * session, so `cachet stats`, `cost` and `why` work on the client's traffic.
 */
import { loadConfig } from "../config.ts";
import { CachetError } from "../errors.ts";
import { listenError } from "../listen.ts";
import { loadPlugins } from "../plugin/loader.ts";
import { configFile, statePaths, storeFile } from "../paths.ts";
import { type RecordedExchange, RecordedStore } from "../session/recorded.ts";
import { openStore } from "../session/store.ts";
import type { LedgerRow } from "../session/types.ts";
import { Recorder } from "./recorder.ts";
import { proxyHandler } from "./server.ts";
import { UsageReader } from "./usage-reader.ts";

/** Recorded sessions a restarted proxy remembers, most recent first. */
const WARM_SESSIONS = 500;

/** Options of {@link startProxy}. */
export interface ProxyOptions {
  /** TCP port; 0 picks a free one. */
  port?: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Base URL to forward to instead of the provider's (of `provider` when given, else of every provider). */
  upstream?: string;
  /** Forward to an in-process emulator instead of the network. */
  emulate?: boolean;
  /** Provider serving the unprefixed paths of its protocol, e.g. `deepseek` for `/v1/chat/completions`. */
  provider?: string;
  /** Keep request and response bodies in the store (hashes are always kept). */
  keepBodies?: boolean;
  env?: Record<string, string | undefined>;
  /** Store file instead of the state directory's. */
  storePath?: string;
  /** Injected upstream fetch (tests). */
  fetch?: typeof fetch;
  /** One-line notices (plugin load failures, recording failures). */
  notice?: (message: string) => void;
  /** Called after each exchange is stored, with its ledger row and exchange row. */
  onRecorded?: (row: LedgerRow, exchange: RecordedExchange) => void;
}

/** A running proxy. */
export interface ProxyHandle {
  /** Root URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Root URL of the in-process emulator with `emulate`. */
  emulatorUrl: string | undefined;
  /** Resolves once every exchange received so far is recorded. */
  idle(): Promise<void>;
  /** Exchanges recorded so far. */
  recorded(): number;
  /** Stops listening, waits for open exchanges to be recorded, closes the store and the emulator. */
  stop(): Promise<void>;
}

/**
 * Starts the proxy.
 * @throws CachetError UNKNOWN_PROVIDER for an unknown `provider`; BAD_FLAG for an `upstream` that is not an http(s) URL;
 *   EMULATOR / STORE when those cannot be opened; BAD_FLAG when the port cannot be bound.
 */
export async function startProxy(options: ProxyOptions = {}): Promise<ProxyHandle> {
  const env = options.env ?? process.env;
  const notice = options.notice ?? (() => {});
  const paths = statePaths(env);
  const config = await loadConfig(configFile(paths));
  const host = await loadPlugins({ config, env });
  for (const failure of host.failures) notice(failure.message);
  if (options.provider !== undefined) host.provider(options.provider);
  if (options.upstream !== undefined && !/^https?:\/\/[^/]/.test(options.upstream)) {
    throw new CachetError("BAD_FLAG", `--upstream "${options.upstream}" is not an http(s) URL`, { hint: "e.g. --upstream https://api.anthropic.com" });
  }
  const path = options.storePath ?? storeFile(paths);
  const store = openStore(path);
  const recorded = new RecordedStore(store);
  let emulator: { url: string; stop(): Promise<void> } | undefined;
  if (options.emulate) {
    const { startEmulator } = await import("../emulator/index.ts");
    emulator = await startEmulator({ port: 0, env });
  }
  // The tokenizer (token estimates of chain links) takes a moment to load: the proxy serves meanwhile.
  const tokenizer = import("../tokenizer/o200k.ts").then(({ loadO200k }) => loadO200k());
  const { loadCatalog, priceUsageReport, uncachedCost } = await import("../meter/index.ts");
  const { catalog } = await loadCatalog(paths);
  const recorder = new Recorder({
    store,
    recorded,
    host,
    config,
    env,
    reader: new UsageReader(host),
    keepBodies: options.keepBodies === true,
    tokenizer,
    price: (modelRef, report, partial) => {
      const cost = priceUsageReport(report, modelRef, catalog, config.prices, partial);
      // As a turn records its cost (src/meter/index.ts priceReport): an estimate only for a known cost that is not exact.
      const costEstimate = cost.costUsd !== null && cost.estimates.length > 0 ? cost.estimates.join("; ") : null;
      return { costUsd: cost.costUsd, noCacheCostUsd: uncachedCost(report, modelRef, catalog, config.prices), costEstimate };
    },
    notice,
    ...(options.onRecorded ? { onRecorded: options.onRecorded } : {}),
  });
  recorder.warm(WARM_SESSIONS);
  const configured = Object.fromEntries(Object.entries(config.providers ?? {}).map(([id, p]) => [id, p?.base_url]));
  const handler = proxyHandler({
    choice: {
      providers: new Map([...host.providers].map(([id, owned]) => [id, owned.value])),
      provider: options.provider,
      upstream: options.upstream,
      emulatorUrl: emulator?.url,
      configured,
    },
    recorder,
    fetch: options.fetch,
  });
  const hostname = options.host ?? "127.0.0.1";
  let server: ReturnType<typeof Bun.serve>;
  try {
    // idleTimeout 0: a stalled upstream is the client's to time out, not the proxy's.
    server = Bun.serve({ port: options.port ?? 0, hostname, idleTimeout: 0, fetch: handler });
  } catch (error) {
    await emulator?.stop();
    store.close();
    throw listenError(error, hostname, options.port ?? 0);
  }
  const urlHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `http://${urlHost}:${server.port}`,
    emulatorUrl: emulator?.url,
    idle: () => recorder.idle(),
    recorded: () => recorder.recordedCount,
    async stop() {
      await server.stop(false);
      await recorder.idle();
      await emulator?.stop();
      store.close();
    },
  };
}
