/**
 * What `cachet sessions` and `cachet export` print, as pure functions of the
 * store's records, so tests call them without a terminal.
 */
import { printable } from "../printable.ts";
import type { Block, SummaryState } from "../context/types.ts";
import type { SessionSource } from "./recorded.ts";
import type { LogEntry, Store } from "./store.ts";
import type { LedgerRow, PrefixVersion, SessionRecord } from "./types.ts";

/** A session with the counts `cachet sessions list` shows. */
export interface SessionListing extends SessionRecord {
  /** Messages in the visible log (a fork counts the parent's shared ones). */
  messages: number;
  /** Ledger rows. */
  requests: number;
  /** `own` (cachet's), or `recorded` by `cachet proxy`. */
  source: SessionSource;
  /** The client (user-agent) of a recorded session; null for cachet's own. */
  client: string | null;
}

/** Where a session came from (src/session/recorded.ts); cachet's own when unknown. */
export type SessionOrigin = (sessionId: string) => { source: SessionSource; client: string | null } | undefined;

/** Everything `cachet sessions show` prints about one session. */
export interface SessionDetails {
  session: SessionRecord;
  prefixes: PrefixVersion[];
  summary: SummaryState;
  messages: LogEntry[];
  requests: LedgerRow[];
}

/** Every session with its counts and origin, most recently updated first. */
export function listSessions(store: Store, origin: SessionOrigin = () => undefined): SessionListing[] {
  return store.listSessions().map((session) => ({ ...session, ...store.sessionCounts(session.id), source: "own", client: null, ...origin(session.id) }));
}

/**
 * One session's prefix versions, summary, visible log and ledger rows.
 * @throws CachetError SESSION_NOT_FOUND
 */
export function sessionDetails(store: Store, idOrName: string): SessionDetails {
  const session = store.findSession(idOrName);
  return {
    session,
    prefixes: store.prefixVersions(session.id),
    summary: store.summary(session.id),
    messages: store.logEntries(session.id),
    requests: store.requests(session.id),
  };
}

/**
 * `cachet export` lines, in order: one `session` line, the `prefix` versions,
 * a `summary` line when the session has summary state, the visible log's
 * `message` lines (with the owning session and sequence number; a fork's
 * shared messages name the parent), then the ledger's `request` lines.
 * Each line is one JSON object `{ "type": ..., <type>: {...} }`; unknown usage
 * counts are absent.
 */
export function exportLines(details: SessionDetails): string[] {
  const lines: unknown[] = [{ type: "session", session: details.session }];
  for (const prefix of details.prefixes) lines.push({ type: "prefix", prefix });
  if (details.summary.messages.length > 0 || details.summary.coversThrough !== null) lines.push({ type: "summary", summary: details.summary });
  for (const entry of details.messages) lines.push({ type: "message", sessionId: entry.sessionId, seq: entry.seq, createdAt: entry.createdAt, message: entry.message });
  for (const request of details.requests) lines.push({ type: "request", request });
  return lines.map((line) => JSON.stringify(line));
}

/** The human-readable session list, one line per session, with a header. */
export function formatSessionList(listings: SessionListing[]): string {
  if (listings.length === 0) return "no sessions yet\n";
  const rows = [["ID", "NAME", "MODEL", "MSGS", "REQS", "UPDATED", "FORK OF", "SOURCE"]];
  for (const s of listings) {
    rows.push([s.id, s.name ?? "-", s.model, String(s.messages), String(s.requests), isoMinute(s.updatedAt), s.parentId ?? "-", s.source === "recorded" ? `recorded (${s.client ?? "unknown client"})` : "own"]);
  }
  return table(rows);
}

/** The human-readable `cachet sessions show`. */
export function formatSessionDetails(d: SessionDetails): string {
  const s = d.session;
  const out: string[] = [
    `session   ${s.id}${s.name ? ` (${printable(s.name)})` : ""}`,
    `model     ${s.model}`,
    `affinity  ${s.affinityKey}`,
    `created   ${isoMinute(s.createdAt)}   updated ${isoMinute(s.updatedAt)}`,
  ];
  if (s.parentId) out.push(`fork of   ${s.parentId} after message ${s.forkPoint ?? "(none)"}`);
  out.push("", "Stable prefix versions:");
  for (const p of d.prefixes) {
    const tools = p.prefix.tools.map((t) => t.name).join(", ") || "none";
    out.push(printable(`  v${p.version}  ${isoMinute(p.createdAt)}  ${p.prefix.fingerprint}  ${p.reason ?? "first version"}  (${p.prefix.system.length} system part(s); tools: ${tools}${p.prefix.schema ? `; schema: ${p.prefix.schema.name}` : ""})`));
  }
  if (d.summary.messages.length > 0) out.push("", `Summary: ${d.summary.messages.length} message(s), covering through ${d.summary.coversThrough ?? "-"}`);
  out.push("", `Messages (${d.messages.length}):`);
  for (const e of d.messages) {
    const owner = e.sessionId === s.id ? "" : ` [${e.sessionId}]`;
    out.push(`  ${String(e.seq).padStart(4)} ${e.message.role.padEnd(9)} ${e.message.id}${owner}${e.message.incomplete ? " (incomplete)" : ""}  ${preview(e.message.content)}`);
  }
  out.push("", `Requests (${d.requests.length}):`);
  if (d.requests.length > 0) {
    const rows = [["ID", "ROLE", "MODEL", "STATUS", "INPUT", "CACHE READ", "CACHE WRITE", "OUTPUT", "COST USD"]];
    for (const r of d.requests) {
      const write = r.usage.cacheWrite5m === undefined && r.usage.cacheWrite1h === undefined ? undefined : (r.usage.cacheWrite5m ?? 0) + (r.usage.cacheWrite1h ?? 0);
      rows.push([r.id, r.role, `${r.provider}/${r.model}`, r.status, count(r.usage.input), count(r.usage.cacheRead), count(write), count(r.usage.output), r.costUsd === null ? "?" : r.costUsd.toFixed(6)]);
    }
    out.push(...table(rows).trimEnd().split("\n").map((line) => `  ${line}`));
  }
  return `${out.join("\n")}\n`;
}

function preview(content: Block[]): string {
  const text = content
    .map((b) => (b.type === "text" || b.type === "thinking" ? b.text : b.type === "tool_use" ? `[tool_use ${b.name}]` : b.type === "tool_result" ? `[tool_result ${b.toolUseId}]` : b.type === "provider" ? `[${String(b.data.type)}]` : "[image]"))
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  const shown = text.length > 72 ? `${text.slice(0, 71)}…` : text;
  return printable(shown);
}

function count(value: number | undefined): string {
  return value === undefined ? "?" : String(value);
}

function isoMinute(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16).replace("T", " ");
}

/** Columns padded by display width (a CJK character or an emoji takes two terminal cells), not by UTF-16 length. */
function table(cells: string[][]): string {
  const rows = cells.map((row) => row.map(printable));
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => Bun.stringWidth(row[col]!))));
  const padded = (cell: string, width: number) => cell + " ".repeat(width - Bun.stringWidth(cell));
  return rows.map((row) => row.map((cell, col) => (col === row.length - 1 ? cell : padded(cell, widths[col]!))).join("  ")).join("\n") + "\n";
}
