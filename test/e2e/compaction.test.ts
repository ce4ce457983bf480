/**
 * Compaction through the compiled binary: `--no-compact` never compacts,
 * `cachet compact` compacts on demand, the next turn's `cachet why` names the
 * compaction as a deliberate change, and `cachet export` still shows every
 * message (the log keeps the uncompacted history).
 */
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, events, freshHome, homeEnv } from "./harness.ts";
import { against, exportSession, startEmulatorProcess, variedText } from "./session-kit.ts";

afterAll(cleanHomes);

const WORDS = ["harbor", "lantern", "quartz", "meadow", "signal", "copper", "falcon", "tundra"];
const big = (i: number) => `Notes ${i}: ` + Array.from({ length: 1500 }, (_, k) => WORDS[(k * 5 + i) % WORDS.length]).join(" ");

test("--no-compact never compacts; cachet compact does; why names it; export keeps every message", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 3000\n");
  for (let i = 1; i <= 3; i++) {
    const r = await cachet(["--emulate", "--no-compact", ...(i > 1 ? ["-c"] : []), big(i)], { home, timeoutMs: 60_000 });
    expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: "" });
  }
  // A script that keeps nothing does not compact either: exit 2, the store untouched.
  const before = (await cachet(["export"], { home })).stdout;
  const kept = await cachet(["compact", "--emulate"], { home, env: { CACHET_NO_STORE: "1" } });
  expect({ code: kept.code, stderr: kept.stderr.split("\n")[0] }).toEqual({ code: 2, stderr: "cachet: cachet compact writes to the session store, which CACHET_NO_STORE=1 keeps untouched" });
  expect((await cachet(["export"], { home })).stdout).toBe(before);
  const compacted = await cachet(["compact", "--emulate", "--json"], { home, timeoutMs: 60_000 });
  expect(compacted.code).toBe(0);
  const record = JSON.parse(compacted.stdout) as { compacted: boolean; id: string; reason: string; tokens_before: number; tokens_after: number };
  expect(record.compacted).toBe(true);
  expect(record.id).toStartWith("c_");
  expect(record.reason).toBe("on demand");
  expect(record.tokens_after).toBeLessThan(record.tokens_before);

  const next = await cachet(["--emulate", "--json", "--no-compact", "-c", "which notes mention the falcon?"], { home, timeoutMs: 60_000 });
  expect(next.code).toBe(0);
  const requestId = events(next.stdout).find((e) => e.type === "done")!.request_id as string;
  const why = await cachet(["why", requestId, "--json"], { home });
  expect(why.code).toBe(0);
  const report = JSON.parse(why.stdout) as { compaction?: { id: string }; causes: string[] };
  expect(report.compaction?.id).toBe(record.id);
  expect(report.causes[0]).toContain(`compaction ${record.id} (on demand)`);

  const exported = await cachet(["export"], { home });
  const messages = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as { type: string }).filter((l) => l.type === "message");
  expect(messages).toHaveLength(8);
}, 180_000);

test("cachet compact on a session of one turn: says there is nothing to compact, and no 'compaction due' warning (no threshold was crossed)", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "hello"], { home })).code).toBe(0);
  const r = await cachet(["compact", "--emulate"], { home });
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 0, stdout: "nothing to compact: the session is its current turn alone\n", stderr: "" });
  const json = await cachet(["compact", "--emulate", "--json"], { home });
  const session = JSON.parse((await cachet(["sessions", "--json"], { home })).stdout) as { id: string };
  expect({ code: json.code, stdout: JSON.parse(json.stdout), stderr: json.stderr }).toEqual({
    code: 0,
    stdout: { compacted: false, session: session.id, why: "the session is its current turn alone" },
    stderr: "",
  });
  const exported = await cachet(["export", "--json"], { home });
  expect(exported.stdout.split("\n").filter((l) => l.includes('"type":"message"'))).toHaveLength(2);
});

const RULES = "You answer questions about the notes the user pastes. " + Array.from({ length: 40 }, (_, k) => `Rule ${k + 1}: quote the part number of every note you cite.`).join(" ");

test("--json: a turn that compacts writes a compaction event after the session event: what was summarized and kept, tokens before and after, the calls it made and their cost", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 5000\n");
  const runs = [];
  for (let i = 1; i <= 3; i++) {
    const r = await cachet(["--emulate", "--json", "--model", "deepseek/deepseek-chat", ...(i > 1 ? ["-c"] : ["--system", RULES]), big(i)], { home, timeoutMs: 60_000 });
    expect({ i, code: r.code }).toEqual({ i, code: 0 });
    runs.push(events(r.stdout));
  }
  expect(runs.slice(0, 2).flat().filter((e) => e.type === "compaction")).toEqual([]);
  const third = runs[2]!;
  expect(third.map((e) => e.type).slice(0, 2)).toEqual(["session", "compaction"]);
  const event = third[1] as unknown as { id: string; reason: string; summarized: { messages: number; first: string; last: string }; kept: { messages: number; first: string | null }; summary_source: string; tokens_before: number; tokens_after: number; calls: { request_id: string; purpose: string; cost_usd: number | null }[]; cost_usd: number | null };
  expect(event.id).toStartWith("c_");
  expect(event.reason).toBe("threshold");
  // The first two turns (4 messages) are summarized; the new prompt is the whole tail.
  expect(event.summarized.messages).toBe(4);
  expect(event.kept).toEqual({ messages: 0, first: expect.stringMatching(/^m_/) });
  // One-line notes render far below 800 tokens: the render is the entry, no summary call.
  expect(event.summary_source).toBe("extractive");
  expect(event.tokens_after).toBeLessThan(event.tokens_before);
  expect(event.tokens_before).toBeGreaterThan(5000);
  // DeepSeek: the boundary request that makes Z0 + Z1 a cache unit, priced.
  expect(event.calls.map((c) => c.purpose)).toEqual(["boundary"]);
  expect(event.calls[0]!.cost_usd).toBeGreaterThan(0);
  expect(event.cost_usd).toBe(event.calls[0]!.cost_usd);
  const exported = await cachet(["export"], { home });
  const requests = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as { type: string; request?: { id: string; role: string; costUsd: number | null } });
  expect(requests.find((r) => r.request?.id === event.calls[0]!.request_id)?.request).toMatchObject({ role: "compaction", costUsd: event.calls[0]!.cost_usd });
}, 180_000);

test("after a compaction, the next turn in a new process and a fork in another read the cache on their first request (Z1 read back from the store byte for byte)", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 5000\n");
  const turn = async (args: string[]) => {
    const r = await cachet(["--emulate", "--json", "--model", "deepseek/deepseek-chat", ...args], { home, timeoutMs: 60_000 });
    expect({ args: args.slice(0, -1), code: r.code }).toEqual({ args: args.slice(0, -1), code: 0 });
    return events(r.stdout);
  };
  await turn(["--system", RULES, big(1)]);
  await turn(["-c", big(2)]);
  expect((await turn(["-c", big(3)])).some((e) => e.type === "compaction")).toBe(true);
  await turn(["-c", "Which notes mention the falcon?"]);
  const read = async (events: Awaited<ReturnType<typeof turn>>) => {
    const requestId = events.find((e) => e.type === "done")!.request_id as string;
    const exported = await cachet(["export"], { home });
    const row = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as { request?: { id: string; usage: { cacheRead?: number }; cacheableMax: number | null } }).find((l) => l.request?.id === requestId)!.request!;
    return { cacheableMax: row.cacheableMax ?? 0, read: row.usage.cacheRead ?? 0 };
  };
  const resumed = await read(await turn(["-c", "And which mention the tundra?"]));
  const forked = await read(await turn(["--fork", "On a branch: list the notes in order."]));
  for (const first of [resumed, forked]) {
    // Z0 + Z1 + the turns after the compaction: well above DeepSeek's 64-token unit.
    expect(first.cacheableMax).toBeGreaterThan(1000);
    expect(first.read).toBeGreaterThanOrEqual(0.95 * first.cacheableMax);
  }
}, 180_000);

test("Anthropic server-side compaction (-o compaction=server): the API compacts past its trigger, its pass is a ledger row of role server_compaction priced from the usage it reports, the next request starts at the compaction block, cachet's own compaction stays off", async () => {
  const home = freshHome();
  // A low trigger of cachet's own: it must not compact while the provider does.
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 5000\n");
  const system = Array.from({ length: 200 }, (_, k) => `Rule ${k}: cite the part number of every note.`).join(" ");
  // ~27,500 tokens each: the second request is over the 50,000-token trigger.
  const notes = (i: number) => `Notes ${i}: ` + Array.from({ length: 22_000 }, (_, k) => WORDS[(k * 5 + i) % WORDS.length]).join(" ");
  const turn = async (args: string[], stdin?: string) => {
    const r = await cachet(["--emulate", "--json", ...args], { home, timeoutMs: 60_000, ...(stdin !== undefined ? { stdin } : {}) });
    expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
    return events(r.stdout);
  };
  const first = await turn(["-m", "anthropic/claude-sonnet-4-6", "-o", "compaction=server", "-o", "compaction_trigger=50000", "--system", system], notes(1));
  expect(first.some((e) => e.type === "provider_block")).toBe(false);
  const second = await turn(["-c"], notes(2));
  const block = second.find((e) => e.type === "provider_block")?.block as { type: string; content: string } | undefined;
  expect(block?.type).toBe("compaction");
  expect(block!.content.length).toBeGreaterThan(0);
  expect(second.some((e) => e.type === "compaction")).toBe(false);
  // Two usage and cost lines: the compaction pass, then the answer's pass.
  const usages = second.filter((e) => e.type === "usage") as unknown as { request_id: string; input: number; cacheRead: number; cacheWrite5m: number; output: number; raw: { type?: string; input_tokens: number } }[];
  expect(usages.map((u) => u.raw.type ?? "response")).toEqual(["compaction", "response"]);
  const [pass, answer] = usages;
  // The pass read the whole request (~57,000 tokens); the answer's pass read the system prompt and the summary.
  expect(pass!.input + pass!.cacheRead + pass!.cacheWrite5m).toBeGreaterThan(50_000);
  expect(answer!.input + answer!.cacheRead + answer!.cacheWrite5m).toBeLessThan(5_000);
  const costs = second.filter((e) => e.type === "cost") as unknown as { request_id: string; cost_usd: number }[];
  expect(costs.map((c) => c.request_id)).toEqual([pass!.request_id, answer!.request_id]);
  expect(costs[0]!.cost_usd).toBeGreaterThan(costs[1]!.cost_usd);

  const third = await turn(["-c", "Which notes mention the falcon?"]);
  const next = third.find((e) => e.type === "usage") as unknown as { input: number; cacheRead: number; cacheWrite5m: number };
  // Sent from the compaction block on: the system prompt read from the cache, none of the ~55,000 tokens before the block.
  expect(next.cacheRead).toBeGreaterThan(2_000);
  expect(next.input + next.cacheRead + next.cacheWrite5m).toBeLessThan(5_000);

  const exported = await cachet(["export"], { home });
  const rows = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as { request?: { id: string; role: string; costUsd: number } }).filter((l) => l.request).map((l) => l.request!);
  expect(rows.map((r) => r.role)).toEqual(["main", "server_compaction", "main", "main"]);
  expect(rows[1]).toMatchObject({ id: pass!.request_id, costUsd: costs[0]!.cost_usd });
  // The log keeps every message; no summary zone of cachet's own.
  expect(exported.stdout.trim().split("\n").filter((l) => (JSON.parse(l) as { type: string }).type === "message")).toHaveLength(6);

  const wrong = await cachet(["--emulate", "-c", "-o", "compaction=client", "hi"], { home });
  expect({ code: wrong.code, refusal: wrong.stderr.includes("cachet: -o compaction=client: the Anthropic plugin knows only compaction=server") }).toEqual({ code: 2, refusal: true });
}, 180_000);

test("moonshotai/kimi-k2.5 (output limit = window): a second turn with a large system prompt does not compact; the trigger is 0.8 × window, not 0", async () => {
  const home = freshHome();
  const system = join(home, "system.md");
  writeFileSync(system, readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8"));
  const args = ["--emulate", "-m", "moonshotai/kimi-k2.5", "--session", "k", "-s", `@${system}`];
  const first = await cachet([...args, "turn 1"], { home, timeoutMs: 60_000 });
  expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
  const second = await cachet([...args, "--json", "turn 2"], { home, timeoutMs: 60_000 });
  expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" });
  expect(events(second.stdout).filter((e) => e.type === "compaction")).toEqual([]);
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    expect(db.query("SELECT count(*) AS n FROM compactions").get()).toEqual({ n: 0 });
    expect(db.query("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 4 });
  } finally {
    db.close();
  }
}, 120_000);

/** Rows of the store's compaction tables: compactions, summaries, content-addressed summary texts. */
function compactionRows(home: string): { compactions: number; summaries: number; texts: number } {
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    const count = (table: string) => (db.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { compactions: count("compactions"), summaries: count("summaries"), texts: count("summary_texts") };
  } finally {
    db.close();
  }
}

test("SIGINT during a compaction's summary call: exit 130, nothing of the compaction stored (no fallback summary), the summary call's attempt in the ledger, and the message says that call was sent but not the turn's request", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 2000\n");
  // User text stays whole in the extractive render (up to 4 KiB): three such turns render far above 800 tokens, so a summary call is made.
  for (let i = 1; i <= 3; i++) {
    const r = await cachet(["--emulate", "--no-compact", ...(i > 1 ? ["-c"] : []), variedText(20, i)], { home, timeoutMs: 60_000 });
    expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: "" });
  }
  const before = await exportSession(home);
  // The interrupted turn goes to an emulator process that holds its first request (the summary call) unanswered.
  const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold:1" });
  try {
    const target = against(emulator, "anthropic/claude-sonnet-4-6");
    const proc = Bun.spawn([BINARY, ...target.args, "-c", "--json", "turn 4"], {
      env: { ...homeEnv(home), ...target.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const stdout = new Response(proc.stdout).text();
    const stderr = new Response(proc.stderr).text();
    const deadline = Date.now() + 30_000;
    while (!(await emulator.received()).some((r) => r.fault === "hold")) {
      if (Date.now() > deadline || proc.exitCode !== null) throw new Error("the summary call never reached the emulator");
      await Bun.sleep(5);
    }
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    const err = await stderr;
    expect(err).toContain("cachet: interrupted by SIGINT during the compaction's summary call: that call was sent (it is in the ledger); the compaction was not stored, the turn's request was not sent, and the prompt was not stored\n");
    expect(err).not.toContain("extractive render is used");
    expect(err).not.toContain("compacted");
    expect(events(await stdout).filter((e) => e.type === "compaction")).toEqual([]);
    // One request reached the provider: the summary call, a fork of the live request carrying the instruction.
    const received = await emulator.received();
    expect(received.length).toBe(1);
    expect(JSON.stringify(received[0]!.body)).toContain("turn 4");
  } finally {
    emulator.stop();
  }
  expect(compactionRows(home)).toEqual({ compactions: 0, summaries: 0, texts: 0 });
  const after = await exportSession(home);
  expect(after.messages).toEqual(before.messages);
  expect(after.requests.slice(0, 3)).toEqual(before.requests);
  expect(after.requests.slice(3).map((r) => [r.role, r.status])).toEqual([["compaction", "error"]]);

  // The next turn compacts as if nothing had happened.
  const next = await cachet(["--emulate", "-c", "--json", "turn 4 again"], { home, timeoutMs: 60_000 });
  expect(next.code).toBe(0);
  expect(events(next.stdout).filter((e) => e.type === "compaction").map((e) => e.summary_source)).toEqual(["summary"]);
  expect(compactionRows(home)).toMatchObject({ compactions: 1, summaries: 1 });

  // The aborted summary call reported no usage: it has no cacheable maximum, is nobody's previous request (the next
  // summary call's cacheable maximum, cachet why), and the compaction role's cacheable share stays within its prompt.
  const rows = (await exportSession(home)).requests;
  const [aborted, summary] = [rows[3]!, rows[4]!];
  expect([aborted.role, aborted.status, aborted.usage.input, aborted.cacheableMax]).toEqual(["compaction", "error", undefined, null]);
  expect([summary.role, summary.status]).toEqual(["compaction", "ok"]);
  const why = await cachet(["why", summary.id, "--json"], { home });
  expect(why.code).toBe(0);
  expect((JSON.parse(why.stdout) as { previous: { id: string } }).previous.id).toBe(rows[2]!.id);
  const stats = await cachet(["stats", "--by", "role", "--json"], { home });
  const compaction = (JSON.parse(stats.stdout) as { groups: { key: string; promptTokens: number; cacheableTokens: number; cacheableShare: number }[] }).groups.find((g) => g.key === "compaction")!;
  expect(compaction.cacheableTokens).toBe(summary.cacheableMax as number);
  expect(compaction.promptTokens).toBeGreaterThan(0);
  expect(compaction.cacheableShare).toBeLessThanOrEqual(1);
}, 180_000);

test("cachet compact during a running turn waits for it (saying so on stderr), then compacts the session with that turn stored", async () => {
  const home = freshHome();
  for (let i = 1; i <= 2; i++) {
    const r = await cachet(["--emulate", "--no-compact", ...(i > 1 ? ["-c"] : []), variedText(20, i)], { home, timeoutMs: 60_000 });
    expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: "" });
  }
  // The third turn goes to an emulator process that holds its request until released.
  const emulator = await startEmulatorProcess(freshHome(), { CACHET_EMULATOR_FAULT: "hold:1" });
  try {
    writeFileSync(join(home, "config.toml"), `[compaction]\ntrigger_tokens = 2000\n\n[providers.anthropic]\nbase_url = "${emulator.url}/anthropic"\n`);
    const env = { ...homeEnv(home), ANTHROPIC_API_KEY: "test-key" };
    const turn = Bun.spawn([BINARY, "--no-compact", "-c", "--json", variedText(20, 3)], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const turnOut = new Response(turn.stdout).text();
    const turnErr = new Response(turn.stderr).text();
    const until = async (what: string, check: () => boolean | Promise<boolean>) => {
      const deadline = Date.now() + 30_000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await Bun.sleep(5);
      }
    };
    await until("the emulator to hold the turn's request", async () => (await emulator.received()).some((r) => r.fault === "hold"));

    const compact = Bun.spawn([BINARY, "compact", "--json"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const compactOut = new Response(compact.stdout).text();
    let compactErr = "";
    const decoder = new TextDecoder();
    const compactErrDone = (async () => {
      for await (const chunk of compact.stderr) compactErr += decoder.decode(chunk, { stream: true });
    })();
    await until("compact to say it waits for the turn", () => compactErr.includes("is running a turn"));
    expect(compact.exitCode).toBeNull();
    expect(compactErr).toMatch(/^cachet: session s_\w+ is running a turn \(process \d+ on .+\): waiting for it to finish before compacting it\n/);

    await fetch(`${emulator.url}/_emulator/release`, { method: "POST" });
    expect({ code: await turn.exited, stderr: await turnErr }).toEqual({ code: 0, stderr: "" });
    const answered = events(await turnOut).find((e) => e.type === "done")!;
    expect(await compact.exited).toBe(0);
    await compactErrDone;
    const record = JSON.parse(await compactOut) as { compacted: boolean; id: string };
    expect(record.compacted).toBe(true);
    const { lines, messages, requests } = await exportSession(home);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(requests.find((r) => r.id === answered.request_id)?.status).toBe("ok");
    // Made once the turn's answer was stored, not under it.
    const answerStored = lines.filter((l) => l.type === "message").at(-1)!.createdAt as number;
    const db = new Database(join(home, "cachet.db"), { readonly: true });
    const made = (db.query("SELECT created_at FROM compactions WHERE id = ?").get(record.id) as { created_at: number }).created_at;
    db.close();
    expect(made).toBeGreaterThanOrEqual(answerStored);
  } finally {
    emulator.stop();
  }
}, 180_000);

test("cachet compact on two short turns stores nothing: the summary zone would make the next request bigger (compacted: false, with the estimates)", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "first"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "-c", "second"], { home })).code).toBe(0);
  const r = await cachet(["compact", "--emulate", "--json"], { home });
  expect([r.code, r.stderr]).toEqual([0, ""]);
  const out = JSON.parse(r.stdout) as { compacted: boolean; session: string; why: string };
  const [, before, after] = /^it would not make the next request smaller \(~(\d+) → ~(\d+) tokens\)$/.exec(out.why)!.map(Number);
  expect(after).toBeGreaterThanOrEqual(before!);
  expect(out).toEqual({ compacted: false, session: (await exportSession(home)).session.id, why: out.why });
  expect(compactionRows(home)).toEqual({ compactions: 0, summaries: 0, texts: 1 });
  const text = await cachet(["compact", "--emulate"], { home });
  expect([text.code, text.stdout, text.stderr]).toEqual([0, `nothing to compact: ${out.why}\n`, ""]);
});

test("cachet compact twice: the second, with nothing new, does nothing; the next turn estimates the compacted request, not the one before the compaction; --json uses the compaction line's names", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 2000\n");
  for (let i = 1; i <= 3; i++) {
    const r = await cachet(["--emulate", "--no-compact", ...(i > 1 ? ["-c"] : []), variedText(20, i)], { home, timeoutMs: 60_000 });
    expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: "" });
  }
  const first = await cachet(["compact", "--emulate", "--json"], { home, timeoutMs: 60_000 });
  expect(first.code).toBe(0);
  const made = JSON.parse(first.stdout) as Record<string, unknown> & { id: string; session: string; tokens_before: number; tokens_after: number };
  expect(Object.keys(made).sort()).toEqual(["calls", "compacted", "cost_usd", "id", "kept", "reason", "session", "summarized", "summary_source", "tokens_after", "tokens_before"]);
  expect(made.compacted).toBe(true);
  expect(made.tokens_after).toBeLessThan(made.tokens_before);
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  const zone = () => (db.query("SELECT messages, covers_through FROM summaries").get() as object);
  const zoneAfterFirst = zone();

  const second = await cachet(["compact", "--emulate", "--json"], { home, timeoutMs: 60_000 });
  expect([second.code, JSON.parse(second.stdout), second.stderr]).toEqual([0, { compacted: false, session: made.session, why: `nothing new since the last compaction (${made.id})` }, ""]);
  expect(compactionRows(home).compactions).toBe(1);
  expect(zone()).toEqual(zoneAfterFirst);
  db.close();

  // A trigger between the estimates after and before the compaction: the next (short) turn is under it only when
  // its estimate starts from the compacted request, not from the last request sent before the compaction.
  writeFileSync(join(home, "config.toml"), `[compaction]\ntrigger_tokens = ${Math.floor((made.tokens_before + made.tokens_after) / 2)}\n`);
  const next = await cachet(["--emulate", "-c", "--json", "and now?"], { home, timeoutMs: 60_000 });
  expect([next.code, next.stderr]).toEqual([0, ""]);
  expect(events(next.stdout).filter((e) => e.type === "compaction")).toEqual([]);
  expect(compactionRows(home).compactions).toBe(1);
}, 180_000);

test("a compaction that stays above its target says what remains truthfully: no 'kept turns' when none were kept", async () => {
  const home = freshHome();
  writeFileSync(join(home, "config.toml"), "[compaction]\ntrigger_tokens = 2000\n");
  for (let i = 1; i <= 3; i++) {
    const r = await cachet(["--emulate", "--no-compact", ...(i > 1 ? ["-c"] : []), variedText(20, i)], { home, timeoutMs: 60_000 });
    expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: "" });
  }
  // A new message larger than the target by itself: whatever is kept, the request stays above it.
  const r = await cachet(["--emulate", "-c", "--json", variedText(45, 9)], { home, timeoutMs: 60_000 });
  expect(r.code).toBe(0);
  const event = events(r.stdout).find((e) => e.type === "compaction") as unknown as { summarized: { messages: number }; kept: { messages: number }; summary_source: string; tokens_before: number; tokens_after: number };
  const kept = event.kept.messages > 0 ? `, the ${event.kept.messages} kept messages` : "";
  expect(r.stderr).toMatch(
    new RegExp(`^\\[warn\\] compacted ${event.summarized.messages} messages into the summary zone \\(${event.summary_source}\\): next request ~${event.tokens_before} → ~${event.tokens_after} tokens; above the target \\d+: what remains \\(the stable prefix, the summary zone${kept} and the new message\\) is that large\n$`),
  );
  console.log(`kept ${event.kept.messages}: ${r.stderr.trim()}`);
}, 180_000);
