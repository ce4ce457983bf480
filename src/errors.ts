/**
 * The one error type cachet throws on purpose, and the catalogue of its codes.
 *
 * The top level (src/cli/dispatch.ts) prints `message` and `hint` on one line each,
 * without a stack unless `--debug`, and exits with `exitCode`.
 */

/** Exit codes, documented in README.md ("Exit codes"). */
export const EXIT = {
  ok: 0,
  /** Something failed at run time (provider error, store error, invalid answer). */
  failure: 1,
  /** The command line is wrong: unknown flag or command, bad flag value. */
  usage: 2,
  /** Input data is wrong: invalid UTF-8 on stdin or in a prompt word, malformed JSON, schema, config or plugin. */
  input: 3,
  /** The provider refused or failed the request (HTTP error, stream cut, stall). */
  provider: 4,
  /** The turn is stored, but bytes arrived on stdin after cachet went on without them (CASES.md case 48). */
  lateInput: 5,
  /** Interrupted by SIGINT (Ctrl-C); the partial answer is stored and marked incomplete. */
  /** A spending limit: the call's worst-case forecast would cross it, or its price is unknown; nothing was sent. */
  budget: 6,
  interrupted: 130,
  /** Ended by SIGTERM; the partial answer is stored and marked incomplete. */
  terminated: 143,
} as const;

/**
 * Every code cachet can raise, with the exit code it maps to. One table, so a
 * newcomer sees every failure mode in one place.
 */
export const ERROR_CODES = {
  UNKNOWN_COMMAND: EXIT.usage,
  UNKNOWN_FLAG: EXIT.usage,
  BAD_FLAG: EXIT.usage,
  MISSING_ARGUMENT: EXIT.usage,
  EXTRA_WORD: EXIT.usage,
  CONFIG_UNREADABLE: EXIT.input,
  CONFIG_INVALID: EXIT.input,
  STDIN_INVALID_UTF8: EXIT.input,
  /** A run's prompt word on the command line that is not UTF-8 (src/cli/argv-encoding.ts); another word's is BAD_FLAG. */
  ARGV_INVALID_UTF8: EXIT.input,
  STDIN_TOO_LARGE: EXIT.input,
  STDIN_LATE: EXIT.lateInput,
  INPUT_INVALID: EXIT.input,
  SCHEMA_INVALID: EXIT.input,
  SCHEMA_CONTRACT: EXIT.input,
  ANSWER_INVALID: EXIT.failure,
  PLUGIN_LOAD: EXIT.input,
  PLUGIN_HOOK: EXIT.failure,
  PLUGIN_API_VERSION: EXIT.input,
  PLUGIN_INSTALL: EXIT.failure,
  PLUGIN_NOT_INSTALLED: EXIT.usage,
  UNKNOWN_PROVIDER: EXIT.usage,
  UNKNOWN_MODEL: EXIT.usage,
  MISSING_API_KEY: EXIT.usage,
  PROVIDER_HTTP: EXIT.provider,
  PROVIDER_STREAM: EXIT.provider,
  PROVIDER_STALL: EXIT.provider,
  CACHE_CONTRACT: EXIT.input,
  CONTEXT_TOO_LONG: EXIT.input,
  CATALOG_INVALID: EXIT.input,
  SESSION_NOT_FOUND: EXIT.usage,
  SESSION_HAS_FORKS: EXIT.usage,
  /** A session recorded by `cachet proxy` named to continue, fork or compact: cachet only reads those. */
  SESSION_RECORDED: EXIT.usage,
  SESSION_CONFLICT: EXIT.failure,
  STORE: EXIT.failure,
  EMULATOR: EXIT.failure,
  SOCKET_PATH_TOO_LONG: EXIT.usage,
  DAEMON_START: EXIT.failure,
  DAEMON_SOCKET_BLOCKED: EXIT.failure,
  BUDGET_EXCEEDED: EXIT.budget,
  BUDGET_UNPRICED: EXIT.budget,
  EXPORT_FAILED: EXIT.failure,
  STDOUT_WRITE: EXIT.failure,
  WORKING_DIR_GONE: EXIT.failure,
  INTERRUPTED: EXIT.interrupted,
  INTERNAL: EXIT.failure,
} as const;

/** A code from {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Options of {@link CachetError}. */
export interface CachetErrorOptions {
  /** What the user should do about it, one line. */
  hint?: string;
  /** The underlying error, shown with `--debug`. */
  cause?: unknown;
  /** Overrides the exit code the {@link ERROR_CODES} table gives. */
  exitCode?: number;
}

/**
 * The base error. `message` names what is wrong (one line), `hint` what to do.
 * Throw it for anything the user can act on; anything else is a bug and is
 * reported as INTERNAL.
 */
export class CachetError extends Error {
  override readonly name: string = "CachetError";
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly exitCode: number;

  constructor(code: ErrorCode, message: string, options: CachetErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? ERROR_CODES[code];
  }
}

/**
 * An error returned by a provider (or the emulator): HTTP status, whether a
 * retry may succeed, and how long the provider asked to wait.
 */
export class ProviderError extends CachetError {
  override readonly name: string = "ProviderError";
  /** HTTP status, or undefined for a stream-level failure. */
  readonly status: number | undefined;
  /**
   * True for 408/409/429/5xx/529 and for a stream cut before any content; a non-streamed answer accepted with a 2xx
   * is never retried, whatever this says (src/run/stages/send.ts).
   */
  readonly retryable: boolean;
  /** Milliseconds from `retry-after` / `retry-after-ms`, when the provider sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: "PROVIDER_HTTP" | "PROVIDER_STREAM" | "PROVIDER_STALL",
    message: string,
    options: CachetErrorOptions & { status?: number; retryable?: boolean; retryAfterMs?: number } = {},
  ) {
    super(code, message, options);
    this.status = options.status;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * The same error with another hint: code, message, exit code and (for a
 * ProviderError) status, retryability and retry delay are kept; the original
 * becomes the cause.
 */
export function withHintText(error: CachetError, hint: string): CachetError {
  const common = { hint, cause: error.cause ?? error, exitCode: error.exitCode };
  if (!(error instanceof ProviderError)) return new CachetError(error.code, error.message, common);
  return new ProviderError(error.code as "PROVIDER_HTTP" | "PROVIDER_STREAM" | "PROVIDER_STALL", error.message, {
    ...common,
    ...(error.status !== undefined ? { status: error.status } : {}),
    retryable: error.retryable,
    ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
  });
}

/** True for a {@link CachetError} (including subclasses loaded from another copy of this module). */
export function isCachetError(error: unknown): error is CachetError {
  if (error instanceof CachetError) return true;
  const e = error as { code?: unknown; exitCode?: unknown } | null;
  return error instanceof Error && typeof e?.code === "string" && e.code in ERROR_CODES && typeof e.exitCode === "number";
}
