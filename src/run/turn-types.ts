/**
 * What a turn takes and gives: the options of {@link runTurn} and its result.
 * Shared by the turn pipeline (turn.ts) and its stages (stages/).
 */
import type { CacheSettings, GenerationSettings, Message, OutputSchema, ToolDefinition } from "../context/types.ts";
import type { UsageReport } from "../plugin/usage.ts";
import type { LedgerRow } from "../session/types.ts";
import type { OutputSink } from "./output.ts";

/**
 * Which session a turn belongs to. `continue` is the latest of cachet's own sessions (never one `cachet proxy`
 * recorded), asked for by `by`: `-c` (the default), `--tool-result` without -c (it answers the latest session's calls)
 * or `cachet compact` (which compacts it); the error for a store without sessions names the one the user wrote.
 * `named` is the session `ref` names (id or name); `by: "compact"` when `cachet compact --session` named it, so a
 * refusal (a recorded session) says what was asked.
 */
export type SessionChoice = { mode: "new"; name?: string } | { mode: "continue"; by?: "-c" | "--tool-result" | "compact" } | { mode: "named"; ref: string; mustExist?: boolean; by?: "compact" };

/** The result of one tool call, as given by the user side. */
export interface ToolResultInput {
  /** The id of the tool call (printed with the call). */
  id: string;
  content: string;
  isError?: boolean;
}

/** Everything one turn needs besides the runtime. */
export interface TurnOptions {
  /** The user text (stdin and PROMPT already merged); undefined with a tool result only. */
  prompt: string | undefined;
  /**
   * `--tool-result`: the user side answers tool calls of the last answer, one
   * entry per call id. The turn is sent only when every pending call has its result.
   */
  toolResults?: ToolResultInput[];
  /** `--drop-pending`: a new prompt while tool calls are pending answers each with a stored "moved on" result instead of refusing. */
  dropPending?: boolean;
  /** `provider/model`; defaults to the session's, then the config's, then {@link DEFAULT_MODEL}. */
  model?: string;
  /** System texts; undefined keeps the session's (none for a new session). */
  system?: string[];
  /** Tool definitions; undefined keeps the session's. */
  tools?: ToolDefinition[];
  /** Output schema; undefined keeps the session's. */
  schema?: OutputSchema;
  /** Volatile text for this request only. */
  overlay?: string;
  session: SessionChoice;
  /** Fork the chosen session (default: the latest) before this turn. */
  fork?: boolean;
  generation: GenerationSettings;
  /** Cache mode and TTL; a field left undefined sticks to the session's (see sticky-cache.ts). */
  cache: Partial<Omit<CacheSettings, "affinityKey">>;
  /** False with `--no-compact`: the turn never compacts (src/run/stages/compact.ts). */
  compact?: boolean;
  /** Why the call is made: `main`, `probe`, ... */
  role: string;
  /** `--base-url`. */
  baseUrl?: string;
  /** Longest wait for progress, ms; 0: no limit (see consume.ts). */
  idleMs: number;
  /** Longest hidden thinking, ms; 0 or undefined: no limit (see consume.ts). */
  thinkingMs?: number;
  /** Retries of a retryable failure before any output was written. */
  retries: number;
  sink: OutputSink;
  /** Aborts the turn (Ctrl-C). */
  signal?: AbortSignal;
  /** Called with one-line notices for stderr (prefix changes, retries). */
  notice?: (message: string) => void;
  /**
   * Called once when another process is running a turn of the session (its pid and host), before waiting for it
   * (bounded like every turn lease wait, Store.acquireTurn); default: one stderr line (sayWaiting), none with --quiet.
   */
  onBusy?: (sessionId: string, holder: { pid: number; host: string }) => void;
}

/** What a turn produced. */
export interface TurnResult {
  sessionId: string;
  /** Ledger row id of the final attempt. */
  requestId: string;
  message: Message;
  report: UsageReport | undefined;
  costUsd: number | null;
  finishReason: string | null;
  incomplete: boolean;
  /** Parsed and validated answer with `--schema`. */
  answer?: unknown;
  row: LedgerRow;
}
