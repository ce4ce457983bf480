/**
 * What `cachet sessions` and `cachet export` print, as pure functions of the
 * store's records, so tests call them without a terminal.
 */
import { Allow, parse as parsePartialJson } from "partial-json";
import { previewLine, printable } from "../printable.ts";
import type { Message, SummaryState } from "../context/types.ts";
import { shownName } from "./session-name.ts";
import type { SessionSource } from "./recorded.ts";
import type { LogEntry, StoredMessage, Store } from "./store.ts";
import type { LedgerRow, PrefixVersion, SessionRecord } from "./types.ts";
import { plainUsd } from "../meter/money.ts";

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

/** Everything `cachet sessions show --json` prints about one session (its visible log and ledger rows). */
export interface SessionDetails {
  session: SessionRecord;
  prefixes: PrefixVersion[];
  summary: SummaryState;
  messages: LogEntry[];
  requests: LedgerRow[];
}

/** A message as `cachet sessions show` lists it. */
export interface MessageHead {
  /** The owning session (a fork's parent for shared messages). */
  sessionId: string;
  seq: number;
  id: string;
  role: Message["role"];
  incomplete: boolean;
  /** The start of its text on one line, at most 72 characters, printable. */
  preview: string;
}

/** What `cachet sessions show` prints: {@link SessionDetails} with each message as its head. */
export interface SessionOverview extends Omit<SessionDetails, "messages"> {
  messages: MessageHead[];
}

/** Every session with its counts and origin, most recently updated first. */
export function listSessions(store: Store, origin: SessionOrigin = () => undefined): SessionListing[] {
  return store.listSessions().map((session) => ({ ...session, ...store.sessionCounts(session.id), source: "own", client: null, ...origin(session.id) }));
}

/**
 * One session's prefix versions, summary, visible log (each message as its
 * head) and ledger rows. A message's preview is made from the first stored
 * part of its content JSON (message-parts.ts: from 256 Ki characters to a few
 * times that), so a message of hundreds of MB is never read whole to show it.
 * @throws CachetError SESSION_NOT_FOUND
 */
export function sessionOverview(store: Store, idOrName: string): SessionOverview {
  const session = store.findStoredSession(idOrName);
  const messages: MessageHead[] = [];
  for (const m of store.storedLog(session.id)) {
    messages.push({ sessionId: m.sessionId, seq: m.seq, id: m.id, role: m.role, incomplete: m.incomplete, preview: messagePreview(m) });
  }
  return { session, prefixes: store.prefixVersions(session.id), summary: store.summary(session.id), messages, requests: store.requests(session.id) };
}

/**
 * `cachet export`, as text to write in order: one `session` line, the
 * `prefix` versions, a `summary` line when the session has summary state,
 * the visible log's `message` lines (with the owning session and sequence
 * number; a fork's shared messages name the parent), then the ledger's
 * `request` lines. Each line is one JSON object `{ "type": ..., <type>: {...} }`;
 * unknown usage counts are absent. A message line is written as its content
 * is read, a stored part at a time: a piece holds at most one part of a
 * message, never a whole one.
 * @throws CachetError SESSION_NOT_FOUND (on the first piece)
 */
export function* exportPieces(store: Store, idOrName: string): Generator<string> {
  const session = store.findStoredSession(idOrName);
  yield `${JSON.stringify({ type: "session", session })}\n`;
  for (const prefix of store.prefixVersions(session.id)) yield `${JSON.stringify({ type: "prefix", prefix })}\n`;
  const summary = store.summary(session.id);
  if (summary.messages.length > 0 || summary.coversThrough !== null) yield `${JSON.stringify({ type: "summary", summary })}\n`;
  for (const m of store.storedLog(session.id)) {
    yield* messagePieces({ type: "message", sessionId: m.sessionId, seq: m.seq, createdAt: m.createdAt }, m);
    yield "\n";
  }
  for (const request of store.requests(session.id)) yield `${JSON.stringify({ type: "request", request })}\n`;
}

/**
 * `cachet sessions show --json`: the JSON of {@link SessionDetails}, written
 * as {@link exportPieces} writes messages (a part at a time), then a newline.
 * @throws CachetError SESSION_NOT_FOUND (on the first piece)
 */
export function* detailsJsonPieces(store: Store, idOrName: string): Generator<string> {
  const session = store.findStoredSession(idOrName);
  const head = JSON.stringify({ session, prefixes: store.prefixVersions(session.id), summary: store.summary(session.id) });
  yield `${head.slice(0, -1)},"messages":[`;
  let first = true;
  for (const m of store.storedLog(session.id)) {
    if (!first) yield ",";
    first = false;
    yield* messagePieces({ sessionId: m.sessionId, seq: m.seq, createdAt: m.createdAt }, m);
  }
  yield `],"requests":${JSON.stringify(store.requests(session.id))}}\n`;
}

/**
 * `JSON.stringify({ ...fields, message })` of a stored message, its content
 * JSON copied from the store part by part (joined, the parts are exactly
 * `JSON.stringify(content)`): the message's keys in {@link Message}'s order.
 */
function* messagePieces(fields: Record<string, unknown>, m: StoredMessage): Generator<string> {
  const head = JSON.stringify({ ...fields, message: { id: m.id, role: m.role } });
  yield `${head.slice(0, -2)},"content":`;
  yield* m.contentParts();
  yield `${m.incomplete ? ',"incomplete":true' : ""}}}`;
}

/** The human-readable session list, one line per session, with a header. */
export function formatSessionList(listings: SessionListing[]): string {
  if (listings.length === 0) return "no sessions yet\n";
  const rows = [["ID", "NAME", "MODEL", "MSGS", "REQS", "UPDATED", "FORK OF", "SOURCE"]];
  for (const s of listings) {
    rows.push([s.id, s.name === null ? "-" : shownName(s.name), s.model, String(s.messages), String(s.requests), isoMinute(s.updatedAt), s.parentId ?? "-", s.source === "recorded" ? `recorded (${s.client ?? "unknown client"})` : "own"]);
  }
  return table(rows);
}

/** The human-readable `cachet sessions show`. */
export function formatSessionDetails(d: SessionOverview): string {
  const s = d.session;
  const out: string[] = [
    `session   ${s.id}${s.name ? ` (${shownName(s.name)})` : ""}`,
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
  // Numbered through the whole shown conversation: a fork's own messages follow its parent's (each session's seq restarts at 1).
  for (const [i, e] of d.messages.entries()) {
    const owner = e.sessionId === s.id ? "" : ` [${e.sessionId}]`;
    out.push(`  ${String(i + 1).padStart(4)} ${e.role.padEnd(9)} ${e.id}${owner}${e.incomplete ? " (incomplete)" : ""}  ${e.preview}`);
  }
  out.push("", `Requests (${d.requests.length}):`);
  if (d.requests.length > 0) {
    const rows = [["ID", "ROLE", "MODEL", "STATUS", "INPUT", "CACHE READ", "CACHE WRITE", "OUTPUT", "COST USD"]];
    for (const r of d.requests) {
      const write = r.usage.cacheWrite5m === undefined && r.usage.cacheWrite1h === undefined ? undefined : (r.usage.cacheWrite5m ?? 0) + (r.usage.cacheWrite1h ?? 0);
      rows.push([r.id, r.role, `${r.provider}/${r.model}`, r.status, count(r.usage.input), count(r.usage.cacheRead), count(write), count(r.usage.output), r.costUsd === null ? "?" : `${r.costEstimate ? "~" : ""}${plainUsd(r.costUsd)}`]);
    }
    out.push(...table(rows).trimEnd().split("\n").map((line) => `  ${line}`));
  }
  return `${out.join("\n")}\n`;
}

/**
 * The previews of the messages of a session's visible log (`cost --tree`,
 * `why`), by message id, each as `sessions show` previews it, cut at `max` characters.
 * @throws CachetError SESSION_NOT_FOUND
 */
export function messagePreviews(store: Store, sessionId: string, max = PREVIEW_CHARS): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of store.storedLog(sessionId)) out.set(m.id, messagePreview(m, max));
  return out;
}

/** A stored message's preview, read from the first stored part of its content JSON only. */
function messagePreview(m: StoredMessage, max = PREVIEW_CHARS): string {
  // A first part cut short is read by partial-json: its strings, arrays and objects may end early.
  const content = (m.parts === 0 ? JSON.parse(m.firstPart) : parsePartialJson(m.firstPart, Allow.STR | Allow.ARR | Allow.OBJ)) as unknown;
  return preview(Array.isArray(content) ? content : [], m.parts > 0, max);
}

/**
 * A message's text on one line, cut at `max` characters (src/printable.ts `previewLine`: a line break shows as `\n`). `content` may be the
 * start of the content only (`cut`), its last block missing fields: what is
 * missing is left out and the preview ends with "…".
 */
function preview(content: readonly unknown[], cut: boolean, max: number): string {
  const text = content
    .map((block) => {
      const b = (block ?? {}) as Record<string, unknown>;
      const field = (name: string) => (typeof b[name] === "string" ? (b[name] as string) : "");
      if (b.type === "text" || b.type === "thinking") return field("text");
      if (b.type === "tool_use") return `[tool_use ${field("name")}]`;
      if (b.type === "tool_result") return `[tool_result ${field("toolUseId")}]`;
      if (b.type === "provider") return `[${String((b.data as { type?: unknown } | undefined)?.type)}]`;
      return b.type === "image" ? "[image]" : "";
    })
    .join(" ");
  return previewLine(text, max, cut);
}

/** Characters of a message preview: the line fits a terminal after the row's number, role and id. */
const PREVIEW_CHARS = 72;

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
