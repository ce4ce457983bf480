/**
 * The fault matrix of issue 12, through the compiled binary against an
 * emulator process: every fault × every moment of a turn, each cell in its
 * own CACHET_HOME, on a copy of a session that already holds one good turn.
 * Four workers each own an emulator process (reset before each cell, so a
 * cell sees only its own requests); the faulted run loads a test plugin that
 * names the cell's emulator fault in the `x-emulator-fault` request header,
 * so the `cachet -c` that follows is served without it. It prints
 * `faults: N cells, N held` and a table, and fails if any cell does not hold.
 *
 * Moments (what has happened when the fault strikes):
 * - before send: the wire request is ready, nothing of the turn is stored or
 *   sent (a plugin's `request:before` hook holds the run there);
 * - before first byte: the request reached the provider, no byte came back
 *   (the emulator's `hold` fault keeps the response from starting until the
 *   test releases it; the prompt is stored);
 * - mid-stream: part of the answer reached stdout and the store (a
 *   `response:event` hook holds the run at the second text delta, or the
 *   emulator's `stall`/`cut`/`error-after` stop the stream half-way);
 * - while storing: the stream ended (a `response:event` hook at the finish
 *   event holds the run before the answer's final save and the ledger write;
 *   for hooks, the `usage:record` hook, which runs as the turn is recorded).
 * Rule for cells that cannot happen: a provider's answer (an HTTP status, a
 * cut or reset connection, a stall, keep-alive chatter, an error event) comes
 * only after the request was sent and before cachet stores the turn, so those
 * faults have no "before send" or "while storing" cell; an HTTP status or a
 * reset precede every byte of a body, so they have no "mid-stream" cell; an
 * overload event before output, keep-alive chatter with no content are by
 * definition "before the first content byte", and the overload after output
 * and the cut after the first byte are by definition "mid-stream". For hooks,
 * no hook runs between the send and the first byte: "before first byte" is the
 * first `response:event` (the stream's start, before any content). Such cells
 * are listed as `n/a: <reason>` and not counted in N.
 *
 * A cell holds when:
 * - the exit code is the documented one for that fault (README "Exit codes");
 * - no turn lost: the earlier turn is intact, and the faulted turn is stored
 *   as documented: complete; partial (marked incomplete, its text exactly what
 *   stdout showed; after SIGKILL, at least what the store was seen holding and
 *   no more than stdout showed, as a growing answer is saved every 250 ms and a
 *   killed process writes nothing more); rolled back (the log as before the turn, when no answer
 *   came); or, after SIGKILL before the first byte or a store that refused the
 *   answer, the prompt left unanswered (the next turn takes it out, with a notice);
 *   when the store itself fails (disk full, read-only, lease taken over), what
 *   is stored is what was written before the fault: a prefix of stdout;
 * - no duplicated stdout: what stdout showed is a prefix of the one answer;
 * - every billed attempt in the ledger: each request the emulator answered
 *   (status 200, so the provider reported usage) has a ledger row with its
 *   usage, except (a) when the store refuses writes (disk full, read-only, the
 *   lease taken over): the error names the rows not written and their usage
 *   instead, and (b) SIGKILL: a killed process writes nothing more, so each
 *   request it sent has its in-flight row (written as it was sent: status
 *   in_flight, usage unknown), which the next turn marks lost;
 * - the session still continuable: `cachet -c` afterwards exits 0, and the
 *   request the emulator received for it is well formed (user and assistant
 *   alternate, first the earlier turn's prompt, last the new prompt, no empty
 *   message), and the log then ends with that turn complete.
 *
 * Cells run four at a time; every wait is on an event (a file a hook writes,
 * the emulator's request log, stdout bytes, the store's content), none on time.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome, until } from "./harness.ts";
import { against, exportSession, startEmulatorProcess, type EmulatorProcess } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const MODEL = "anthropic/claude-sonnet-4-6";
/** The scripted answer: long enough for many text deltas, so a stream can stop half-way. */
const ANSWER = Array.from({ length: 48 }, (_, i) => `step${i + 1}`).join(" ");
const FIRST = "first question";
const SECOND = "second question";
const THIRD = "third question";

type Moment = "before send" | "before first byte" | "mid-stream" | "while storing";
const MOMENTS: Moment[] = ["before send", "before first byte", "mid-stream", "while storing"];

/** Where the test plugin holds the run, and what it does there. */
type GateAt = "request:before" | "first-event" | "text:2" | "finish" | "usage:record";
type GateDo = "wait" | "hang" | "throw";

/** How one cell is driven and what it must leave. */
interface Plan {
  /** The emulator fault of the faulted run's requests (`x-emulator-fault`; `NAME:1`: its first request only). */
  emu?: string;
  flags?: string[];
  gate?: [GateAt, GateDo];
  /** CACHET_TEST_STORE_FAULT kind, fired by `act: "store"`. */
  store?: "full" | "readonly";
  /** What to wait for before acting, in order. */
  sync?: ("gate" | "received" | "stdout" | "stored")[];
  act?: "SIGINT" | "SIGTERM" | "SIGKILL" | "epipe" | "store" | "steal";
  release?: "gate" | "emulator";
  code: number;
  turn: "complete" | "partial" | "rolled back" | "unanswered" | "kept";
  /** "billed": every answered request has a row; "named": the error names the rows not written; "killed": the attempt in flight has none. */
  ledger: "billed" | "named" | "killed";
  /** Nothing reached the provider. */
  unsent?: true;
}

type Cell = { fault: string; moment: Moment } & ({ na: string } | { plan: Plan });

const PROVIDER_NA = {
  send: "a provider's answer cannot come before the request is sent",
  store: "the provider no longer answers once the stream ended and cachet stores the turn",
  status: "an HTTP status precedes every byte of a body",
};

function providerRow(fault: string, at: Partial<Record<Moment, Plan | string>>): Cell[] {
  return MOMENTS.map((moment) => {
    const entry = at[moment];
    if (entry === undefined) throw new Error(`${fault} ${moment}: no plan`);
    return typeof entry === "string" ? { fault, moment, na: entry } : { fault, moment, plan: entry };
  });
}

const RETRY_1 = ["--retries", "1"];
const IDLE_1 = ["--idle-timeout", "1"];
const HOOK_LIMIT = ["--hook-timeout", "0.5"];

function httpRow(status: string): Cell[] {
  return providerRow(`HTTP ${status} before output`, {
    "before send": PROVIDER_NA.send,
    "before first byte": { emu: status, flags: RETRY_1, code: 4, turn: "rolled back", ledger: "billed" },
    "mid-stream": PROVIDER_NA.status,
    "while storing": PROVIDER_NA.store,
  });
}

function hookRow(name: string, act: GateDo): Cell[] {
  const flags = act === "hang" ? HOOK_LIMIT : [];
  return [
    { fault: name, moment: "before send", plan: { gate: ["request:before", act], flags, code: 1, turn: "rolled back", ledger: "billed", unsent: true } },
    { fault: name, moment: "before first byte", plan: { gate: ["first-event", act], flags, code: 1, turn: "rolled back", ledger: "billed" } },
    { fault: name, moment: "mid-stream", plan: { gate: ["text:2", act], flags, code: 1, turn: "partial", ledger: "billed" } },
    { fault: name, moment: "while storing", plan: { gate: ["usage:record", act], flags, code: 0, turn: "complete", ledger: "billed" } },
  ];
}

function signalRow(signal: "SIGINT" | "SIGTERM"): Cell[] {
  const code = signal === "SIGINT" ? 130 : 143;
  return [
    { fault: signal, moment: "before send", plan: { gate: ["request:before", "wait"], sync: ["gate"], act: signal, code, turn: "rolled back", ledger: "billed", unsent: true } },
    { fault: signal, moment: "before first byte", plan: { emu: "hold:1", sync: ["received"], act: signal, code, turn: "rolled back", ledger: "billed" } },
    { fault: signal, moment: "mid-stream", plan: { emu: "stall:1", flags: ["--idle-timeout", "600"], sync: ["stdout"], act: signal, code, turn: "partial", ledger: "billed" } },
    { fault: signal, moment: "while storing", plan: { gate: ["finish", "wait"], sync: ["gate", "stored"], act: signal, code, turn: "partial", ledger: "billed" } },
  ];
}

/** A store that refuses writes from the moment on: what was written before stays, the rest is named. */
function storeRow(name: string, act: "store" | "steal", store?: "full" | "readonly"): Cell[] {
  const base = { act, code: 1, ledger: "named" as const, ...(store ? { store } : {}) };
  return [
    { fault: name, moment: "before send", plan: { ...base, gate: ["request:before", "wait"], sync: ["gate"], release: "gate", turn: "rolled back", ledger: "billed", unsent: true } },
    { fault: name, moment: "before first byte", plan: { ...base, emu: "hold:1", sync: ["received"], release: "emulator", turn: "unanswered" } },
    { fault: name, moment: "mid-stream", plan: { ...base, gate: ["text:2", "wait"], sync: ["gate", "stored"], release: "gate", turn: "kept" } },
    { fault: name, moment: "while storing", plan: { ...base, gate: ["finish", "wait"], sync: ["gate", "stored"], release: "gate", turn: "kept" } },
  ];
}

const CELLS: Cell[] = [
  ...httpRow("429"),
  ...httpRow("500"),
  ...httpRow("503"),
  ...httpRow("529"),
  ...providerRow("overload in a 200 stream before output", {
    "before send": PROVIDER_NA.send,
    "before first byte": { emu: "error-before", flags: RETRY_1, code: 4, turn: "rolled back", ledger: "billed" },
    "mid-stream": "before output is before the first content byte (the after-output row is mid-stream)",
    "while storing": PROVIDER_NA.store,
  }),
  ...providerRow("overload in a 200 stream after output", {
    "before send": PROVIDER_NA.send,
    "before first byte": "after output is after the first byte (the before-output row)",
    "mid-stream": { emu: "error-after:1", code: 4, turn: "partial", ledger: "billed" },
    "while storing": PROVIDER_NA.store,
  }),
  ...providerRow("connection cut before the first byte", {
    "before send": PROVIDER_NA.send,
    "before first byte": { emu: "reset", flags: RETRY_1, code: 4, turn: "rolled back", ledger: "billed" },
    "mid-stream": "a cut before the first byte is not mid-stream (the after-first-byte row is)",
    "while storing": PROVIDER_NA.store,
  }),
  ...providerRow("connection cut after the first byte", {
    "before send": PROVIDER_NA.send,
    "before first byte": "after the first byte is not before it (the before-first-byte row)",
    "mid-stream": { emu: "cut:1", code: 4, turn: "partial", ledger: "billed" },
    "while storing": PROVIDER_NA.store,
  }),
  ...providerRow("stall", {
    "before send": PROVIDER_NA.send,
    "before first byte": { emu: "hold:1", flags: IDLE_1, code: 4, turn: "rolled back", ledger: "billed" },
    "mid-stream": { emu: "stall:1", flags: IDLE_1, code: 4, turn: "partial", ledger: "billed" },
    "while storing": PROVIDER_NA.store,
  }),
  ...providerRow("keep-alive chatter", {
    "before send": PROVIDER_NA.send,
    "before first byte": { emu: "chatter:1", flags: IDLE_1, code: 4, turn: "rolled back", ledger: "billed" },
    "mid-stream": "the emulator's chatter starts before content; chatter after content is a stall with pings, which the stall row covers (pings are not liveness)",
    "while storing": PROVIDER_NA.store,
  }),
  ...hookRow("hanging hook", "hang"),
  ...hookRow("throwing hook", "throw"),
  { fault: "EPIPE", moment: "before send", plan: { gate: ["request:before", "wait"], sync: ["gate"], act: "epipe", release: "gate", code: 0, turn: "complete", ledger: "billed" } },
  { fault: "EPIPE", moment: "before first byte", plan: { emu: "hold:1", sync: ["received"], act: "epipe", release: "emulator", code: 0, turn: "complete", ledger: "billed" } },
  { fault: "EPIPE", moment: "mid-stream", plan: { gate: ["text:2", "wait"], sync: ["gate", "stdout"], act: "epipe", release: "gate", code: 0, turn: "complete", ledger: "billed" } },
  { fault: "EPIPE", moment: "while storing", plan: { gate: ["finish", "wait"], sync: ["gate", "stdout"], act: "epipe", release: "gate", code: 0, turn: "complete", ledger: "billed" } },
  ...signalRow("SIGINT"),
  ...signalRow("SIGTERM"),
  { fault: "SIGKILL", moment: "before send", plan: { gate: ["request:before", "wait"], sync: ["gate"], act: "SIGKILL", code: 137, turn: "rolled back", ledger: "killed", unsent: true } },
  { fault: "SIGKILL", moment: "before first byte", plan: { emu: "hold:1", sync: ["received"], act: "SIGKILL", code: 137, turn: "unanswered", ledger: "killed" } },
  { fault: "SIGKILL", moment: "mid-stream", plan: { emu: "stall:1", flags: ["--idle-timeout", "600"], sync: ["stdout", "stored"], act: "SIGKILL", code: 137, turn: "partial", ledger: "killed" } },
  { fault: "SIGKILL", moment: "while storing", plan: { gate: ["finish", "wait"], sync: ["gate", "stored"], act: "SIGKILL", code: 137, turn: "partial", ledger: "killed" } },
  ...storeRow("disk full", "store", "full"),
  ...storeRow("read-only store", "store", "readonly"),
  ...storeRow("lease stolen", "steal"),
];

/**
 * The test plugin: names the emulator fault FAULT_EMU in the request's `x-emulator-fault` header, and holds, hangs
 * or throws at one point of the turn (FAULT_GATE_AT / _DO), writing `ready` in FAULT_GATE_DIR and waiting for `go`.
 */
const GATE_PLUGIN = `import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
const at = process.env.FAULT_GATE_AT;
const act = process.env.FAULT_GATE_DO;
const dir = process.env.FAULT_GATE_DIR;
let fired = false;
let events = 0;
let texts = 0;
function gate() {
  if (fired) return undefined;
  fired = true;
  if (act === "throw") throw new Error("fault-gate: a bug in the plugin");
  writeFileSync(join(dir, "ready"), "");
  if (act === "hang") return new Promise(() => {});
  return new Promise((resolve) => {
    const poll = () => (existsSync(join(dir, "go")) ? resolve(undefined) : setTimeout(poll, 5));
    poll();
  });
}
export default { name: "fault-gate", api: 1, setup(api) {
  const fault = process.env.FAULT_EMU;
  if (fault) api.hook("request:before", (wire) => ({ ...wire, headers: { ...wire.headers, "x-emulator-fault": fault } }));
  if (at === "request:before") api.hook("request:before", async () => { await gate(); });
  if (at === "usage:record") api.hook("usage:record", () => gate());
  if (at === "first-event" || at === "text:2" || at === "finish") {
    api.hook("response:event", (event) => {
      events++;
      if (event.type === "text") texts++;
      if ((at === "first-event" && events === 1) || (at === "text:2" && event.type === "text" && texts === 2) || (at === "finish" && event.type === "finish")) return gate();
    });
  }
} };
`;

let fixtures = "";
let template = "";
/** The template session as exported: one good turn. */
let before: Awaited<ReturnType<typeof exportSession>>;

beforeAll(async () => {
  fixtures = freshHome();
  writeFileSync(join(fixtures, "gate.mjs"), GATE_PLUGIN);
  writeFileSync(join(fixtures, "script.json"), JSON.stringify(Array.from({ length: 4 }, () => ({ text: ANSWER }))));
  // One good turn, made once and copied into every cell's home.
  template = freshHome();
  const emulator = await startEmulatorProcess(template, { CACHET_EMULATOR_SCRIPT: join(fixtures, "script.json") });
  try {
    const target = against(emulator, MODEL);
    const first = await cachet([...target.args, "-m", MODEL, FIRST], { home: template, env: target.env });
    if (first.code !== 0) throw new Error(`the template turn failed: ${first.stderr}`);
  } finally {
    emulator.stop();
  }
  const db = new Database(join(template, "cachet.db"));
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  before = await exportSession(template);
});

/** The text of the last stored message when it is the assistant's, read straight from the store file. */
function storedAnswer(home: string): string | undefined {
  const path = join(home, "cachet.db");
  if (!existsSync(path)) return undefined;
  const db = new Database(path, { readonly: true });
  try {
    const row = db.query("SELECT role, content FROM messages ORDER BY seq DESC LIMIT 1").get() as { role: string; content: string } | null;
    if (row?.role !== "assistant") return undefined;
    return (JSON.parse(row.content) as Raw[]).filter((b) => b.type === "text").map((b) => b.text).join("");
  } finally {
    db.close();
  }
}

function textOf(message: Raw): string {
  return (message.content as Raw[]).filter((b) => b.type === "text").map((b) => b.text).join("");
}

/** A user message's text, whatever its content shape. */
function userText(message: Raw): string {
  return typeof message.content === "string" ? message.content : (message.content as Raw[]).filter((b) => b.type === "text").map((b) => b.text).join("");
}

interface Outcome {
  held: boolean;
  /** Wall time of the cell (emulator, faulted run, checks, -c), ms. */
  ms: number;
  summary: string;
  problems: string[];
}

async function runCell(cell: Cell & { plan: Plan }, emulator: EmulatorProcess): Promise<Outcome> {
  const { plan } = cell;
  const started = performance.now();
  const home = freshHome();
  const gateDir = join(home, "gate");
  mkdirSync(gateDir);
  copyFileSync(join(template, "cachet.db"), join(home, "cachet.db"));
  await fetch(`${emulator.url}/_emulator/reset`, { method: "POST" });
  const problems: string[] = [];
  const trigger = join(home, "store-fault");
  try {
    const target = against(emulator, MODEL);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      CACHET_DAEMON_AUTOSTART: "0",
      HOME: home,
      CACHET_HOME: home,
      NO_COLOR: "1",
      ...target.env,
      CACHET_PLUGINS: join(fixtures, "gate.mjs"),
      ...(plan.emu ? { FAULT_EMU: plan.emu } : {}),
      ...(plan.gate ? { FAULT_GATE_AT: plan.gate[0], FAULT_GATE_DO: plan.gate[1], FAULT_GATE_DIR: gateDir } : {}),
      ...(plan.store ? { CACHET_TEST_STORE_FAULT: `${plan.store}@${trigger}` } : {}),
    };
    const proc = Bun.spawn([BINARY, ...target.args, "-c", ...(plan.flags ?? []), SECOND], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const alive = () => proc.exitCode === null && proc.signalCode === null;
    let stdout = "";
    let reading = true;
    const reader = proc.stdout.getReader();
    const decoder = new TextDecoder();
    const pump = (async () => {
      for (;;) {
        const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (chunk.done || !reading) return;
        stdout += decoder.decode(chunk.value, { stream: true });
      }
    })();
    const stderrText = new Response(proc.stderr).text();
    const kill = setTimeout(() => proc.kill("SIGKILL"), 25_000);

    const lease = { thief: `t_thief_${process.pid}` };
    /** What stdout showed when the store was seen holding it (the "stored" sync step). */
    let confirmed: string | undefined;
    for (const step of plan.sync ?? []) {
      if (step === "gate") await until("the plugin's gate", () => existsSync(join(gateDir, "ready")), alive);
      if (step === "received") await until("the emulator to receive the request", async () => (await emulator.received()).some((r) => r.fault === "hold"), alive);
      if (step === "stdout") await until("answer text on stdout", () => stdout.trim() !== "", alive);
      if (step === "stored") {
        await until("the store to hold what stdout showed", () => stdout.trim() !== "" && storedAnswer(home) === stdout, alive);
        confirmed = stdout;
      }
    }
    switch (plan.act) {
      case "SIGINT":
      case "SIGTERM":
      case "SIGKILL":
        proc.kill(plan.act);
        break;
      case "epipe":
        reading = false;
        await reader.cancel();
        break;
      case "store":
        writeFileSync(trigger, "");
        break;
      case "steal": {
        // Another process took the session over (its lease expired while this one stalled).
        const db = new Database(join(home, "cachet.db"));
        db.exec("PRAGMA busy_timeout = 10000");
        const { changes } = db.query("UPDATE turn_leases SET token = ?, owner_pid = ?, host = ?").run(lease.thief, process.pid, hostname());
        db.close();
        if (changes !== 1) problems.push(`the lease to steal was not there (${changes} rows)`);
        break;
      }
    }
    if (plan.release === "gate") writeFileSync(join(gateDir, "go"), "");
    if (plan.release === "emulator") await fetch(`${emulator.url}/_emulator/release`, { method: "POST" });
    const code = await proc.exited;
    clearTimeout(kill);
    await pump;
    const stderr = await stderrText;
    if (plan.act === "steal") {
      // The thief finishes its turn and lets the session go.
      const db = new Database(join(home, "cachet.db"));
      db.exec("PRAGMA busy_timeout = 10000");
      db.query("DELETE FROM turn_leases WHERE token = ?").run(lease.thief);
      db.close();
    }
    const received = await emulator.received();

    // Exit code.
    if (code !== plan.code) problems.push(`exit ${code}, expected ${plan.code}: ${stderr.trim().split("\n").slice(0, 2).join(" / ")}`);
    // No duplicated stdout.
    const shown = stdout.replace(/\n$/, "");
    if (!ANSWER.startsWith(shown)) problems.push(`stdout is not a prefix of the one answer: ${JSON.stringify(stdout.slice(0, 120))}`);
    if (plan.turn === "complete" && plan.act !== "epipe" && shown !== ANSWER) problems.push(`stdout is not the whole answer: ${JSON.stringify(stdout.slice(0, 80))}`);
    if (plan.unsent && received.length > 0) problems.push(`${received.length} requests reached the provider`);

    // No turn lost.
    const after = await exportSession(home);
    const log = after.messages;
    if (JSON.stringify(log.slice(0, 2)) !== JSON.stringify(before.messages)) problems.push("the earlier turn changed");
    const turn = log.slice(2);
    const roles = turn.map((m) => m.role).join(",");
    const stored = turn[1] ? textOf(turn[1]) : undefined;
    switch (plan.turn) {
      case "complete":
        if (roles !== "user,assistant" || turn[1]!.incomplete || stored !== ANSWER) problems.push(`turn not stored complete: ${roles} ${turn[1]?.incomplete ? "incomplete" : ""}`);
        break;
      case "partial":
        if (roles !== "user,assistant" || !turn[1]!.incomplete) problems.push(`turn not stored as a marked partial answer: ${roles}`);
        else if (plan.act === "SIGKILL" && confirmed !== undefined) {
          // A killed process writes nothing more, and a growing answer is saved at most every 250 ms (README): text
          // printed after the last save is gone, but nothing seen stored is, and nothing unseen is stored.
          if (!stored?.startsWith(confirmed.replace(/\n$/, "")) || !shown.startsWith(stored)) problems.push(`stored partial ${JSON.stringify(stored?.slice(-30))} is not between what was seen stored ${JSON.stringify(confirmed.slice(-30))} and what stdout showed ${JSON.stringify(shown.slice(-30))}`);
        } else if (stored !== shown) problems.push(`stored partial ${JSON.stringify(stored?.slice(-30))} is not what stdout showed ${JSON.stringify(shown.slice(-30))}`);
        break;
      case "rolled back":
        if (turn.length !== 0) problems.push(`the unanswered turn was not rolled back: ${roles}`);
        break;
      case "unanswered":
        if (roles !== "user") problems.push(`expected the prompt left unanswered, got ${roles || "nothing"}`);
        break;
      case "kept":
        if (roles !== "user,assistant" || !turn[1]!.incomplete || !shown.startsWith(stored ?? "\u0000") || stored === "") problems.push(`expected the partial answer written before the fault, marked incomplete: ${roles} ${JSON.stringify(stored?.slice(-20))}`);
        break;
    }
    if (turn[0] && userText(turn[0]) !== SECOND) problems.push(`the stored prompt is ${JSON.stringify(userText(turn[0]))}`);

    // Every billed attempt in the ledger.
    const billed = received.filter((r) => r.status === 200).length;
    const rows = after.requests.slice(before.requests.length);
    const withUsage = rows.filter((r) => typeof r.usage?.input === "number").length;
    if (JSON.stringify(after.requests.slice(0, before.requests.length)) !== JSON.stringify(before.requests)) problems.push("the earlier ledger rows changed");
    if (plan.ledger === "billed" && withUsage !== billed) problems.push(`${billed} billed attempts, ${withUsage} ledger rows with usage (${rows.map((r) => r.status).join(",")})`);
    if (plan.ledger === "named" && billed > 0 && withUsage !== billed) {
      const named = (stderr.match(/attempt \d+: input \d+/g) ?? []).length;
      if (named + withUsage !== billed) problems.push(`${billed} billed attempts, ${withUsage} rows, ${named} named in the error: ${stderr.trim().split("\n")[0]}`);
      if (!/kept: the prompt/.test(stderr)) problems.push(`the error does not say what was kept: ${stderr.trim()}`);
    }
    if (plan.ledger === "killed" && (rows.length !== received.length || rows.some((r) => r.status !== "in_flight" || r.usage.input !== undefined))) problems.push(`${received.length} requests sent, ledger rows after the kill: ${rows.map((r) => r.status).join(",") || "none"}`);

    // Still continuable with -c.
    const next = await cachet([...target.args, "-c", THIRD], { home, env: target.env });
    if (next.code !== 0) problems.push(`-c exited ${next.code}: ${next.stderr.trim().split("\n")[0]}`);
    if (plan.turn === "unanswered" && !next.stderr.includes("never got an answer")) problems.push("-c did not say it took the unanswered prompt out");
    const bodies = await emulator.bodies();
    const last = bodies.at(-1);
    const wire = (last?.messages ?? []) as Raw[];
    const alternate = wire.every((m, i) => m.role === (i % 2 === 0 ? "user" : "assistant"));
    const empty = wire.some((m) => (Array.isArray(m.content) ? m.content.length === 0 : m.content === ""));
    if (!last || !alternate || wire.length % 2 !== 1 || empty || userText(wire[0]!) !== FIRST || userText(wire.at(-1)!) !== THIRD) {
      problems.push(`the -c request is not well formed: ${wire.map((m) => m.role).join(",")}`);
    }
    const final = await exportSession(home);
    const tail = final.messages.slice(-2);
    if (tail.map((m) => m.role).join(",") !== "user,assistant" || userText(tail[0]!) !== THIRD || tail[1]!.incomplete || textOf(tail[1]!) !== ANSWER) problems.push("the -c turn is not stored complete");

    const summary = `exit ${code}, ${plan.turn === "kept" ? "kept what was written" : plan.turn}, ledger ${withUsage}/${billed} billed${plan.ledger === "named" && withUsage < billed ? " (rest named)" : ""}, -c ${next.code === 0 ? "ok" : `exit ${next.code}`}`;
    return { held: problems.length === 0, ms: performance.now() - started, summary, problems };
  } catch (error) {
    return { held: false, ms: performance.now() - started, summary: "error", problems: [...problems, (error as Error).message] };
  }
}

/** Runs `tasks` on `workers` (each owning what it hands to a task), one task per worker at a time; results in task order. */
async function pool<W, T>(workers: W[], tasks: ((worker: W) => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    workers.map(async (worker) => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!(worker);
      }
    }),
  );
  return results;
}

test("fault matrix: every cell holds", async () => {
  const only = process.env.FAULT_MATRIX_ONLY;
  const cells = CELLS.filter((c) => !only || `${c.fault} @ ${c.moment}`.includes(only));
  const runnable = cells.filter((c) => !("na" in c)).length;
  const emulators = await Promise.all(
    Array.from({ length: Math.min(4, runnable) }, () => startEmulatorProcess(freshHome(), { CACHET_EMULATOR_SCRIPT: join(fixtures, "script.json") })),
  );
  const started = performance.now();
  let outcomes: (Outcome | undefined)[];
  try {
    outcomes = await pool(
      emulators,
      cells.map((cell) => (emulator: EmulatorProcess) => ("na" in cell ? Promise.resolve(undefined) : runCell(cell, emulator))),
    );
  } finally {
    for (const emulator of emulators) emulator.stop();
  }
  const wallS = (performance.now() - started) / 1000;
  const width = Math.max(...cells.map((c) => c.fault.length));
  const lines: string[] = [];
  let counted = 0;
  let held = 0;
  cells.forEach((cell, i) => {
    const outcome = outcomes[i];
    const head = `${cell.fault.padEnd(width)}  ${cell.moment.padEnd(17)}`;
    if ("na" in cell) {
      lines.push(`${head}  n/a: ${cell.na}`);
      return;
    }
    counted++;
    if (outcome!.held) held++;
    lines.push(`${head}  ${outcome!.held ? "held" : "FAILED"}  ${(outcome!.ms / 1000).toFixed(1).padStart(4)} s  ${outcome!.summary}${outcome!.held ? "" : `\n${" ".repeat(width + 21)}${outcome!.problems.join("\n" + " ".repeat(width + 21))}`}`);
  });
  lines.push(`${cells.length - counted} cells n/a; the cells ran in ${wallS.toFixed(0)} s, 4 at a time`);
  console.log(`${lines.join("\n")}\nfaults: ${counted} cells, ${held} held`);
  expect(counted).toBeGreaterThan(0);
  // The failed cells with their problems, so the failure message alone says what broke.
  expect(cells.flatMap((cell, i) => (outcomes[i] && !outcomes[i].held ? [`${cell.fault} @ ${cell.moment}: ${outcomes[i].problems.join("; ")}`] : []))).toEqual([]);
  expect(held).toBe(counted);
}, 600_000);
