/**
 * `cachet [PROMPT]` / `cachet run [PROMPT]`: the main job. Parses flags and
 * stdin into turn options and hands them to src/run; nothing else.
 */
import { defineCommand } from "citty";
import type { ToolDefinition } from "../context/types.ts";
import { isHttpUrl, MAX_TIMER_S, NOT_HTTP_URL } from "../config.ts";
import { edges, processEdges } from "../edges.ts";
import { envFlag } from "../env-flag.ts";
import { looksLikeSessionId } from "../context/ids.ts";
import { CachetError, isCachetError } from "../errors.ts";
import { refuseOwnedOptions } from "../plugin/owned-options.ts";
import { maxStdinBytes } from "../run/stdin-limit.ts";
import type { PreparedRun } from "../run/prepare.ts";
import type { SessionChoice } from "../run/turn-types.ts";
import { emulateArg, globalArgs, jsonArg } from "./_args.ts";
import { type ArgvView, flagValues, lastFlag } from "./argv.ts";
import { decimalInteger, decimalNumber } from "../flag-number.ts";
import { moduleOnce } from "../module-once.ts";
import { runFlagFiles, stdinFileFlags } from "./run-files.ts";

// Loaded by every turn; a resident process runs one after another (src/module-once.ts).
const stdinModule = moduleOnce(() => import("../run/stdin.ts"));
const commandModule = moduleOnce(() => import("../run/command.ts"));
const interruptModule = moduleOnce(() => import("../run/interrupt.ts"));
const toolResultsModule = moduleOnce(() => import("./tool-results.ts"));

const args = {
  prompt: { type: "positional", required: false, description: "The prompt: every word, joined with spaces (no quotes needed); `-` among them stands for stdin there. With stdin piped and no `-`, stdin comes first, then the prompt. Words after `--` are prompt text even if they start with -" },
  model: { type: "string", alias: "m", description: "provider/model (models.dev id), e.g. anthropic/claude-sonnet-4-6 (the default)" },
  system: { type: "string", alias: "s", description: "System prompt TEXT, or @FILE" },
  tools: { type: "string", description: "JSON file of tool definitions [{name, description, parameters}]" },
  "tool-result": { type: "string", description: "Answer tool call ID: ID (stdin is the result), ID=@FILE (repeatable, one per parallel call), or - (stdin is a JSON object {ID: result}); continues the session" },
  "drop-pending": { type: "boolean", description: "With a new prompt while tool calls are pending: answer them with a stored \"no result: the user moved on\" instead of refusing" },
  schema: { type: "string", description: "JSON schema FILE or inline JSON: the answer is validated JSON" },
  overlay: { type: "string", description: "Volatile text for this turn only (date, plan, budget), TEXT or @FILE; rendered after the last message" },
  continue: { type: "boolean", alias: "c", description: "Continue the latest of cachet's own sessions (never one `cachet proxy` recorded)" },
  session: { type: "string", description: "Continue session ID or NAME (a new NAME starts a named session)" },
  fork: { type: "boolean", description: "Fork the chosen session (default: the latest of cachet's own) and continue in the fork; --fork=ID forks ID" },
  "max-tokens": { type: "string", description: "Maximum output tokens" },
  temperature: { type: "string", description: "Sampling temperature" },
  stream: { type: "boolean", default: true, negativeDescription: "Wait for the whole answer instead of streaming", description: "Stream the answer" },
  "base-url": { type: "string", description: "Base URL for the provider's SDK (OpenAI-compatible servers, proxies)" },
  option: { type: "string", alias: "o", description: "Provider option key=value (repeatable); value parsed as JSON when it can be; sticks to the session, key=null drops it" },
  cache: { type: "enum", options: ["auto", "off"] as string[], description: "Cache strategies: auto (default) or off (for comparisons)" },
  "cache-ttl": { type: "enum", options: ["5m", "1h"] as string[], description: "Breakpoint TTL where the provider offers a choice (default 5m)" },
  stdin: { type: "enum", options: ["wait", "skip"] as string[], description: "With a PROMPT: wait for stdin however long it takes, or skip it (default: read it if a first byte comes within 2 s)" },
  "stdin-encoding": { type: "enum", options: ["strict", "replace"] as string[], description: "Invalid UTF-8 on stdin: strict (error, default) or replace (U+FFFD)" },
  "idle-timeout": { type: "string", description: "Seconds without progress before a stream counts as stalled (default 120; 0: no limit)" },
  "thinking-timeout": { type: "string", description: "Seconds a model may think without visible output while the provider keeps the stream alive (default 600; 0: no limit)" },
  "hook-timeout": { type: "string", description: "Seconds one plugin hook call may take (default: config hook_timeout, else 30)" },
  retries: { type: "string", description: "Retries of a retryable provider error before any output (default 2)" },
  "max-cost": { type: "string", description: "Most this run may spend, USD, all its calls and attempts together; a call whose worst-case forecast could cross it is not sent" },
  "allow-unpriced": { type: "boolean", description: "Under a spending limit, send calls whose price is unknown (uncounted) instead of refusing them" },
  compact: { type: "boolean", default: true, negativeDescription: "Never compact in this run, however long the session (see [compaction] in the config)", description: "Compact the session when its next request nears the context window" },
  store: { type: "boolean", default: true, negativeDescription: "Write nothing: no session, no ledger row, no state directory (also CACHET_NO_STORE=1, true, yes or on)", description: "Store the session and its ledger" },
  ...jsonArg,
  ...emulateArg,
  ...globalArgs,
} as const;

export default defineCommand({
  meta: { name: "run", description: "Send a prompt (and stdin) to a model and stream the answer" },
  args,
  async run({ args: a, data }) {
    // The parsed command line (src/cli/dispatch.ts): repeated flags, `--fork=ID` and which words follow `--`.
    const view = data as ArgvView;
    const { readStdin, mergeInput } = await stdinModule();
    const { prepareRunCommand, runCommand } = await commandModule();
    const { handleInterrupts, interruptedBeforeSend, untilInterrupted } = await interruptModule();
    const fork = lastFlag(view, "fork");
    const forkTarget = typeof fork?.value === "string" ? fork.value : undefined;
    checkForkTarget(forkTarget, a.session, a.continue === true);
    if (a.session !== undefined) (await import("../session/session-name.ts")).checkSessionName(a.session, "--session");
    const words = view.words.map((w) => w.text);
    // A `-` after `--` is prompt text; before it, stdin.
    const literalFrom = view.words.findIndex((w) => w.literal);
    const dashes = view.words.filter((w) => w.text === "-" && !w.literal).length;
    const stdinFlag = a.stdin as "wait" | "skip" | undefined;
    if (dashes > 1) throw new CachetError("BAD_FLAG", "`-` (stdin) appears more than once among the prompt words", { hint: "stdin can be read once: keep one `-`, or quote a literal dash as part of a longer word" });
    if (dashes > 0 && stdinFlag === "skip") throw new CachetError("BAD_FLAG", "`-` reads stdin but --stdin skip ignores it", { hint: "drop one of the two" });
    const { readsStdin, resolveToolResults } = await toolResultsModule();
    const toolResultValues = flagValues(view, "tool-result");
    const toolResultReadsStdin = toolResultValues.length > 0 && readsStdin(toolResultValues);
    if (toolResultReadsStdin && stdinFlag === "skip") throw new CachetError("BAD_FLAG", "--tool-result reads the result from stdin but --stdin skip ignores it", { hint: "drop --stdin skip" });
    // A flag whose file is stdin (`-s @/dev/stdin`, `--tools /dev/stdin`) reads it: the input is the words alone.
    const flagFiles = runFlagFiles((flag) => a[flag], toolResultValues);
    const stdinFiles = flagFiles.length === 0 ? [] : await stdinFileFlags(flagFiles, edges() === processEdges);
    const stdinFile = stdinFiles[0];
    const alsoReadsStdin = stdinFiles[1] ?? (dashes > 0 ? "`-`" : stdinFlag === "wait" ? "--stdin wait" : toolResultReadsStdin ? "--tool-result" : undefined);
    if (stdinFile && alsoReadsStdin) {
      throw new CachetError("BAD_FLAG", `${stdinFile} reads its file from stdin, and ${alsoReadsStdin} reads stdin too`, { hint: "stdin can be read once: give one of them a file" });
    }
    const hasPrompt = view.words.some((w) => (w.text !== "-" || w.literal) && w.text !== "");
    // Stdin is not read, so nothing would be sent: said as that, before any wait (not "nothing on stdin", which may hold data).
    if (stdinFlag === "skip" && !hasPrompt && toolResultValues.length === 0 && a["drop-pending"] !== true) {
      throw new CachetError("MISSING_ARGUMENT", "nothing to send: no PROMPT argument, and --stdin skip leaves stdin unread", {
        hint: 'give the prompt as words (cachet --stdin skip "hello"), or drop --stdin skip to send stdin',
      });
    }
    if (stdinFile && !hasPrompt && toolResultValues.length === 0 && a["drop-pending"] !== true) {
      throw new CachetError("MISSING_ARGUMENT", `nothing to send: no PROMPT argument, and stdin is ${stdinFile}'s file`, { hint: `give the prompt as words (cachet ${stdinFile} "hello" < FILE)` });
    }
    // Without PROMPT words stdin is the whole input: wait for it however long it takes (like `cat`).
    const mode = stdinFile ? "skip" : (stdinFlag ?? (dashes > 0 || !hasPrompt || toolResultReadsStdin ? "wait" : "bounded"));
    const limits = {
      idleMs: secondsFlag(a["idle-timeout"], "--idle-timeout", 120),
      thinkingMs: secondsFlag(a["thinking-timeout"], "--thinking-timeout", 600),
      hookMs: a["hook-timeout"] === undefined ? undefined : secondsFlag(a["hook-timeout"], "--hook-timeout", 0, { zero: false }),
    };
    // Flag values are checked before stdin is read: a usage error never waits for a pipe.
    const generation = {
      maxTokens: intFlag(a["max-tokens"], "--max-tokens", 1),
      temperature: numberFlag(a.temperature, "--temperature"),
      retries: intFlag(a.retries, "--retries", 0) ?? 2,
      maxCostUsd: numberFlag(a["max-cost"], "--max-cost"),
      providerOptions: parseOptions(flagValues(view, "option")),
    };
    const noStore = envFlag(process.env, "CACHET_NO_STORE") || a.store === false;
    // Read by the daemon client (src/daemon/client.ts), which runs a turn here when the value is not one it takes: refused as CACHET_NO_STORE's is.
    envFlag(process.env, "CACHET_NO_DAEMON");
    // Read after a turn that found no daemon (src/daemon/autostart.ts), which must not fail then: refused before the turn.
    envFlag(process.env, "CACHET_DAEMON_AUTOSTART");
    if (noStore) refuseSessionWithoutStore(a.session, fork?.value);
    const baseUrl = baseUrlFlag(a["base-url"]);
    // The emulator answers every request itself: the URL would be silently ignored.
    if (baseUrl !== undefined && a.emulate === true) {
      throw new CachetError("BAD_FLAG", "--base-url and --emulate do not go together: the emulator answers every request itself, so the URL would be ignored", {
        hint: "leave out --base-url to try the turn against the emulator, or --emulate to send it to that server",
      });
    }
    const interrupt = handleInterrupts();
    const early = {
      emulate: a.emulate === true,
      hookMs: limits.hookMs,
      interrupt: interrupt.signal,
      noStore,
      maxCostUsd: generation.maxCostUsd,
      allowUnpriced: a["allow-unpriced"] === true,
      model: a.model,
      baseUrl,
      fork: fork !== undefined && fork.value !== false,
    };
    // While stdin is read: the runtime opens, the session is loaded and the provider's connection opened (src/run/prepare.ts).
    const prepared = prepareRunCommand({ ...early, session: sessionChoice(a, forkTarget, toolResultValues.length > 0) });
    let handedOver = false;
    try {
      // The first prompt word after a bare --fork, wherever flags sit (`--fork -q review`).
      if (fork?.value === true) await refuseForkWord(prepared, view.words.find((w) => w.index > fork.index && !w.literal)?.text);
      // The signal's bare reason: say what was kept, in the words every stop before sending uses, whichever the signal.
      const stopped = (error: unknown): never => {
        throw interrupt.signal.aborted && error === interrupt.signal.reason ? interruptedBeforeSend(interrupt.signal) : error;
      };
      // A flag's file that is a pipe (`-s @<(…)`, a FIFO) may take its time, as stdin may: a signal stops its read.
      const beforeSend = <T>(reading: Promise<T>): Promise<T> => untilInterrupted(reading, interrupt.signal).catch(stopped);
      const stdin = await readStdin({
        mode,
        terminal: dashes > 0 || stdinFlag === "wait",
        firstByteWaitMs: firstByteWaitMs(process.env.CACHET_STDIN_WAIT_MS),
        encoding: (a["stdin-encoding"] as "strict" | "replace" | undefined) ?? "strict",
        maxBytes: promptMaxBytes(),
        signal: interrupt.signal,
      }).catch(stopped);
      prepared.inputRead();
      const prompt = mergeInput(toolResultReadsStdin ? undefined : stdin.text, words, literalFrom === -1 ? words.length : literalFrom);
      // `-` asked for stdin: its being empty is what went wrong, not a missing PROMPT.
      if (dashes > 0 && prompt === undefined && toolResultValues.length === 0) {
        throw new CachetError("MISSING_ARGUMENT", "nothing to send: `-` reads the prompt from stdin, and stdin was empty", {
          hint: "pipe the text in (git diff | cachet -), or give the PROMPT as words",
        });
      }
      const toolResults = await beforeSend(resolveToolResults(toolResultValues, stdin.text, (path, flag) => readFlagFile(path, flag, "pass a readable UTF-8 file", promptMaxBytes())));
      // With PROMPT words the prompt is a copy of stdin: holding both would double a huge input for the whole turn.
      stdin.text = undefined;
      const system = a.system === undefined ? undefined : [await beforeSend(systemText(a.system))];
      const tools = a.tools === undefined ? undefined : await beforeSend(readTools(a.tools));
      const overlay = a.overlay === undefined ? undefined : await beforeSend(textOrFile(a.overlay, "--overlay"));
      handedOver = true;
      const exitCode = await runCommand({
        ...early,
        prepared,
        prompt,
        stdin,
        interrupt: interrupt.signal,
        toolResults,
        dropPending: a["drop-pending"] === true,
        system,
        tools,
        schemaArg: a.schema,
        overlay,
        session: sessionChoice(a, forkTarget, toolResults.length > 0),
        maxTokens: generation.maxTokens,
        temperature: generation.temperature,
        stream: a.stream !== false,
        providerOptions: generation.providerOptions,
        cacheMode: (a.cache as "auto" | "off" | undefined) ?? undefined,
        cacheTtl: (a["cache-ttl"] as "5m" | "1h" | undefined) ?? undefined,
        ...limits,
        retries: generation.retries,
        json: a.json === true,
        quiet: a.quiet === true,
        compact: a.compact !== false,
      });
      // A code of the run's own (late stdin's 5) ends the command, which has nothing of the turn left running, once the
      // finally below ran (src/edges.ts finish; in a process of its own the process exits here, as it always did). An
      // interrupted run's (130, 143) ends by exit(): its signal's handlers ran, and a resident process does not serve on.
      if (exitCode !== 0 && interrupt.signal.aborted) edges().exit(exitCode);
      else if (exitCode !== 0) edges().finish(exitCode);
    } finally {
      // Failed before the run took the runtime over (bad stdin, a bad --tools file): close it here.
      if (!handedOver) await prepared.discard();
      interrupt.dispose();
    }
  },
});

/**
 * `--session` and `--fork` name a stored session (or store a new one), which
 * --no-store neither reads nor writes: refused as `-c` is, rather than
 * sending a fresh conversation under the session's name.
 * @throws CachetError BAD_FLAG naming the flag
 */
function refuseSessionWithoutStore(session: string | undefined, fork: string | boolean | undefined): void {
  const flag = session !== undefined ? `--session ${session}` : typeof fork === "string" ? `--fork=${fork}` : fork === true ? "--fork" : undefined;
  if (flag === undefined) return;
  throw new CachetError("BAD_FLAG", `${flag}: with --no-store (or CACHET_NO_STORE=1) sessions are neither stored nor read`, {
    hint: `drop --no-store and unset CACHET_NO_STORE to use a stored session, or drop ${flag.split(/[ =]/)[0]} to send a turn that is not stored`,
  });
}

/** Which session the run continues, forks or starts, from its flags. */
function sessionChoice(a: { session?: string; continue?: boolean }, forkTarget: string | undefined, hasToolResults: boolean): SessionChoice {
  if (forkTarget) return { mode: "named", ref: forkTarget };
  if (a.session) return { mode: "named", ref: a.session, mustExist: a.continue === true };
  return a.continue ? { mode: "continue" } : hasToolResults ? { mode: "continue", by: "--tool-result" } : { mode: "new" };
}

/**
 * `--fork=ID` names the session to fork, so `--session` or `-c` naming
 * another one would leave one of the two silently ignored.
 * @throws CachetError BAD_FLAG for an empty `--fork=`, or `--fork=ID` with `-c` or with `--session` naming another session
 */
function checkForkTarget(target: string | undefined, session: string | undefined, continues: boolean): void {
  if (target === undefined) return;
  if (target === "") throw new CachetError("BAD_FLAG", "--fork= names no session", { hint: "--fork=ID forks session ID (or NAME); --fork alone forks the latest" });
  const other = session !== undefined && session !== target ? `--session ${session}` : continues ? "-c (the latest session)" : undefined;
  if (other) {
    throw new CachetError("BAD_FLAG", `--fork=${target} and ${other} name two sessions to fork`, {
      hint: `--fork=${target} alone forks ${target}; ${session !== undefined ? `--session ${session} --fork` : "-c --fork"} forks the other${session !== undefined ? " (--session names the session to continue or fork; a fork takes no name of its own)" : ""}`,
    });
  }
}

/**
 * A bare `--fork` forks the latest (or chosen) session and the first prompt
 * word after it is prompt text; when that word names a stored session,
 * `--fork=NAME` was most likely meant, and when it is shaped like a session id
 * (src/context/ids.ts) it is most likely a mistyped one, as `--fork=ID` would
 * say: either way the run is refused instead of forking another session.
 * @throws CachetError BAD_FLAG naming a stored session's word and `--fork=NAME`; SESSION_NOT_FOUND for an id-shaped word;
 *   SESSION_RECORDED for a session `cachet proxy` recorded, which no form of --fork forks
 */
async function refuseForkWord(prepared: PreparedRun, word: string | undefined): Promise<void> {
  if (word === undefined) return;
  let store: Awaited<PreparedRun["runtime"]>["store"];
  try {
    store = (await prepared.runtime).store;
  } catch {
    // No runtime: the turn reports that.
    return;
  }
  const afterDashes = `to fork the latest session and send "${word}" as prompt text, put the prompt after \`--\``;
  let found: string;
  try {
    found = store.findSession(word).id;
  } catch (error) {
    // Not a session (or the store failed to answer: the turn reports that).
    if (!looksLikeSessionId(word) || !isCachetError(error) || error.code !== "SESSION_NOT_FOUND") return;
    throw new CachetError("SESSION_NOT_FOUND", `--fork ${word}: no session "${word}"`, { hint: `check the id with \`cachet sessions\`; ${afterDashes}` });
  }
  // `--fork=WORD` would be refused too: said now, rather than a hint leading to that refusal.
  const { recordedRefusal } = await import("../session/recorded-refusal.ts");
  const recorded = recordedRefusal(store, found, "fork", "--fork");
  if (recorded) throw recorded;
  throw new CachetError("BAD_FLAG", `--fork ${word}: "${word}" names a stored session, but --fork takes it only as --fork=${word}`, {
    hint: `write --fork=${word} to fork it; ${afterDashes}`,
  });
}

/**
 * How long a PROMPT run waits for the first byte of a piped stdin, ms: 2,000,
 * or CACHET_STDIN_WAIT_MS (README.md, "The run command").
 * @throws CachetError BAD_FLAG for a value that is not a whole number of ms in the timer range
 */
function firstByteWaitMs(env: string | undefined): number {
  if (env === undefined || env === "") return 2_000;
  const ms = decimalInteger(env);
  if (ms === undefined || ms > MAX_TIMER_S * 1000) {
    throw new CachetError("BAD_FLAG", `CACHET_STDIN_WAIT_MS=${env}: expected milliseconds from 0 to ${MAX_TIMER_S * 1000}`, { hint: "unset it for the default 2000 ms" });
  }
  return ms;
}

/**
 * `--base-url`, checked as config.toml's `base_url` is, so a mistyped one is a
 * usage error rather than a provider failure after the prompt was read.
 * @throws CachetError BAD_FLAG (exit 2) naming the flag and the value
 */
function baseUrlFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (isHttpUrl(value)) return value;
  throw new CachetError("BAD_FLAG", `--base-url ${JSON.stringify(value)}: ${NOT_HTTP_URL}`, { hint: "give the server's URL with its scheme, e.g. http://localhost:8080/v1" });
}

/** `TEXT` or `@FILE`. */
async function textOrFile(value: string, flag: string): Promise<string> {
  if (!value.startsWith("@")) return value;
  const path = value.slice(1);
  return await readFlagFile(path, `${flag} @${path}`, "pass text, or @FILE with a readable UTF-8 file", promptMaxBytes());
}

/**
 * The `--system` text: a blank one is refused before anything is stored,
 * since it would be frozen into the session's prefix and the provider refuses
 * a whitespace-only system block on every later turn.
 * @throws CachetError BAD_FLAG (exit 2) when the text or file is empty or only whitespace
 */
async function systemText(value: string): Promise<string> {
  const text = await textOrFile(value, "--system");
  if (/\S/.test(text)) return text;
  const what = text === "" ? "empty" : "only whitespace";
  throw new CachetError("BAD_FLAG", value.startsWith("@") ? `flag --system ${value}: the file is ${what}` : `flag --system needs a value: it is ${what}`, {
    hint: "give the system prompt some text, or leave out -s (providers refuse a blank system prompt)",
  });
}

/**
 * `--tools FILE`: the tool definitions in FILE.
 * @throws CachetError INPUT_INVALID (exit 3) for an unreadable file, a JSON syntax error (named `FILE:LINE:COLUMN`, as
 *   `--schema` names one) or a definition parseTools refuses
 */
async function readTools(path: string): Promise<ToolDefinition[]> {
  const text = await readFlagFile(path, `--tools ${path}`, "pass a JSON file with an array of {name, description, parameters}");
  const [{ parseJsonDocument }, { parseTools }] = await Promise.all([import("../schema/json-error-position.ts"), import("../context/tools.ts")]);
  return parseTools(parseJsonDocument(text, path, "INPUT_INVALID"), path);
}

/**
 * A file named by a flag: missing, a directory, unreadable, not UTF-8 or over
 * `maxBytes` (default: the config-like cap, 64 MiB) is an input error
 * (exit 3), as for every file cachet reads (`--schema`, `--usage`, scenarios,
 * prices, config).
 */
async function readFlagFile(path: string, label: string, hint: string, maxBytes?: number): Promise<string> {
  const { readTextFile } = await import("../input/read-input.ts");
  return readTextFile(path, { label, hint, ...(maxBytes === undefined ? {} : { maxBytes, capHint: "send a smaller file, or raise the limit with CACHET_MAX_STDIN_BYTES" }) });
}

/** The most bytes of prompt text stdin or a text file (-s @FILE, --overlay @FILE, --tool-result ID=@FILE) may hold: 1 GiB, or CACHET_MAX_STDIN_BYTES. */
function promptMaxBytes(): number {
  return maxStdinBytes(process.env);
}

/** The `-o key=value` pairs, in order (a later key overrides an earlier one). */
function parseOptions(pairs: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new CachetError("BAD_FLAG", `-o ${pair}: expected key=value`, { hint: "e.g. -o top_p=0.9 -o reasoning_effort=low" });
    const key = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    // -o sets one top-level key of the request body; a dotted key would be sent literally (then a provider 400).
    if (key.includes(".")) {
      const [head, ...path] = key.split(".");
      const nested = path.reduceRight<unknown>((inner, k) => ({ [k]: inner }), parseValue(raw));
      refuseOwnedOptions({ [head!]: nested }); // `-o text.format=…` is named as the owned part it means
      throw new CachetError("BAD_FLAG", `-o ${key}: -o sets a top-level key of the request and does not nest dotted keys`, {
        hint: `give the object as JSON: -o ${head}='${JSON.stringify(nested)}'`,
      });
    }
    out[key] = parseValue(raw);
  }
  // Refused here too, before anything is read or sent; the adapters apply the same rule to options from anywhere.
  refuseOwnedOptions(out);
  return out;
}

/** An `-o` value: JSON when it parses, else the plain string. */
function parseValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function numberFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = decimalNumber(value);
  if (n === undefined) throw new CachetError("BAD_FLAG", `${flag} ${value}: expected a non-negative number in decimal digits (a fraction allowed)`, { hint: "run `cachet run --help` for the flags and their values" });
  return n;
}

/**
 * A duration flag in seconds, as ms. 0 means no limit (unless `zero` is false);
 * a value a timer cannot hold (over about 24.8 days) is a usage error, never
 * a limit that silently fires at once.
 */
function secondsFlag(value: string | undefined, flag: string, fallbackS: number, options: { zero?: boolean } = {}): number {
  const n = value === undefined ? fallbackS : (decimalNumber(value) ?? Number.NaN);
  if (n === 0 && options.zero !== false) return 0;
  const ms = Math.round(n * 1000);
  // One message for every value that is not one (`abc`, `-1`, `0` where 0 is no "no limit", too large).
  if (!(ms >= 1 && n <= MAX_TIMER_S)) {
    throw new CachetError("BAD_FLAG", `${flag} ${value}: expected seconds from 0.001 to ${MAX_TIMER_S}${options.zero !== false ? ", or 0 for no limit" : ""}`, {
      hint: n > MAX_TIMER_S ? "timers hold at most 2^31 − 1 ms (about 24.8 days)" : "run `cachet run --help` for the flags and their values",
    });
  }
  return ms;
}

/** An integer flag ≥ `min`: one message for every value that is not one (`abc`, `1.5`, `0` when min is 1). */
function intFlag(value: string | undefined, flag: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = decimalInteger(value);
  if (n === undefined || n < min) throw new CachetError("BAD_FLAG", `${flag} ${value}: expected an integer ≥ ${min} in decimal digits`, { hint: "run `cachet run --help` for the flags and their values" });
  return n;
}
