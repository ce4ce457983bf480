/**
 * `cachet export --otlp URL`: sends the ledger rows a destination has not
 * received yet as OTLP spans, in batches, and moves the destination's
 * watermark (the last ledger rowid it acknowledged) after each acknowledged
 * batch. Re-running sends nothing new; a failed batch leaves its rows for the
 * next export. One exporter per destination at a time (a lease in the store),
 * so two background exports after two concurrent turns never send a row twice.
 */
import type { Database } from "bun:sqlite";
import type { Message } from "../context/types.ts";
import { newId } from "../context/ids.ts";
import { CachetError } from "../errors.ts";
import { type RequestRow, toLedgerRow } from "../session/rows.ts";
import type { Store } from "../session/store.ts";
import { type CallContent, ledgerSpan } from "./ledger-span.ts";
import { OTLP_CONTENT_TYPE, type OtlpFormat, encodeSpans } from "./otlp-encode.ts";
import { joinParts } from "../session/message-parts.ts";

/** Options of {@link exportOtlp}. */
export interface OtlpExportOptions {
  /** Collector URL; a bare origin (no path) gets the OTLP/HTTP traces path `/v1/traces`. */
  url: string;
  format: OtlpFormat;
  /** Include prompt and answer text (`gen_ai.input.messages`, `gen_ai.output.messages`). */
  withContent: boolean;
  /** Spans per request (default 256). */
  batchSize?: number;
  /** Longest wait for the collector per batch, ms (default 10,000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** What an export did. */
export interface OtlpExportResult {
  /** The traces endpoint the spans went to. */
  endpoint: string;
  /** Ledger rows sent and acknowledged by this run. */
  exported: number;
  /** True when another export to the same destination was running, so this one sent nothing. */
  busy: boolean;
}

/** A lease older than this is taken over (its exporter died). */
const LEASE_MS = 60_000;

/**
 * Exports the ledger rows recorded since the destination's watermark.
 * @throws CachetError EXPORT_FAILED naming the endpoint and the collector's answer
 *   (the rows not acknowledged stay for the next export); BAD_FLAG for a URL that is not http(s)
 */
export async function exportOtlp(store: Store, options: OtlpExportOptions): Promise<OtlpExportResult> {
  const endpoint = tracesEndpoint(options.url);
  const token = newId("x");
  if (!takeLease(store, endpoint, token)) return { endpoint, exported: 0, busy: true };
  let exported = 0;
  try {
    for (;;) {
      const batch = pendingRows(store.database, endpoint, options.batchSize ?? 256);
      if (batch.length === 0) break;
      const spans = batch.map((row) => ledgerSpan(toLedgerRow(row, []), options.withContent ? callContent(store.database, row) : undefined));
      await post(endpoint, encodeSpans(spans, options.format), options);
      advance(store, endpoint, token, batch.at(-1)!.rowid);
      exported += batch.length;
    }
  } finally {
    releaseLease(store, endpoint, token);
  }
  return { endpoint, exported, busy: false };
}

/**
 * The OTLP/HTTP traces endpoint for a user's URL: a URL with a path is used
 * as given; a bare origin gets `/v1/traces`.
 * @see https://opentelemetry.io/docs/specs/otel/protocol/exporter/#endpoint-urls-for-otlphttp
 * @throws CachetError BAD_FLAG when the URL is not http(s)
 */
export function tracesEndpoint(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CachetError("BAD_FLAG", `--otlp ${url}: not a URL`, { hint: "e.g. --otlp http://localhost:4318 (an OTLP/HTTP collector)" });
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new CachetError("BAD_FLAG", `--otlp ${url}: only http and https collectors are supported (OTLP/HTTP)`, { hint: "e.g. --otlp http://localhost:4318" });
  }
  if (parsed.pathname === "/" || parsed.pathname === "") parsed.pathname = "/v1/traces";
  return parsed.toString();
}

type PendingRow = RequestRow & { rowid: number };

function pendingRows(db: Database, endpoint: string, limit: number): PendingRow[] {
  const mark = db.query("SELECT last_rowid FROM export_watermarks WHERE destination = ?").get(endpoint) as { last_rowid: number } | null;
  return db.query("SELECT rowid, * FROM requests WHERE rowid > ? ORDER BY rowid LIMIT ?").all(mark?.last_rowid ?? 0, limit) as PendingRow[];
}

function callContent(db: Database, row: RequestRow): CallContent {
  if (!row.message_id) return {};
  const answer = db.query("SELECT session_id, seq, role, content, parts FROM messages WHERE id = ?").get(row.message_id) as { session_id: string; seq: number; role: string; content: string; parts: number } | null;
  if (!answer) return {};
  const prompt = db.query("SELECT id, role, content, parts FROM messages WHERE session_id = ? AND seq = ?").get(answer.session_id, answer.seq - 1) as { id: string; role: string; content: string; parts: number } | null;
  const output: Message = { id: row.message_id, role: "assistant", content: JSON.parse(joinParts(db, answer.session_id, row.message_id, answer.content, answer.parts)) };
  if (prompt?.role !== "user") return { output };
  return { output, input: { id: prompt.id, role: "user", content: JSON.parse(joinParts(db, answer.session_id, prompt.id, prompt.content, prompt.parts)) } };
}

async function post(endpoint: string, body: Uint8Array, options: OtlpExportOptions): Promise<void> {
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(endpoint, {
      method: "POST",
      headers: { "content-type": OTLP_CONTENT_TYPE[options.format] },
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  } catch (cause) {
    // Bun's text for a refused or unreachable host ("Unable to connect. Is the computer able to access the url?") is
    // said by its code alone, as a provider's is.
    const code = (cause as { code?: unknown }).code;
    const why = typeof code === "string" && /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|ConnectionRefused|FailedToOpenSocket)$/.test(code) ? `cannot connect (${code})` : (cause as Error).message;
    throw new CachetError("EXPORT_FAILED", `OTLP export to ${endpoint} failed: ${why}`, {
      hint: "check that the collector is running and reachable; the rows not sent go with the next export",
      cause,
    });
  }
  if (!response.ok) {
    const detail = (await response.text().catch(() => "")).slice(0, 200);
    throw new CachetError("EXPORT_FAILED", `OTLP export to ${endpoint} failed: HTTP ${response.status}${detail ? `: ${detail}` : ""}`, {
      hint: "check the URL (an OTLP/HTTP traces endpoint) and the collector's log; the rows not sent go with the next export",
    });
  }
  await response.arrayBuffer().catch(() => undefined);
}

function takeLease(store: Store, endpoint: string, token: string): boolean {
  return store.transaction((db) => {
    const now = Date.now();
    const row = db.query("SELECT lease_token, lease_expires FROM export_watermarks WHERE destination = ?").get(endpoint) as { lease_token: string | null; lease_expires: number | null } | null;
    if (row?.lease_token && (row.lease_expires ?? 0) > now) return false;
    db.query(
      "INSERT INTO export_watermarks (destination, last_rowid, lease_token, lease_expires) VALUES (?1, 0, ?2, ?3) ON CONFLICT (destination) DO UPDATE SET lease_token = ?2, lease_expires = ?3",
    ).run(endpoint, token, now + LEASE_MS);
    return true;
  });
}

function advance(store: Store, endpoint: string, token: string, rowid: number): void {
  store.transaction((db) => {
    // Renewing the lease with each batch: a long export is not taken over while it makes progress.
    db.query("UPDATE export_watermarks SET last_rowid = ?, lease_expires = ? WHERE destination = ? AND lease_token = ?").run(rowid, Date.now() + LEASE_MS, endpoint, token);
  });
}

function releaseLease(store: Store, endpoint: string, token: string): void {
  store.transaction((db) => {
    db.query("UPDATE export_watermarks SET lease_token = NULL, lease_expires = NULL WHERE destination = ? AND lease_token = ?").run(endpoint, token);
  });
}
