/**
 * Turns a proxied exchange into a ledger row of a recorded session: the
 * request's wire hash chain (src/wire), its session (session-finder.ts), the
 * usage read from the response by the provider's plugin (usage-reader.ts),
 * priced with the catalog (src/meter; a stream that did not finish, as a
 * lower bound of the usage it reported before its end, as a run records one),
 * its cacheable maximum against the
 * session's previous request (src/wire/divergence.ts), stored with
 * Store.recordRequest plus the exchange's own row (src/session/recorded.ts).
 *
 * Exchanges are read in parallel (hashing, usage) and assigned to sessions
 * and stored one at a time, in the order they finished, so the requests of a
 * session are compared in order. Recording never delays the client: it
 * starts once the response has been handed over.
 */
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import type { Config } from "../config.ts";
import { newId } from "../context/ids.ts";
import type { PluginHost } from "../plugin/host.ts";
import { UNBILLED_COST, unbilledExchange } from "../run/attempt-billing.ts";
import type { WireRequest } from "../plugin/wire.ts";
import { UNKNOWN_USAGE } from "../plugin/usage.ts";
import type { RecordedExchange, RecordedStore } from "../session/recorded.ts";
import type { Store } from "../session/store.ts";
import type { ChainLink, LedgerRow, RequestStatus } from "../session/types.ts";
import { DEFAULT_CACHE_RULES, cacheableMaximum } from "../wire/divergence.ts";
import { hashBytes } from "../wire/hash.ts";
import { chainMemo, prefixChain } from "../wire/prefix-chain.ts";
import { HEAD_KINDS, requestSegments } from "../wire/request-segments.ts";
import type { ProxyRoute } from "./routes.ts";
import { redact } from "./secrets.ts";
import { affinityKeyOf, SessionFinder, type SessionVia } from "./session-finder.ts";
import type { ReadResponse, UsageReader } from "./usage-reader.ts";

/** One exchange as the server saw it. */
export interface CapturedExchange {
  route: ProxyRoute;
  /** Path without credentials. */
  path: string;
  /** The client's request headers (credentials are read only to cut them out of what is kept). */
  headers: Headers;
  /** Credential values of the request (secrets.ts). */
  secrets: string[];
  requestBytes: Uint8Array;
  /** Unix epoch ms: request received, first response byte, last response byte. */
  startedAt: number;
  firstByteAt: number | null;
  finishedAt: number;
  /** Upstream status; null when the upstream could not be reached. */
  httpStatus: number | null;
  responseHeaders: Headers | null;
  /** The response body bytes as forwarded to the client (possibly content-encoded). */
  responseBytes: Uint8Array | null;
  /** The client went away before the response was complete. */
  clientAborted: boolean;
  /** A transport failure (upstream unreachable, reset), already without credentials. */
  transportError: string | null;
}

/** What {@link Recorder} needs. */
export interface RecorderOptions {
  store: Store;
  recorded: RecordedStore;
  host: PluginHost;
  config: Config;
  env: Record<string, string | undefined>;
  reader: UsageReader;
  /** Keep request and response bodies (--keep-bodies). */
  keepBodies: boolean;
  /** Counts tokens of an element's estimate text (o200k), memoized here per content hash; loaded while the proxy already serves. */
  tokenizer: Promise<(text: string) => number>;
  /**
   * Prices a report for `catalogProvider/model` (src/meter priceUsageReport with the catalog in force): the cost, what
   * it would have cost uncached and why the cost is an estimate (null when exact), all stored with the ledger row as a
   * turn stores them (src/session/ledger-figures.ts), so reading the ledger later prices nothing and writes nothing.
   * `partial`: the usage of a stream that ended unfinished, priced as a flagged lower bound (src/meter priceReport).
   */
  price: (modelRef: string, report: NonNullable<ReadResponse["report"]>, partial: boolean) => RecordedPrice;
  /** Called with a one-line notice (recording failures); never with credentials. */
  notice?: (message: string) => void;
  /** Called after each exchange is stored. */
  onRecorded?: (row: LedgerRow, exchange: RecordedExchange) => void;
}

const UTF8 = new TextDecoder();
const UTF8_OUT = new TextEncoder();

/** Token counts remembered per content hash before the memo is cleared. */
const TOKEN_MEMO_LIMIT = 200_000;

/** Records exchanges; `idle()` resolves when every captured exchange is stored. */
export class Recorder {
  private readonly finder = new SessionFinder();
  private readonly last = new Map<string, LedgerRow>();
  private readonly tokens = new Map<string, number>();
  // Shared by every request: a link is reused only where node id and content match, whichever session it came from.
  private readonly memo = chainMemo();
  private queue: Promise<void> = Promise.resolve();
  private pending: PendingWrite[] = [];
  private flushing: Promise<void> | undefined;
  /** Ledger rows stored so far (for the proxy's own report). */
  recordedCount = 0;

  constructor(private readonly o: RecorderOptions) {}

  /**
   * Remembers the most recently updated recorded sessions (their affinity key
   * and latest request), so a client's next request after a restart of the
   * proxy joins its session instead of starting a new one.
   */
  warm(sessions: number): void {
    // Oldest first, so where two sessions share a log prefix the most recent one wins.
    for (const session of this.o.recorded.sessions(sessions).reverse()) {
      const row = this.o.store.lastRequest(session.id);
      if (!row) continue;
      // A session without a key of its own carries its id as affinity key.
      this.finder.remember(session.id, session.affinityKey === session.id ? undefined : session.affinityKey, row.provider, row.chain);
      this.last.set(session.id, row);
    }
  }

  /** Starts reading an exchange; storing follows in finishing order. */
  capture(exchange: CapturedExchange): void {
    const prepared = this.prepare(exchange);
    this.queue = this.queue.then(async () => {
      try {
        this.store(exchange, await prepared);
      } catch (error) {
        this.o.notice?.(`cachet proxy: could not record ${exchange.path}: ${redact(error instanceof Error ? error.message : String(error), exchange.secrets)}`);
      }
    });
  }

  /** Resolves once every exchange captured so far is stored. */
  async idle(): Promise<void> {
    await this.queue;
    await this.flushing;
  }

  private async prepare(e: CapturedExchange): Promise<Prepared> {
    let body: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(UTF8.decode(e.requestBytes)) as unknown;
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // Not JSON: the upstream judged it (and its answer is recorded); there is no chain to keep.
    }
    const countTokens = await this.o.tokenizer;
    const chain = body ? this.chainOf({ protocol: e.route.protocol, body, headers: {}, segments: requestSegments(e.route.protocol, body) }, countTokens) : [];
    const model = e.route.model ?? (typeof body?.model === "string" ? body.model : "unknown");
    const streaming = e.route.streamingEndpoint || body?.stream === true;
    let read: ReadResponse | undefined;
    const decoded = e.responseBytes ? decode(e.responseBytes, e.responseHeaders) : null;
    if (e.httpStatus !== null && e.httpStatus >= 200 && e.httpStatus < 300 && decoded) {
      if (!streaming && /json/i.test(e.responseHeaders?.get("content-type") ?? "")) {
        read = this.o.reader.readJson(e.route.provider, e.route.protocol, UTF8.decode(decoded));
      } else {
        const headers = new Headers(e.responseHeaders ?? undefined);
        headers.delete("content-encoding");
        headers.delete("content-length");
        read = await this.o.reader.read(e.route.provider, e.route.protocol, model, streaming, new Response(decoded, { status: e.httpStatus, headers }));
      }
    }
    const spec = this.o.host.providers.get(e.route.provider)?.value;
    const priced = read?.report ? this.o.price(`${spec?.catalogId ?? e.route.provider}/${model}`, read.report, read.lowerBound) : unbilled(e) ? UNBILLED : UNPRICED;
    return { body, chain, model, streaming, read, decoded, priced };
  }

  /** Synchronous: session choice and writes happen one exchange at a time. */
  private store(e: CapturedExchange, p: Prepared): void {
    const key = p.body ? affinityKeyOf(e.route.protocol, p.body, e.headers) : undefined;
    const found = this.finder.find(key, e.route.provider, p.chain);
    const client = e.headers.get("user-agent");
    const model = `${e.route.provider}/${p.model}`;
    const sessionId = found.sessionId ?? newId("s");
    const newSession = found.sessionId ? undefined : { model, affinityKey: key?.value, client, now: e.startedAt };
    this.finder.remember(sessionId, key?.value, e.route.provider, p.chain);
    const previous = this.last.get(sessionId);
    const { status, error } = outcome(e, p.read, p.streaming);
    const usage = p.read?.report?.usage ?? { ...UNKNOWN_USAGE };
    const wireKey = key?.via === "affinity-key" ? key.value : null;
    const row: LedgerRow = {
      id: newId("r"),
      sessionId,
      ...(p.read?.lowerBound ? { usageLowerBound: true } : {}),
      prefixVersion: previous ? previous.prefixVersion + (headOf(previous.chain) === headOf(p.chain) ? 0 : 1) : 1,
      role: "main",
      provider: e.route.provider,
      model: p.model,
      protocol: e.route.protocol,
      startedAt: e.startedAt,
      firstTokenAt: e.firstByteAt,
      finishedAt: e.finishedAt,
      latencyMs: e.finishedAt - e.startedAt,
      ttftMs: e.firstByteAt === null ? null : e.firstByteAt - e.startedAt,
      outputTps: usage.output !== undefined && e.firstByteAt !== null && e.finishedAt > e.firstByteAt ? (usage.output * 1000) / (e.finishedAt - e.firstByteAt) : null,
      usage,
      rawUsage: p.read?.report?.raw ?? null,
      costUsd: p.priced.costUsd,
      noCacheCostUsd: p.priced.noCacheCostUsd,
      costEstimate: p.priced.costEstimate,
      providerCostUsd: p.read?.report?.providerCostUsd ?? null,
      // Kept in recorded_exchanges: a replayed or emulated id may repeat, and the ledger refuses a repeated id.
      providerRequestId: null,
      affinityKey: wireKey,
      cacheMode: "auto",
      cacheTtl: "5m",
      chain: p.chain,
      cacheableMax: null,
      expectedCacheRead: null,
      status,
      error: error === null ? null : redact(error, e.secrets).slice(0, 500),
      messageId: null,
    };
    const rules = this.o.host.providers.get(e.route.provider)?.value.cacheRules?.(p.model) ?? DEFAULT_CACHE_RULES;
    row.cacheableMax = previous ? cacheableMaximum(previous, row, rules) : null;
    this.last.set(sessionId, row);
    const exchange: RecordedExchange = {
      requestId: row.id,
      httpStatus: e.httpStatus,
      path: e.path,
      client,
      sessionVia: found.sessionId ? found.via : ("new" satisfies SessionVia),
      providerRequestId: p.read?.requestId ?? null,
      requestHash: hashBytes(e.requestBytes),
      responseHash: e.responseBytes ? hashBytes(e.responseBytes) : null,
      requestBody: this.o.keepBodies ? redact(UTF8.decode(e.requestBytes), e.secrets) : null,
      responseBody: this.o.keepBodies && p.decoded ? UTF8_OUT.encode(redact(UTF8.decode(p.decoded), e.secrets)) : null,
    };
    this.pending.push({ newSession, row, exchange, session: { id: sessionId, model, at: e.finishedAt } });
    this.flushing ??= new Promise((resolve) =>
      setImmediate(() => {
        this.flushing = undefined;
        this.flush();
        resolve();
      }),
    );
  }

  /** Writes what was recorded since the last flush in one transaction: one commit per burst, not per exchange. */
  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    try {
      this.o.store.transaction(() => {
        const touched = new Map<string, PendingWrite["session"]>();
        for (const w of batch) {
          if (w.newSession) this.o.recorded.createSession(w.session.id, w.newSession);
          this.o.store.recordRequest(w.row);
          this.o.recorded.saveExchange(w.exchange);
          touched.set(w.session.id, w.session);
        }
        for (const s of touched.values()) this.o.recorded.touchSession(s.id, s.model, s.at);
      });
    } catch (error) {
      this.o.notice?.(`cachet proxy: ${batch.length} exchange(s) could not be stored: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.recordedCount += batch.length;
    for (const w of batch) this.o.onRecorded?.(w.row, w.exchange);
  }

  private chainOf(wire: WireRequest, countTokens: (text: string) => number): ChainLink[] {
    if (this.tokens.size > TOKEN_MEMO_LIMIT) this.tokens.clear();
    return prefixChain(
      wire,
      (hash, text) => {
        let n = this.tokens.get(hash);
        if (n === undefined) {
          n = countTokens(text);
          this.tokens.set(hash, n);
        }
        return n;
      },
      this.memo,
    );
  }
}

/** One exchange's writes, in order: its session when new, its ledger row, its exchange row. */
interface PendingWrite {
  newSession: { model: string; affinityKey: string | undefined; client: string | null; now: number } | undefined;
  row: LedgerRow;
  exchange: RecordedExchange;
  session: { id: string; model: string; at: number };
}

interface Prepared {
  body: Record<string, unknown> | undefined;
  chain: ChainLink[];
  model: string;
  /** The request asked for a stream (a streaming endpoint or `stream: true`). */
  streaming: boolean;
  read: ReadResponse | undefined;
  decoded: Uint8Array | null;
  priced: RecordedPrice;
}

/** What {@link RecorderOptions.price} gives for one exchange; USD, null when unknown. */
export interface RecordedPrice {
  costUsd: number | null;
  noCacheCostUsd: number | null;
  costEstimate: string | null;
}

/** The price of an exchange whose response carried no usage: unknown. */
const UNPRICED: RecordedPrice = { costUsd: null, noCacheCostUsd: null, costEstimate: null };

/** The price of an exchange the provider provably did not bill: exactly $0, as a run records one. */
const UNBILLED: RecordedPrice = { ...UNBILLED_COST, costEstimate: null };

/**
 * Whether an exchange that carried no usage was provably not billed, decided as a run decides it for its attempts
 * (src/run/attempt-billing.ts): refused with an HTTP error status, or no response at all because the upstream
 * connection failed (refused, reset before any byte) while the client was still waiting.
 */
function unbilled(e: CapturedExchange): boolean {
  return unbilledExchange({
    // An error status's body is the provider's refusal, never an answer; a 2xx body is (or begins) one.
    answered: e.httpStatus !== null && e.httpStatus < 400 && (e.responseBytes?.length ?? 0) > 0,
    status: e.httpStatus ?? undefined,
    connectionFailed: e.transportError !== null,
    aborted: e.clientAborted,
  });
}

/** The ledger status and error text of an exchange. */
function outcome(e: CapturedExchange, read: ReadResponse | undefined, streaming: boolean): { status: RequestStatus; error: string | null } {
  if (e.httpStatus === null) return { status: "error", error: e.transportError ?? (e.clientAborted ? "client disconnected before the upstream answered" : "no answer from the upstream") };
  if (e.httpStatus >= 300) return { status: "error", error: `HTTP ${e.httpStatus}${errorMessage(e)}` };
  const partial = read?.content === true || (e.responseBytes?.length ?? 0) > 0;
  // Unfinished with no usage reported yet (OpenAI reports it only at the end of a stream, any provider at the end of a
  // JSON body): the row says why its cost is unknown. A whole JSON body without usage is no unfinished answer.
  const usage = read?.report ? "" : "; the provider had reported no usage yet, so the cost is unknown";
  if (e.clientAborted) return { status: partial ? "incomplete" : "error", error: `client disconnected mid-response; the upstream request was cancelled${usage}` };
  if (e.transportError) return { status: partial ? "incomplete" : "error", error: `${e.transportError}${usage}` };
  if (read?.error) return { status: read.content ? "incomplete" : "error", error: `${read.error}${streaming ? usage : ""}` };
  return { status: "ok", error: null };
}

/** `: message` from a provider's JSON error body, or empty. */
function errorMessage(e: CapturedExchange): string {
  if (!e.responseBytes) return "";
  try {
    const decoded = decode(e.responseBytes, e.responseHeaders);
    const body = JSON.parse(UTF8.decode(decoded)) as { error?: { message?: unknown; type?: unknown; status?: unknown } | unknown[] };
    const error = (Array.isArray(body) ? (body[0] as { error?: unknown })?.error : body.error) as { message?: unknown; type?: unknown; status?: unknown } | undefined;
    const kind = error?.type ?? error?.status;
    const message = typeof error?.message === "string" ? error.message : "";
    return `${typeof kind === "string" ? ` ${kind}` : ""}${message ? `: ${message}` : ""}`;
  } catch {
    return "";
  }
}

/** The body without its content encoding (gzip, deflate, br, zstd), as the SDK would read it. */
function decode(bytes: Uint8Array, headers: Headers | null): Uint8Array {
  const encoding = headers?.get("content-encoding")?.trim().toLowerCase();
  try {
    if (encoding === "gzip" || encoding === "x-gzip") return gunzipSync(bytes);
    if (encoding === "deflate") return inflateSync(bytes);
    if (encoding === "br") return brotliDecompressSync(bytes);
    if (encoding === "zstd") return Bun.zstdDecompressSync(bytes);
  } catch {
    // A body that does not decode is read as it is; the adapter then reports it unreadable.
  }
  return bytes;
}

/** Prefix hash at the end of the request's head (system, tools, schema), or "" without one. */
function headOf(chain: readonly ChainLink[]): string {
  let head = "";
  for (const link of chain) {
    if (!HEAD_KINDS.has(link.kind)) break;
    head = link.prefix;
  }
  return head;
}
