/**
 * Stage "choose the session": which session a turn belongs to, its turn lease,
 * and for a fork or a new session, creating it once the input is valid.
 */
import { prefixChange } from "../../context/prefix.ts";
import { looksLikeSessionId } from "../../context/ids.ts";
import { CachetError, isCachetError } from "../../errors.ts";
import type { PluginHost } from "../../plugin/host.ts";
import type { ForkEvent } from "../../plugin/hooks.ts";
import { onlyRecorded, onlyRecordedPhrase, recordedRefusal, type RecordedAction } from "../../session/recorded-refusal.ts";
import type { Store } from "../../session/store.ts";
import type { LedgerRow, LoadedSession, SessionRecord } from "../../session/types.ts";
import type { Runtime } from "../runtime.ts";
import type { TurnOptions } from "../turn-types.ts";
import type { TurnInput } from "./input.ts";

/** The session a turn runs in, loaded and leased. */
export interface OpenedSession {
  loaded: LoadedSession;
  /** Parent id when this turn forked. */
  forkedFrom?: string;
  /** The fork kept the parent's model and prefix, so it shares the parent's affinity key and cache. */
  exactFork?: boolean;
  /** The parent's last ledger row: the cache a fork's first request inherits. */
  parentLast?: LedgerRow | null;
  /** Created for this turn (a new session or a fork): removed again if the turn fails before storing anything in it. */
  created?: boolean;
  /**
   * For a session created for this turn: called when the turn is about to store the first thing in it, which keeps
   * it (its request cleared to go: sendRequest, before its held writes; or an auxiliary call, before its ledger row), so a
   * session refused before sending is never announced. For a fork it fires `session:fork` (src/plugin/hooks.ts);
   * runTurn adds printing the `session` line it held. Calls after the first do nothing.
   */
  kept?: () => Promise<void>;
}

/**
 * Whether the options can only name a stored session (`-c`, an id, `-c
 * --session NAME`, a fork): with no store, the run fails before creating one.
 */
export function needsStoredSession(options: Pick<TurnOptions, "session" | "fork">): boolean {
  const { session } = options;
  if (session.mode === "continue") return true;
  if (session.mode === "new") return options.fork === true;
  return options.fork === true || session.mustExist === true || looksLikeSessionId(session.ref);
}

/**
 * The existing session the options name, or undefined for a new one. New sessions and forks that a process ended
 * before their first turn stored anything (SIGKILL, a crash) are removed first, as a failed first
 * turn removes its own: a NAME of one starts afresh, and neither `-c` nor `--fork` picks one.
 * @throws CachetError SESSION_NOT_FOUND for `-c` without sessions of cachet's own, an unknown id (or a name shaped like one), or a fork target that does not exist;
 *   SESSION_RECORDED for a session `cachet proxy` recorded (src/session/recorded-refusal.ts);
 *   STORE when an abandoned session cannot be removed (the store cannot be written)
 */
export function chooseSession(runtime: Pick<Runtime, "store" | "ephemeral">, options: Pick<TurnOptions, "session" | "fork" | "toolResults">): SessionRecord | undefined {
  const { store } = runtime;
  if (!runtime.ephemeral) {
    const dropped = store.dropAbandoned();
    if (dropped.length > 0) void import("../../log.ts").then((log) => log.verbose(`removed ${dropped.join(", ")}: session${dropped.length === 1 ? "" : "s"} (new or forked) whose first turn ended before anything was stored`));
  }
  switch (options.session.mode) {
    case "continue": {
      // Said for what the user wrote: -c, a --tool-result answering the latest session's calls, or `cachet compact`.
      const by = options.session.by ?? "-c";
      const what = by === "compact" ? "compact" : by === "--tool-result" ? "answer with --tool-result" : "continue";
      if (runtime.ephemeral) {
        throw new CachetError("SESSION_NOT_FOUND", `there is no session to ${what}: with --no-store (or CACHET_NO_STORE=1) sessions are neither stored nor read`, {
          hint: `drop --no-store and unset CACHET_NO_STORE to ${by === "--tool-result" ? "answer a stored session's tool calls" : `${what} a stored session`}`,
        });
      }
      // The latest of cachet's own sessions: one `cachet proxy` recorded is never continued.
      const latest = store.latestConversation();
      if (!latest) {
        const only = onlyRecorded(store);
        if (only) {
          const never = by === "-c" ? "which -c never continues" : by === "compact" ? "which cachet never compacts" : "and --tool-result answers only the tool calls of cachet's own sessions";
          throw new CachetError("SESSION_NOT_FOUND", `there is no session to ${what}: ${onlyRecordedPhrase(only)}, ${never}`, {
            hint: by === "-c" ? "run without -c to start a new session" : 'start one with `cachet "PROMPT"`',
          });
        }
        throw new CachetError("SESSION_NOT_FOUND", `there is no session to ${what}: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)`, {
          hint: by === "-c" ? "run without -c to start one" : 'start one with `cachet "PROMPT"`',
        });
      }
      return latest;
    }
    case "named": {
      const ref = options.session.ref;
      // A NAME that does not exist yet starts a new named session; an id, a fork target or `-c --session NAME` must exist.
      let found: SessionRecord | undefined;
      if (needsStoredSession(options)) found = findIdShaped(store, ref);
      else {
        try {
          found = store.findSession(ref);
        } catch (error) {
          if ((error as CachetError).code === "SESSION_NOT_FOUND") return undefined;
          throw error;
        }
      }
      // Refused before its turn lease is taken: nothing of a recorded session changes.
      const refusal = recordedRefusal(store, found.id, recordedAction(options), options.fork ? "--fork" : options.session.mustExist ? "-c and --session" : "--session");
      if (refusal) throw refusal;
      return found;
    }
    case "new":
      return options.fork ? (store.latestConversation() ?? undefined) : undefined;
  }
}

/** What the options would do with the session they name, as {@link recordedRefusal} words it. */
function recordedAction(options: Pick<TurnOptions, "session" | "fork" | "toolResults">): RecordedAction {
  if (options.fork) return "fork";
  if (options.session.mode === "named" && options.session.by === "compact") return "compact";
  return options.toolResults?.length ? "answer with --tool-result" : "continue";
}

/** The stored session `ref` names; one shaped like an id that names none is most likely a mistyped id. */
function findIdShaped(store: Pick<Store, "findSession">, ref: string): SessionRecord {
  try {
    return store.findSession(ref);
  } catch (error) {
    if (!isCachetError(error) || error.code !== "SESSION_NOT_FOUND" || !looksLikeSessionId(ref)) throw error;
    throw new CachetError("SESSION_NOT_FOUND", `no session "${ref}"`, {
      hint: "check the id with `cachet sessions`; names that look like ids (s_ and letters or digits) are reserved, so pick another name to start a new session",
    });
  }
}

/**
 * Leases `target`, loads it, resolves the input against it (nothing is stored
 * if that throws), then runs `body` in the session the turn belongs to: the
 * target itself, a fork of it (the parent's lease is released, the child's
 * taken, `session:fork` fired once the child is about to be kept: {@link OpenedSession.kept}), or a new
 * session. A fork or a new session is removed again when `body` fails before anything was stored in it, so
 * neither `-c` nor `--fork` picks up an empty session, and a parent gets no fork that holds nothing. A new NAME is found or
 * created in one write, which also leases it when it created it; one found is leased
 * like a stored session: processes starting the same new name at once take turns in
 * it. Every lease taken is released exactly once.
 *
 * `choose` names the target from what the user asked ({@link chooseSession}, or compact's lookup): called once, and
 * again when the target vanished before its lease was taken. That happens to a new session or fork whose first turn,
 * run by another process this one waited for, ended before storing anything (its shell is removed): a NAME then
 * starts afresh in this turn, `-c` and a bare `--fork` pick again, and a target that must exist is SESSION_NOT_FOUND
 * naming the word the user typed, never the vanished id.
 * @throws CachetError SESSION_NOT_FOUND when forking without a session; whatever `choose`, `resolve` and `body` throw
 */
export async function inSession<T>(
  runtime: Pick<Runtime, "store" | "host">,
  options: TurnOptions,
  choose: () => SessionRecord | undefined,
  resolve: (loaded: LoadedSession | undefined) => TurnInput,
  body: (opened: OpenedSession, input: TurnInput) => Promise<T>,
): Promise<T> {
  // Each vanished target is a shell another process removed as its turn failed: the loop ends when a choice holds.
  for (;;) {
    try {
      return await inChosen(runtime, options, choose(), resolve, body);
    } catch (error) {
      if (!(error instanceof TargetVanished)) throw error;
    }
  }
}

/** Thrown by {@link leased} when the session it was to lease no longer exists: {@link inSession} chooses again. */
class TargetVanished extends Error {}

/** {@link inSession} for one choice of target. */
async function inChosen<T>(
  runtime: Pick<Runtime, "store" | "host">,
  options: TurnOptions,
  target: SessionRecord | undefined,
  resolve: (loaded: LoadedSession | undefined) => TurnInput,
  body: (opened: OpenedSession, input: TurnInput) => Promise<T>,
): Promise<T> {
  if (target || options.session.mode !== "named" || options.fork) return leased(runtime, options, target, false, resolve, body);
  const input = resolve(undefined);
  const named = runtime.store.findOrCreateNamed({ name: options.session.ref, model: input.modelRef, prefix: input.prefix }, keeperDelay(options));
  return leased(runtime, options, named.session, named.created, resolve, body, named.created ? { release: named.release, lost: 0 } : undefined);
}

/**
 * The one stderr line of a turn that waits for another process's turn on its
 * session (up to the lease wait, 180 s): said as `sessions rm` and `compact`
 * say it, naming the holder, so a run never waits in silence. `--quiet` drops
 * it; `--verbose` says it as its `[log]` line instead (scripts and tests read
 * that form). Never on stdout: a `--json` run's stdout stays JSON lines.
 */
export async function sayWaiting(sessionId: string, holder: { pid: number; host: string }): Promise<void> {
  const log = await import("../../log.ts");
  const level = log.getLogLevel();
  if (level === "quiet") return;
  if (level === "verbose" || level === "debug") return log.verbose(`session ${sessionId} is busy (process ${holder.pid} on ${holder.host} is running a turn): waiting for it`);
  const { edges } = await import("../../edges.ts");
  edges().writeStderr(`cachet: session ${sessionId} is running a turn (process ${holder.pid} on ${holder.host}): waiting for it to finish before sending this one\n`);
}

/**
 * {@link inSession} once the target is known; `created`: this run just created it (removed again when `body`
 * stores nothing); `taken`: its lease, when it was taken with its creation.
 */
async function leased<T>(
  runtime: Pick<Runtime, "store" | "host">,
  options: TurnOptions,
  target: SessionRecord | undefined,
  created: boolean,
  resolve: (loaded: LoadedSession | undefined) => TurnInput,
  body: (opened: OpenedSession, input: TurnInput) => Promise<T>,
  taken?: { release: () => void; lost: number },
): Promise<T> {
  const { store, host } = runtime;
  const keeper = keeperDelay(options);
  const lease = target
    ? (taken ??
      await store
        .beginTurn(target.id, {
          ...keeper,
          ...(options.signal ? { signal: options.signal } : {}),
          onBusy: (holder) => (options.onBusy ? options.onBusy(target.id, holder) : void sayWaiting(target.id, holder)),
        })
        .catch((error: unknown) => {
          // The lease row's foreign key found no session: removed since it was chosen (inSession chooses again).
          throw isCachetError(error) && error.code === "SESSION_NOT_FOUND" ? new TargetVanished(target.id) : error;
        }))
    : undefined;
  let held = lease !== undefined;
  const release = () => {
    if (held) lease!.release();
    held = false;
  };
  try {
    const loaded = target ? dropUnanswered(store, store.loadSession(target.id), lease!.lost, options.notice) : undefined;
    const input = resolve(loaded);
    // Validation is done: from here on, things are stored.
    if (options.fork) {
      if (!loaded) {
        const only = onlyRecorded(store);
        throw new CachetError("SESSION_NOT_FOUND", `there is no session to fork${only ? `: ${onlyRecordedPhrase(only)}, which cachet never forks` : ""}`, {
          hint: only ? 'start one with `cachet "PROMPT"` first' : "start one first, or name it with --session",
        });
      }
      const exact = loaded.session.model === input.modelRef && prefixChange(loaded.prefix.prefix, input.prefix) === null;
      const child = store.startSession(
        {
          model: input.modelRef,
          parentId: loaded.session.id,
          forkPoint: loaded.messages.at(-1)?.id ?? null,
          affinityKey: exact ? loaded.session.affinityKey : undefined,
          prefix: loaded.prefix.prefix,
        },
        keeper,
      );
      try {
        release();
        let announced = false;
        const kept = async () => {
          if (announced) return;
          announced = true;
          await announceFork(host, options, { parentId: loaded.session.id, childId: child.loaded.session.id, exact });
        };
        const opened = { loaded: child.loaded, forkedFrom: loaded.session.id, exactFork: exact, parentLast: store.lastRequest(loaded.session.id), created: true, kept };
        return await removedIfEmpty(store, child.loaded.session.id, body(opened, input));
      } finally {
        child.release();
      }
    }
    if (loaded) return await (created ? removedIfEmpty(store, loaded.session.id, body({ loaded, created }, input)) : body({ loaded }, input));
    // Created, stable prefix stored and leased in one write: a named one at once (its name is claimed now), else with
    // the turn's first write, its prompt (Store.beginSession).
    const name = options.session.mode === "new" ? options.session.name : undefined;
    const fresh = name !== undefined ? store.startSession({ model: input.modelRef, name, prefix: input.prefix }, keeper) : store.beginSession({ model: input.modelRef, prefix: input.prefix }, keeper);
    try {
      return await removedIfEmpty(store, fresh.loaded.session.id, body({ loaded: fresh.loaded, created: true }, input));
    } finally {
      fresh.release();
    }
  } finally {
    release();
  }
}

/**
 * `turn`'s result; when it fails before anything was stored in the new session or fork `sessionId` (a refusal
 * before sending, a plugin hook that threw), the session is removed (Store.dropShell): no empty session is left
 * for -c or --fork to pick up, nor counted as its parent's fork. A session whose only prompt got no answer keeps
 * its ledger rows (and so stays): a billed attempt is never dropped.
 */
async function removedIfEmpty<T>(store: Store, sessionId: string, turn: Promise<T>): Promise<T> {
  try {
    return await turn;
  } catch (error) {
    store.dropShell(sessionId);
    throw error;
  }
}

/** Fires `session:fork`; an observer failing must not fail the fork, so it is a warning. */
async function announceFork(host: PluginHost, options: TurnOptions, event: ForkEvent): Promise<void> {
  try {
    await host.callParallel("session:fork", event);
  } catch (error) {
    options.notice?.((error as Error).message);
  }
}

/**
 * The loaded session without a prompt a killed process left unanswered at the
 * end of its log (see Store.rollbackUnanswered); `lost` in-flight ledger rows
 * were marked lost as the lease was taken (Store.beginTurn); called under the turn lease.
 */
function dropUnanswered(store: Store, loaded: LoadedSession, lost: number, notice: ((message: string) => void) | undefined): LoadedSession {
  if (lost > 0) notice?.(`${lost} request(s) of an earlier run of this session never finished (its process was stopped): their ledger rows are kept as lost, usage unknown`);
  const last = loaded.messages.at(-1);
  if (last?.role !== "user" || !store.rollbackUnanswered(loaded.session.id, last.id)) return loaded;
  notice?.(`the session's last prompt (${last.id}) never got an answer (its run was stopped); it was taken out of the log`);
  return store.loadSession(loaded.session.id);
}

/** Input from this many characters on may hold the thread for long before the request leaves (hashing, storing it). */
const SMALL_INPUT_CHARS = 1 << 20;

/**
 * The lease keeper's start delay for this turn: a second when its input is
 * small, so that starting the thread (17–45 ms) comes after the request has
 * left; none for a big input, whose synchronous steps before sending could
 * otherwise outlast the unrefreshed lease.
 */
function keeperDelay(options: TurnOptions): { keeperDelayMs?: number } {
  let chars = options.prompt?.length ?? 0;
  for (const result of options.toolResults ?? []) chars += result.content.length;
  return chars < SMALL_INPUT_CHARS ? { keeperDelayMs: 1_000 } : {};
}
