/**
 * The long-lived parts a turn needs: config, loaded plugins, the store, an
 * in-process emulator with `--emulate`, and the services that price usage,
 * hash wire requests and check structured answers. Opened once per process
 * (or per probe run) and shared by its turns.
 */
import { loadConfig, type Config } from "../config.ts";
import type { Block, OutputSchema } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { DEFAULT_HOOK_TIMEOUT_MS } from "../plugin/guard.ts";
import type { PluginHost } from "../plugin/host.ts";
import { loadPlugins } from "../plugin/loader.ts";
import type { UsageReport } from "../plugin/usage.ts";
import type { Protocol, WireRequest } from "../plugin/wire.ts";
import { configFile, statePaths, storeFile } from "../paths.ts";
import type { Store } from "../session/store.ts";
import type { Budget } from "../budget/budget.ts";
import type { ModelLimits } from "../meter/model-limits.ts";
import type { ChainLink } from "../session/types.ts";
import { type ChainMemo, prefixChain, rememberTokenTotal, tokenTotal } from "../wire/prefix-chain.ts";
import { signalsDelivered } from "./interrupt.ts";
import { type ResponsesSeen, watchResponses } from "./attempt-billing.ts";
import { runtimeFetch } from "./resident-fetch.ts";
import { moduleOnce } from "../module-once.ts";

// Loaded by every runtime; a resident process opens one per turn (src/module-once.ts).
const storeModule = moduleOnce(() => import("../session/store.ts"));
const budgetModule = moduleOnce(() => import("../budget/budget.ts"));
const modelLimitsModule = moduleOnce(() => import("../meter/model-limits.ts"));
// The compaction check's bound needs it on every -c turn: import() resolves even a loaded module again (3-5 µs measured in a loop, more in a turn).
const tokenizerModule = moduleOnce(() => import("../tokenizer/o200k.ts"));

/** Result of pricing one request. */
export interface Priced {
  /** USD, exact to 1e-9; null when unknown. */
  costUsd: number | null;
  /** Why the cost is unknown or estimated. */
  reason?: string;
  /** What the request would have cost with every prompt token uncached, USD; null when unknown (stored for savings). */
  noCacheCostUsd?: number | null;
  /** Set when the known cost is a flagged estimate or lower bound: why. */
  estimate?: string;
  /** Counts the provider reported inconsistently, each one line for stderr (also part of `estimate`); see RequestCost.warnings. */
  warnings?: string[];
  /** For a model the catalog does not list: the catalog's `provider/model` id of the same provider a typo away, for a "did you mean". */
  nearModel?: string;
}

/** What {@link runTurn} runs against. */
export interface Runtime {
  config: Config;
  host: PluginHost;
  store: Store;
  env: Record<string, string | undefined>;
  /** The fetch provider adapters are given: the responses it receives are watched ({@link responsesSeen}). */
  fetch: typeof fetch;
  /** The HTTP responses {@link fetch} has received so far (src/run/attempt-billing.ts: did an attempt get a response, with which status). */
  responsesSeen(): ResponsesSeen;
  /** Resolves once {@link fetch} has handed its next request over: the request is on its way, no response has been read. */
  nextRequestSent(): Promise<void>;
  /**
   * Opens a connection to `origin` (DNS, TCP, TLS) ahead of the request, when
   * the adapters' fetch goes through the global one (whose pool a preconnect
   * fills); with an injected fetch (tests), nothing.
   */
  preconnect(origin: string): void;
  /** Root URL of the in-process emulator when emulating. */
  emulatorUrl: string | undefined;
  /** `--no-store`: the store is in memory and nothing is written to the state directory (budget counters aside). */
  ephemeral: boolean;
  /** The spending limits of this run, when any is set (src/budget). */
  budget: Budget | undefined;
  /** Prices a usage report for `provider/model` with the catalog and config overrides; `partial` for a cut stream's usage (a flagged lower bound). */
  price(modelRef: string, report: UsageReport, flags?: { partial?: boolean }): Promise<Priced>;
  /**
   * The model's limits from the catalog (`limit.context` and `limit.output`, tokens); absent when unknown.
   * Read once per runtime and model: the turns of one command see one catalog.
   * @param catalogRef `provider/model` as the catalog names it
   * @throws (as the promise's rejection) CachetError UNKNOWN_MODEL when catalogRef is not provider/model; CATALOG_INVALID when a stored catalog update is corrupt
   */
  modelLimits(catalogRef: string): Promise<{ context?: number; output?: number }>;
  /**
   * The model's catalog entry (its limits and temperature rule, src/meter/model-limits.ts); undefined when the
   * catalog does not list it. Read once per runtime and model, as {@link modelLimits} (which it gives).
   * @param catalogRef `provider/model` as the catalog names it
   * @throws (as the promise's rejection) CachetError UNKNOWN_MODEL when catalogRef is not provider/model; CATALOG_INVALID when a stored catalog update is corrupt
   */
  catalogEntry(catalogRef: string): Promise<ModelLimits | undefined>;
  /**
   * The wire hash chain of a request, with token estimates memoized per content hash (a text over 1 MiB
   * characters is estimated from samples: countOrEstimate). Worked out once per request object: asked again
   * for the same object (the compaction check's estimate, then the send), it is the same promise; never
   * change a request once its chain was asked for, nor the links.
   */
  chainOf(wire: WireRequest): Promise<ChainLink[]>;
  /**
   * The request's hash chain at once, for comparing prefixes before sending:
   * read its hashes only (`tokens` may be 0 or the estimates). The links of
   * {@link chainOf} when that was asked for the same object, so hashing a
   * request for both costs one hashing.
   */
  prefixHashes(wire: WireRequest): ChainLink[];
  /**
   * An upper bound of the token total {@link chainOf} will give for `wire`,
   * without loading the tokenizer (~40 ms): the counts the memo knows (with
   * `stored`, those the store knows too: one query), and for each text never
   * counted its UTF-8 byte length (an o200k token is at least one byte; a text
   * estimated from samples, over EXACT_CHARS, is bounded by 3 bytes per UTF-16
   * unit). Lets a check that only needs "below N" skip the tokenizer before
   * the request leaves; without `stored` the bound is looser, and costs no statement.
   */
  chainBound(wire: WireRequest, stored?: boolean): Promise<number>;
  /**
   * Parses and validates a structured answer against the session's schema.
   * @throws CachetError ANSWER_INVALID with the validation errors.
   */
  checkAnswer(protocol: Protocol, schema: OutputSchema, content: Block[]): Promise<unknown>;
  /** Stops the emulator and closes the store. */
  close(): Promise<void>;
}

/** How to open a runtime. */
export interface RuntimeOptions {
  /** Start the in-process emulator and send every request to it. */
  emulate?: boolean;
  env?: Record<string, string | undefined>;
  /** Injected fetch (tests). */
  fetch?: typeof fetch;
  /** Store file instead of the state directory's (the probe: a fresh file per run, so runs are reproducible). */
  storePath?: string;
  /** Emulator cache state file; null keeps it in memory (the probe: fresh per run). Default: the emulator's own. */
  emulatorStatePath?: string | null;
  /** Longest plugin hook call, ms; default: config `hook_timeout`, else {@link DEFAULT_HOOK_TIMEOUT_MS}. */
  hookTimeoutMs?: number;
  /** The run's abort signal: pending hook calls end with its reason. */
  signal?: AbortSignal;
  /**
   * `--no-store` / `CACHET_NO_STORE=1`: sessions, ledger and emulator cache in
   * memory; the state directory is not created. Day and month limits still
   * count the run's spend in the store (amounts only).
   */
  noStore?: boolean;
  /**
   * The command acts on a stored session only (`cachet compact`, `-c`, a
   * fork): with no store file yet, the store is an empty read-only one and
   * the emulator keeps its state in memory, so the session lookup fails with
   * its own error and nothing is created in the state directory.
   */
  storedSessionOnly?: boolean;
  /** `--max-cost` (USD) and `--allow-unpriced`; the config's `[budget]` limits apply whenever this is given. */
  budget?: { maxCostUsd?: number; allowUnpriced: boolean };
}

/**
 * Opens config, plugins and the store, and the emulator with `emulate`.
 * Plugin load failures are reported through `notice` and do not stop the run.
 * @throws CachetError CONFIG_* for a bad config, STORE for an unusable store.
 */
export async function openRuntime(options: RuntimeOptions, notice: (message: string) => void = () => {}): Promise<Runtime> {
  const env = options.env ?? process.env;
  const paths = statePaths(env);
  const config = await loadConfig(configFile(paths));
  // Loading modules settles promises without turning the event loop, where Bun runs signal handlers: a turn of it
  // between the steps lets SIGINT stop the run here rather than once all of them are done.
  await signalsDelivered();
  const host = await loadPlugins({ config, env });
  await signalsDelivered();
  for (const failure of host.failures) notice(failure.message);
  host.limits = {
    timeoutMs: options.hookTimeoutMs ?? (config.hook_timeout !== undefined ? Math.round(config.hook_timeout * 1000) : DEFAULT_HOOK_TIMEOUT_MS),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const { openStore } = await storeModule();
  const ephemeral = options.noStore === true;
  const file = options.storePath ?? storeFile(paths);
  // A missing file reads as size 0 (so does an empty one: nothing is stored in it either).
  const nothingStored = options.storedSessionOnly === true && !ephemeral && Bun.file(file).size === 0;
  const store = ephemeral ? openStore(":memory:") : openStore(file, { readonly: nothingStored, keepPrivateLater: true });
  await signalsDelivered();
  const emulatorStatePath = ephemeral || nothingStored ? null : options.emulatorStatePath;
  let emulator: { url: string; stop(): Promise<void> } | undefined;
  if (options.emulate) {
    const { startEmulator } = await import("../emulator/index.ts");
    emulator = await startEmulator({ port: 0, env, ...(emulatorStatePath !== undefined ? { statePath: emulatorStatePath } : {}) });
  }
  const price: Runtime["price"] = async (modelRef, report, flags) => {
    const { priceReport } = await import("../meter/index.ts");
    return priceReport(modelRef, report, { config, env, partial: flags?.partial === true });
  };
  let counters: Store | undefined;
  let budget: Budget | undefined;
  if (options.budget) {
    const { Budget, budgetLimits, needsSharedCounters } = await budgetModule();
    const limits = budgetLimits(config, options.budget.maxCostUsd);
    if (limits) {
      // An ephemeral run still counts against the day and month, which other processes share through the store.
      if (ephemeral && needsSharedCounters(limits)) counters = openStore(storeFile(paths));
      budget = new Budget({
        limits,
        counters: counters ?? store,
        allowUnpriced: options.budget.allowUnpriced,
        emulated: options.emulate === true,
        ephemeral,
        price: (ref, usage) => price(ref, { usage, raw: null }),
        outputLimit: async (ref) => {
          const { modelLimits } = await modelLimitsModule();
          return (await modelLimits(ref, paths))?.limit?.output;
        },
        notice,
      });
    }
  }
  // Kept with the plugin host: in a resident process, from one command to the next (see chainMemoryOf).
  const { tokens: memo, chainsByLog, contents } = chainMemoryOf(host);
  const chainsFor = (wire: WireRequest): ChainMemo => {
    const key = wire.segments.find((s) => s.kind !== "system" && s.kind !== "tool" && s.kind !== "schema")?.nodeId ?? "";
    let memo = chainsByLog.get(key);
    if (memo) chainsByLog.delete(key);
    // A previous chain not counted to the end (a turn that ended before its request was counted, a request:before
    // hook's copy of a request only bounded) holds links without their count: taken over, they would keep it.
    if (!memo || (memo.previous !== undefined && memo.total === undefined)) memo = { contents };
    chainsByLog.set(key, memo);
    if (chainsByLog.size > KEPT_CONVERSATIONS) chainsByLog.delete(chainsByLog.keys().next().value!);
    return memo;
  };
  // Each request's chain, and its links as soon as they are hashed (before the token counts are known).
  const chained = new WeakMap<WireRequest, Promise<ChainLink[]>>();
  const hashed = new WeakMap<WireRequest, ChainLink[]>();
  // The first half of counting a chain, once per request: hashing, and the counts the memo knows.
  const lookups = new WeakMap<WireRequest, ChainLookup>();
  const lookUp = (wire: WireRequest): ChainLookup => {
    const done = lookups.get(wire);
    if (done) return done;
    // Trimmed before a request's counts go in, not while: every count this request sets is there until it is counted.
    if (memo.size > KEPT_COUNTS) {
      for (const hash of memo.keys()) {
        if (memo.size <= KEPT_COUNTS) break;
        memo.delete(hash);
      }
    }
    const missing = new Map<string, string>();
    const chains = chainsFor(wire);
    const before = chains.previous;
    const beforeTotal = chains.total;
    const links = prefixChain(
      wire,
      (hash, text) => {
        const known = memo.get(hash);
        if (known === undefined) missing.set(hash, text);
        return known ?? 0;
      },
      chains,
    );
    const unknown = missing.size > 0;
    hashed.set(wire, links);
    const lookup = { links, missing, unknown, stored: !unknown, made: chains.made ?? [], before, beforeTotal, chains };
    lookups.set(wire, lookup);
    return lookup;
  };
  // The counts the store knows of the texts the memo does not (another process counted them, or an earlier run):
  // one statement, asked once per request and only when needed, since a new message's text is rarely there.
  const askStore = (lookup: ChainLookup): void => {
    if (lookup.stored) return;
    lookup.stored = true;
    const { missing } = lookup;
    if (missing.size === 0) return;
    for (const [hash, tokens] of store.nodeTokens([...missing.keys()])) {
      memo.set(hash, tokens);
      missing.delete(hash);
    }
  };
  const countChain = async (wire: WireRequest): Promise<ChainLink[]> => {
    const lookup = lookUp(wire);
    askStore(lookup);
    const { links, missing, unknown, made, before, beforeTotal, chains } = lookup;
    if (missing.size > 0) {
      const { countOrEstimate, loadO200k } = await tokenizerModule();
      const countTokens = await loadO200k();
      const counted: [string, number][] = [];
      for (const [hash, text] of missing) {
        const tokens = countOrEstimate(text, countTokens);
        memo.set(hash, tokens);
        counted.push([hash, tokens]);
      }
      missing.clear();
      try {
        store.saveNodeTokens(counted);
      } catch {
        // Only a memo: a store that refuses writes (disk full) costs a recount next time, not the turn.
      }
    }
    // Only links made by this call can lack their count: the ones taken over from the previous chain have it.
    if (unknown) for (const i of made) if (links[i]!.tokens === 0) links[i]!.tokens = memo.get(links[i]!.content) ?? 0;
    // The total follows the links that changed: every other place holds the previous chain's own link.
    if (before !== undefined && beforeTotal !== undefined) {
      let total = beforeTotal;
      for (const i of made) total += links[i]!.tokens - (before[i]?.tokens ?? 0);
      for (let i = links.length; i < before.length; i++) total -= before[i]!.tokens;
      rememberTokenTotal(links, total);
    }
    // Unless a later call of the conversation began meanwhile (its previous chain is then that call's).
    if (chains.previous === links) chains.total = tokenTotal(links);
    return links;
  };
  const chainOf = (wire: WireRequest): Promise<ChainLink[]> => {
    let chain = chained.get(wire);
    if (chain === undefined) {
      chain = countChain(wire);
      chained.set(wire, chain);
    }
    return chain;
  };
  const responses = watchResponses(options.fetch ?? fetch);
  // An older cachet's store is made private once the first request has left, or at close without one:
  // node:fs (milliseconds to load) stays off the request's way. One that cannot be is reported, not refused.
  let keptPrivate = ephemeral || nothingStored;
  const keepPrivate = () => {
    if (keptPrivate) return;
    keptPrivate = true;
    try {
      store.keepPrivate();
    } catch (error) {
      notice(`cannot make the session store ${file} private (owner-only): ${(error as Error).message}`);
    }
  };
  void responses.nextRequest().then(keepPrivate);
  // A turn asks for its model's catalog entry more than once (the output limit, the generation and window checks,
  // the compaction check): one read each.
  const entries = new Map<string, Promise<ModelLimits | undefined>>();
  const catalogEntry = (catalogRef: string): Promise<ModelLimits | undefined> => {
    let entry = entries.get(catalogRef);
    if (entry === undefined) {
      entry = modelLimitsModule().then(({ modelLimits }) => modelLimits(catalogRef, paths));
      entries.set(catalogRef, entry);
    }
    return entry;
  };
  return {
    catalogEntry,
    async modelLimits(catalogRef) {
      const limit = (await catalogEntry(catalogRef))?.limit;
      return { ...(limit?.context !== undefined ? { context: limit.context } : {}), ...(limit?.output !== undefined ? { output: limit.output } : {}) };
    },
    config,
    host,
    store,
    env,
    // An injected fetch (tests) is this runtime's alone.
    fetch: options.fetch === undefined ? runtimeFetch(responses.fetch, env) : responses.fetch,
    responsesSeen: responses.seen,
    nextRequestSent: responses.nextRequest,
    preconnect(origin) {
      if (options.fetch === undefined) fetch.preconnect(origin);
    },
    emulatorUrl: emulator?.url,
    ephemeral,
    budget,
    price,
    prefixHashes(wire) {
      return hashed.get(wire) ?? prefixChain(wire, () => 0, { contents });
    },
    chainOf,
    async chainBound(wire, stored = false) {
      const lookup = lookUp(wire);
      if (stored) askStore(lookup);
      const { links, missing, made, before, beforeTotal } = lookup;
      if (missing.size === 0) return tokenTotal(await chainOf(wire));
      const { tokenBound } = await tokenizerModule();
      const count = (link: ChainLink) => {
        const text = missing.get(link.content);
        return text === undefined ? (memo.get(link.content) ?? link.tokens) : tokenBound(text);
      };
      if (before === undefined || beforeTotal === undefined) {
        let tokens = 0;
        for (const link of links) tokens += count(link);
        return tokens;
      }
      // As countChain sums: from the previous chain's total, over the links this request made (O(new nodes)).
      let tokens = beforeTotal;
      for (const i of made) tokens += count(links[i]!) - (before[i]?.tokens ?? 0);
      for (let i = links.length; i < before.length; i++) tokens -= before[i]!.tokens;
      return tokens;
    },
    async checkAnswer(protocol, schema, content) {
      const text = content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("");
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw new CachetError("ANSWER_INVALID", "the answer is not JSON although --schema was given", {
          hint: ephemeral ? "try again, or simplify the schema" : "the raw answer is stored in the session (`cachet export`); try again, or simplify the schema",
        });
      }
      const { fromWireAnswer, validateAnswer } = await import("../schema/index.ts");
      const { schemaTargetOfProtocol } = await import("./model-resolution.ts");
      const mapped = fromWireAnswer(schemaTargetOfProtocol(protocol), schema.schema, value);
      const verdict = await validateAnswer(schema.schema, mapped);
      if (!verdict.ok) {
        throw new CachetError("ANSWER_INVALID", `the answer does not match the schema: ${verdict.errors.slice(0, 3).join("; ")}`, {
          hint: ephemeral ? "try again, or simplify the schema (nothing was stored: --no-store)" : "the raw answer is stored in the session (`cachet export`)",
        });
      }
      return mapped;
    },
    async close() {
      await emulator?.stop();
      keepPrivate();
      store.close();
      counters?.close();
    },
  };
}

/**
 * What a runtime remembers of the requests it hashed: token counts by content hash, each conversation's last
 * chain (a ChainMemo, by the node id of its first log element) and the content hashes of wire elements by
 * identity. Kept with the plugin host, as the render memo is (src/plugin/render-memo.ts, a plugin service): the
 * resident daemon keeps its built-in host from one command to the next (src/plugin/loader.ts keepBuiltinHost),
 * and the render memo hands the next command the very wire elements of the last one, so with this memory a turn
 * neither hashes nor counts again what the turn before it did. Only what cannot go stale is kept (a count or a
 * hash is a function of the content; a previous chain is taken over only once all its links are counted), and a
 * bounded amount of it: {@link KEPT_COUNTS} counts, {@link KEPT_CONVERSATIONS} chains.
 */
interface ChainMemory {
  tokens: Map<string, number>;
  chainsByLog: Map<string, ChainMemo>;
  contents: WeakMap<object, string>;
}

/** Counts a chain memory keeps (the store keeps as many: src/session/token-memo.ts). */
const KEPT_COUNTS = 1 << 16;
/** Conversations whose last chain a chain memory keeps: several sessions served in turn each keep theirs. */
const KEPT_CONVERSATIONS = 16;

const chainMemories = new WeakMap<PluginHost, ChainMemory>();

/** The chain memory kept with `host` ({@link ChainMemory}), made empty with it. */
function chainMemoryOf(host: PluginHost): ChainMemory {
  let memory = chainMemories.get(host);
  if (memory === undefined) chainMemories.set(host, (memory = { tokens: new Map(), chainsByLog: new Map(), contents: new WeakMap() }));
  return memory;
}

/** A request's chain, hashed, with what its token counts still lack. */
interface ChainLookup {
  links: ChainLink[];
  /** Texts no memo knows the count of, by content hash: counted by the tokenizer. */
  missing: Map<string, string>;
  /** Whether the store was asked for the counts of `missing` (nothing to ask counts as asked). */
  stored: boolean;
  /** Whether any link lacked its count after hashing (those made by this request are filled in once counted). */
  unknown: boolean;
  made: number[];
  before: ChainLink[] | undefined;
  beforeTotal: number | undefined;
  chains: ChainMemo;
}
