/**
 * Spending limits and ephemeral runs through the compiled binary: a call
 * whose worst-case forecast could cross a limit is refused before anything is
 * sent (exit 6, one line naming the limit, the spend and the forecast), eight
 * processes racing on one daily limit never overspend, and `--no-store`
 * leaves the state directory absent or byte-identical.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, cachet, cleanHomes, freshHome } from "./harness.ts";
import { against, startEmulatorProcess, variedText } from "./session-kit.ts";

afterAll(cleanHomes);

const MODEL = "anthropic/claude-sonnet-4-6";

function configure(home: string, budget: string): void {
  writeFileSync(join(home, "config.toml"), `[budget]\ntime_zone = "UTC"\n${budget}\n`);
}

/** Every file under `dir` with its bytes, for byte-identity checks. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.set(path, readFileSync(path).toString("base64"));
    }
  };
  walk(dir);
  return out;
}

async function budgetStanding(home: string, emulated = true): Promise<Record<string, { period: string; spentUsd: number; limitUsd: number | null; leftUsd: number | null }>> {
  const r = await cachet(["stats", "--budget", ...(emulated ? ["--emulate"] : []), "--json"], { home });
  expect(r.code).toBe(0);
  const report = JSON.parse(r.stdout) as { lines: { limit: string; period: string; spentUsd: number; limitUsd: number | null; leftUsd: number | null }[] };
  return Object.fromEntries(report.lines.map((l) => [l.limit, l]));
}

/** Exit 6, nothing on stdout, and on stderr the given notices then the refusal and its hint, nothing else. */
function expectRefusal(r: { code: number; stdout: string; stderr: string }, limit: RegExp, notices: string[] = []): void {
  expect(r.code).toBe(6);
  expect(r.stdout).toBe("");
  const all = r.stderr.trimEnd().split("\n");
  expect(all.slice(0, notices.length)).toEqual(notices);
  const lines = all.slice(notices.length);
  expect(lines[0]).toMatch(limit);
  expect(lines[0]).toMatch(/would be crossed: spent \$[\d.]+ .*, this call's worst-case forecast \$[\d.]+; nothing was sent$/);
  expect(lines[1]).toStartWith("  hint: ");
  expect(lines).toHaveLength(2);
}

describe("a call that could cross a limit is refused before anything is sent", () => {
  test("--max-cost: nothing reaches the provider and nothing is stored", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(freshHome());
    try {
      const target = against(emulator, MODEL);
      const r = await cachet(["-m", MODEL, ...target.args, "--max-tokens", "1000", "--max-cost", "0.005", "hello"], { home, env: target.env });
      expectRefusal(r, /^cachet: budget: the run limit \(--max-cost\) of \$0\.005000 would be crossed: spent \$0\.0000 in this run/);
      expect(await emulator.received()).toHaveLength(0);
      expect((await cachet(["sessions", "--json"], { home })).stdout.trim()).toBe("");
    } finally {
      emulator.stop();
    }
  }, 60_000);

  test("a call whose forecast alone is over a limit: the hint says to lower --max-tokens (waiting or a new session would not help)", async () => {
    const home = freshHome();
    configure(home, "daily_usd = 0.1\nsession_usd = 0.1");
    // claude-sonnet-4-6 without --max-tokens: the forecast counts the 8,192 output tokens the request allows (Anthropic's
    // max_tokens default: about $0.123), not the model's 64,000 it never asks for.
    const r = await cachet(["--emulate", "-m", MODEL, "hi"], { home });
    expectRefusal(r, /^cachet: budget: the (session|daily) limit/);
    expect(r.stderr.split("\n")[1]).toMatch(/^ {2}hint: this call's forecast alone is over the limit: pass a smaller --max-tokens \(the forecast counts all of it as output\), or raise budget\.(session|daily)_usd in config\.toml$/);
    expect((await cachet(["--emulate", "-m", MODEL, "--max-tokens", "500", "hi"], { home })).code).toBe(0);
  });

  test("a limit already spent: the hint says so and gives the limit's own advice, never a smaller --max-tokens; nor with --max-tokens 1", async () => {
    const home = freshHome();
    configure(home, "session_usd = 1");
    expect((await cachet(["--emulate", "-m", MODEL, "--max-tokens", "10", "short"], { home })).code).toBe(0);
    // Lowered below what the session has spent (about $0.0002).
    configure(home, "session_usd = 0.0001");
    const spent = await cachet(["--emulate", "-c", "again"], { home });
    expectRefusal(spent, /^cachet: budget: the session limit/);
    expect(spent.stderr.split("\n")[1]).toBe("  hint: the limit is spent already: start a new session, or raise budget.session_usd in config.toml");
    const tiny = await cachet(["--emulate", "-m", MODEL, "--max-cost", "0.0000001", "--max-tokens", "1", "a new one"], { home });
    expectRefusal(tiny, /^cachet: budget: the run limit/);
    expect(tiny.stderr.split("\n")[1]).toBe("  hint: this call's forecast alone is over the limit: raise --max-cost");
  });

  for (const kind of ["session", "daily", "monthly"] as const) {
    test(`budget.${kind}_usd counts what was spent before and refuses the call that could cross it`, async () => {
      const home = freshHome();
      configure(home, `${kind}_usd = 0.01`);
      const first = await cachet(["--emulate", "-m", MODEL, "--max-tokens", "50", "short answer please"], { home });
      expect(first.code).toBe(0);
      const before = (await budgetStanding(home))[kind]!;
      expect(before.spentUsd).toBeGreaterThan(0);
      const r = await cachet(["--emulate", "-c", "--max-tokens", "1000", "and a long one"], { home });
      // --max-tokens is sticky, but a refused turn changes nothing: the session keeps its 50, and no switch to 1000 is announced.
      expectRefusal(r, new RegExp(`^cachet: budget: the ${kind} limit \\(budget\\.${kind}_usd\\) of \\$0\\.0100 would be crossed: spent \\$${before.spentUsd.toFixed(6).replace(".", "\\.")}`));
      // Nothing of the refused turn was stored or counted.
      expect((await budgetStanding(home))[kind]!.spentUsd).toBe(before.spentUsd);
      const exported = (await cachet(["export"], { home })).stdout.trim().split("\n").map((l) => JSON.parse(l).type);
      expect(exported.filter((t: string) => t === "request")).toHaveLength(1);
      expect(exported.filter((t: string) => t === "message")).toHaveLength(2);
    }, 60_000);
  }

  test("an unknown price under a limit is refused unless --allow-unpriced", async () => {
    const home = freshHome();
    const emulator = await startEmulatorProcess(freshHome());
    try {
      const args = ["-m", "openai/unpriced-model", "--base-url", `${emulator.url}/openai/v1`, "--max-tokens", "100", "--max-cost", "1", "-q", "hello"];
      const refused = await cachet(args, { home, env: { OPENAI_API_KEY: "test-key" } });
      expect(refused.code).toBe(6);
      expect(refused.stderr).toContain("budget: cannot forecast the cost of openai/unpriced-model");
      expect(await emulator.received()).toHaveLength(0);
      const allowed = await cachet([...args, "--allow-unpriced"], { home, env: { OPENAI_API_KEY: "test-key" } });
      expect(allowed.code).toBe(0);
      expect(await emulator.received()).toHaveLength(1);
    } finally {
      emulator.stop();
    }
  }, 60_000);

  test("a misspelled model under a daily limit: the hint names the model it is a typo of before pricing one that does not exist", async () => {
    const home = freshHome();
    configure(home, "daily_usd = 1");
    for (const flags of [[], ["--max-tokens", "100"]]) {
      const r = await cachet(["--emulate", "-m", "anthropic/claude-sonet-4-6", ...flags, "hi there"], { home });
      expect(r.code).toBe(6);
      const [line, hint, ...rest] = r.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("[warn]"));
      expect(line).toStartWith("cachet: budget: cannot forecast the cost of anthropic/claude-sonet-4-6 (");
      expect(hint).toBe('  hint: did you mean -m anthropic/claude-sonnet-4-6? else set [prices."anthropic/claude-sonet-4-6"] in config.toml, or pass --allow-unpriced to send it uncounted');
      expect(rest).toEqual([]);
    }
  });
});

test("spend made before any limit was set counts: the day's, month's and session's spent include it, and a call it leaves no room for is refused (exit 6, nothing sent)", async () => {
  const home = freshHome();
  for (let i = 0; i < 3; i++) expect((await cachet(["--emulate", "-q", "hi"], { home })).code).toBe(0);
  const ledger = async () => JSON.parse((await cachet(["stats", "--json"], { home })).stdout) as { groups: { key: string; costUsd: number }[]; total: { requests: number; costUsd: number } };
  const before = await ledger();
  const earlier = before.total.costUsd;
  expect(before.total.requests).toBe(3);
  expect(earlier).toBeGreaterThan(0);

  configure(home, "daily_usd = 5");
  const standing = await budgetStanding(home);
  expect(standing.daily!.limitUsd).toBe(5);
  expect(standing.daily!.spentUsd).toBeCloseTo(earlier, 12);
  expect(standing.daily!.leftUsd).toBeCloseTo(5 - earlier, 12);
  expect(standing.monthly!.spentUsd).toBeCloseTo(earlier, 12);
  // The session line is the latest session's: its one run.
  expect(standing.session!.spentUsd).toBeCloseTo(before.groups.find((g) => g.key === standing.session!.period)!.costUsd, 12);
  // Emulated runs cost nothing real: the real counters stay at $0.
  expect((await budgetStanding(home, false)).daily!.spentUsd).toBe(0);

  // This call's worst-case forecast, from a refusal under --max-cost (nothing is sent or stored).
  const probe = await cachet(["--emulate", "--max-tokens", "40", "--max-cost", "0.0000001", "-q", "hi"], { home });
  expect(probe.code).toBe(6);
  const forecast = Number(/this call's worst-case forecast \$([\d.]+);/.exec(probe.stderr)![1]);
  expect(forecast).toBeGreaterThan(0);
  // A daily limit the call fits in alone, but not on top of the spend made before the limit existed.
  const limit = earlier + forecast / 2;
  expect(forecast).toBeLessThan(limit);
  configure(home, `daily_usd = ${limit}`);
  const refused = await cachet(["--emulate", "--max-tokens", "40", "-q", "hi"], { home });
  expectRefusal(refused, new RegExp(`^cachet: budget: the daily limit \\(budget\\.daily_usd\\) of \\$[\\d.]+ would be crossed: spent \\$${earlier.toFixed(6).replace(".", "\\.")} today \\(UTC\\), this call's worst-case forecast \\$${forecast.toFixed(6).replace(".", "\\.")};`));
  // Emulated spend is shown by `stats --budget --emulate`, which the hint names; the figures carry no float noise.
  expect(refused.stderr).toContain("`cachet stats --budget --emulate` shows the spend");
  const spent = (await budgetStanding(home)).daily!.spentUsd;
  expect(spent).toBe(Number(spent.toFixed(12)));
  // Nothing was sent: a request leaves only after its in-flight ledger row is written, and the ledger holds the three runs alone.
  const after = await ledger();
  expect(after.total.requests).toBe(3);
  expect(after.groups).toHaveLength(3);
}, 60_000);

test("under a limit, a provider's extra pass (Anthropic server-side compaction), never reserved, counts toward the spend all the same", async () => {
  const home = freshHome();
  configure(home, "daily_usd = 10");
  const turn = async (args: string[], stdin: string) => {
    const r = await cachet(["--emulate", "-q", ...args], { home, stdin, timeoutMs: 60_000 });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  };
  // ~30,000 tokens each: the second request is over the 50,000-token trigger, and the API compacts it first.
  await turn(["-m", MODEL, "-o", "compaction=server", "-o", "compaction_trigger=50000"], variedText(1_100, 1));
  await turn(["-c"], variedText(1_100, 2));
  const rows = (await cachet(["export"], { home })).stdout.trim().split("\n").map((l) => JSON.parse(l) as { request?: { role: string; costUsd: number } }).filter((l) => l.request).map((l) => l.request!);
  expect(rows.map((r) => r.role)).toEqual(["main", "server_compaction", "main"]);
  expect(rows[1]!.costUsd).toBeGreaterThan(0);
  const standing = await budgetStanding(home);
  expect(standing.daily!.spentUsd).toBeCloseTo(rows.reduce((sum, r) => sum + r.costUsd, 0), 12);
  expect(standing.session!.spentUsd).toBeCloseTo(standing.daily!.spentUsd, 12);
}, 120_000);

describe("a failed attempt the provider provably never billed costs $0 and holds nothing of the budget", () => {
  async function standing(home: string, emulated: boolean): Promise<number> {
    const r = await cachet(["stats", "--budget", "--json", ...(emulated ? ["--emulate"] : [])], { home });
    expect(r.code).toBe(0);
    return (JSON.parse(r.stdout) as { lines: { limit: string; spentUsd: number }[] }).lines.find((l) => l.limit === "daily")!.spentUsd;
  }
  async function requests(home: string): Promise<{ status: string; costUsd: number | null; usageLowerBound?: boolean }[]> {
    const r = await cachet(["export"], { home });
    return r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.type === "request").map((l) => l.request);
  }

  test("connection refused (no provider reached): exit 4, a $0 row, the day's spend $0, and the next run (forecast $0.12 of $1) is sent", async () => {
    const home = freshHome();
    configure(home, "daily_usd = 1");
    const refused = await cachet(["-m", MODEL, "--base-url", "http://127.0.0.1:1", "--retries", "0", "hello"], { home, env: { ANTHROPIC_API_KEY: "x" } });
    expect(refused.code).toBe(4);
    expect(refused.stderr).toStartWith("cachet: anthropic: cannot connect to 127.0.0.1:1");
    expect(await requests(home)).toMatchObject([{ status: "error", costUsd: 0 }]);
    expect(await standing(home, false)).toBe(0);
    const cost = await cachet(["cost"], { home });
    expect(cost.stdout).not.toContain("unpriced");
    const emulator = await startEmulatorProcess(freshHome());
    try {
      const target = against(emulator, MODEL);
      const good = await cachet(["-m", MODEL, ...target.args, "-c", "hello"], { home, env: target.env });
      expect(good.code).toBe(0);
      expect(good.stderr).toBe("");
    } finally {
      emulator.stop();
    }
    const rows = await requests(home);
    expect(rows.map((r) => r.status)).toEqual(["error", "ok"]);
    expect(await standing(home, false)).toBe(rows[1]!.costUsd!);
  }, 60_000);

  test("a connection reset before any response byte: $0 rows, nothing held; a 200 stream cut (maybe billed) keeps its forecast", async () => {
    const home = freshHome();
    configure(home, "daily_usd = 0.2");
    const reset = await cachet(["--emulate", "-m", MODEL, "--retries", "1", "hello"], { home, env: { CACHET_EMULATOR_FAULT: "reset" } });
    expect(reset.code).toBe(4);
    expect(await requests(home)).toMatchObject([{ status: "error", costUsd: 0 }, { status: "error", costUsd: 0 }]);
    expect(await standing(home, true)).toBe(0);
    const good = await cachet(["--emulate", "-c", "hello"], { home });
    expect(good.code).toBe(0);
    const spent = await standing(home, true);
    expect(spent).toBe((await requests(home))[2]!.costUsd!);
    // An answered request whose JSON body was cut may have been billed: its row has unknown cost and the budget keeps
    // its worst-case forecast ($0.12 of the $0.20 day), so the next run (as much again) is refused.
    const cut = await cachet(["--emulate", "-c", "--no-stream", "--retries", "0", "hello"], { home, env: { CACHET_EMULATOR_FAULT: "cut" } });
    expect(cut.code).toBe(4);
    expect((await requests(home))[3]).toMatchObject({ status: "error", costUsd: null });
    // 8,192 output tokens (the max_tokens sent) at $15/M plus the prompt's few tokens.
    const held = (await standing(home, true)) - spent;
    expect(held).toBeGreaterThan(0.12288);
    expect(held).toBeLessThan(0.1235);
    const refused = await cachet(["--emulate", "-c", "hello"], { home });
    expect(refused.code).toBe(6);
  }, 60_000);
});

test("8 processes racing on one daily limit never overspend by more than one call's forecast error", async () => {
  const home = freshHome();
  // Each call sends a ~2,100-token system prompt uncached (--cache off: no process reads another's cache) and
  // may answer 30 tokens: a forecast of ~$0.01 that the actual cost nearly reaches (measured: $0.009828 of
  // $0.009978), so 2 calls fit in $0.025 whether the 8 processes overlap or not, and a 3rd could cross it.
  const limit = 0.025;
  configure(home, `daily_usd = ${limit}`);
  const system = variedText(75);
  const runs = await Promise.all(
    Array.from({ length: 8 }, (_, i) => cachet(["--emulate", "-m", MODEL, "-s", system, "--cache", "off", "--max-tokens", "30", "-q", `racer ${i}`], { home, timeoutMs: 120_000 })),
  );
  const ok = runs.filter((r) => r.code === 0);
  const refused = runs.filter((r) => r.code === 6);
  expect(ok.length + refused.length).toBe(8);
  expect(ok.length).toBeGreaterThanOrEqual(1);
  expect(ok.length).toBeLessThanOrEqual(3);
  for (const r of refused) expect(r.stderr).toContain("the daily limit (budget.daily_usd) of $0.0250 would be crossed");
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  const calls = db.query("SELECT amount_usd AS amount, forecast_usd AS forecast, state FROM spend").all() as { amount: number; forecast: number; state: string }[];
  db.close();
  expect(calls).toHaveLength(ok.length);
  expect(calls.every((c) => c.state === "settled")).toBe(true);
  const spent = calls.reduce((sum, c) => sum + c.amount, 0);
  const worstError = Math.max(0, ...calls.map((c) => c.amount - c.forecast));
  expect(spent).toBeLessThanOrEqual(limit + worstError);
  expect((await budgetStanding(home)).daily!.spentUsd).toBeCloseTo(spent, 12);
  const stats = JSON.parse((await cachet(["stats", "--json"], { home })).stdout) as { total: { requests: number } };
  expect(stats.total.requests).toBe(ok.length);
}, 180_000);

describe("--no-store", () => {
  test("with --emulate: an absent state directory stays absent; an existing one stays byte-identical", async () => {
    const parent = freshHome();
    const absent = join(parent, "never-created");
    const first = await cachet(["--emulate", "--no-store", "hello"], { home: absent });
    expect(first.code).toBe(0);
    expect(first.stdout.length).toBeGreaterThan(0);
    expect(existsSync(absent)).toBe(false);
    expect((await cachet(["--emulate", "hello"], { home: absent, env: { CACHET_NO_STORE: "1" } })).code).toBe(0);
    expect(existsSync(absent)).toBe(false);

    const home = freshHome();
    expect((await cachet(["--emulate", "a stored turn"], { home })).code).toBe(0);
    const before = snapshot(home);
    expect(before.size).toBeGreaterThan(0);
    expect((await cachet(["--emulate", "--no-store", "a private turn"], { home })).code).toBe(0);
    expect((await cachet(["--emulate", "--no-store", "--session", "private", "a named private turn"], { home })).code).toBe(2);
    expect(snapshot(home)).toEqual(before);
  }, 60_000);

  test("without --emulate (a provider on loopback): the state directory stays absent or byte-identical", async () => {
    const emulator = await startEmulatorProcess(freshHome());
    try {
      const target = against(emulator, MODEL);
      const parent = freshHome();
      const absent = join(parent, "never-created");
      expect((await cachet(["-m", MODEL, ...target.args, "--no-store", "hello"], { home: absent, env: target.env })).code).toBe(0);
      expect(existsSync(absent)).toBe(false);
      const home = freshHome();
      expect((await cachet(["-m", MODEL, ...target.args, "stored"], { home, env: target.env })).code).toBe(0);
      const before = snapshot(home);
      expect((await cachet(["-m", MODEL, ...target.args, "private"], { home, env: { ...target.env, CACHET_NO_STORE: "1" } })).code).toBe(0);
      expect(snapshot(home)).toEqual(before);
      expect(await emulator.received()).toHaveLength(3);
    } finally {
      emulator.stop();
    }
  }, 60_000);

  test("a failure's hint promises nothing stored: a cut stream, a cut or refused or non-JSON structured answer", async () => {
    const parent = freshHome();
    const absent = join(parent, "never-created");
    const cut = await cachet(["--emulate", "--no-store", "ns"], { home: absent, env: { CACHET_EMULATOR_FAULT: "cut" } });
    expect(cut.code).toBe(4);
    expect(cut.stderr.split("\n").slice(-3)).toEqual(["cachet: anthropic: stream ended before message_stop", "  hint: the partial answer was not stored (--no-store); run the command again for a whole answer", ""]);
    const schema = JSON.stringify({ type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false });
    const limit = await cachet(["--emulate", "--no-store", "--schema", schema, "--max-tokens", "3", "check"], { home: absent });
    expect(limit.code).toBe(1);
    expect(limit.stderr.split("\n")).toEqual([
      "cachet: the structured answer was cut at the output limit of 3 tokens (finish reason max_tokens) before its JSON was complete",
      "  hint: raise --max-tokens above 3 and run again",
      "",
    ]);
    const scripts = freshHome();
    const refuse = join(scripts, "refuse.json");
    writeFileSync(refuse, JSON.stringify([{ text: "I can't help with that.", refusal: true }]));
    const refused = await cachet(["--emulate", "--no-store", "--schema", schema, "check"], { home: absent, env: { CACHET_EMULATOR_SCRIPT: refuse } });
    expect(refused.code).toBe(1);
    expect(refused.stderr.split("\n")[1]).toBe("  hint: rephrase the prompt or the input");
    const prose = join(scripts, "prose.json");
    writeFileSync(prose, JSON.stringify([{ text: "not json at all" }]));
    const notJson = await cachet(["--emulate", "--no-store", "--schema", schema, "check"], { home: absent, env: { CACHET_EMULATOR_SCRIPT: prose } });
    expect(notJson.code).toBe(1);
    expect(notJson.stderr.split("\n")).toEqual(["cachet: the answer is not JSON although --schema was given", "  hint: try again, or simplify the schema", ""]);
    expect(existsSync(absent)).toBe(false);
  }, 60_000);

  test("-c after it says there is nothing to continue and why", async () => {
    const home = freshHome();
    expect((await cachet(["--emulate", "--no-store", "hello"], { home })).code).toBe(0);
    const r = await cachet(["--emulate", "-c", "and then?"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("there is no session to continue: none is stored (runs with --no-store or CACHET_NO_STORE=1 keep none)");
    const own = await cachet(["--emulate", "--no-store", "-c", "and then?"], { home });
    expect(own.code).toBe(2);
    expect(own.stderr).toContain("with --no-store (or CACHET_NO_STORE=1) sessions are neither stored nor read");
  }, 60_000);

  test("day and month limits still count an ephemeral run, as an amount without content or session", async () => {
    const home = freshHome();
    configure(home, "daily_usd = 1");
    expect((await cachet(["--emulate", "--no-store", "--max-tokens", "50", "private"], { home })).code).toBe(0);
    const standing = await budgetStanding(home);
    expect(standing.daily!.spentUsd).toBeGreaterThan(0);
    expect(standing.session).toBeUndefined();
    expect((await cachet(["sessions", "--json"], { home })).stdout.trim()).toBe("");
  }, 60_000);

  test("CACHET_NO_STORE takes 1/true/yes/on and 0/false/no/off/empty in any case; anything else is exit 2 naming the variable, nothing stored", async () => {
    const parent = freshHome();
    for (const value of ["1", "true", "YES", "On", " yes "]) {
      const absent = join(parent, `on-${value.trim()}`);
      const r = await cachet(["--emulate", "hello"], { home: absent, env: { CACHET_NO_STORE: value } });
      expect({ value, code: r.code, stderr: r.stderr, stored: existsSync(absent) }).toEqual({ value, code: 0, stderr: "", stored: false });
    }
    const home = freshHome();
    const sessions = () => {
      const db = new Database(join(home, "cachet.db"), { readonly: true });
      try {
        return (db.query("SELECT count(*) AS n FROM sessions").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    for (const [i, value] of ["0", "false", "No", "OFF", ""].entries()) {
      const r = await cachet(["--emulate", "hello"], { home, env: { CACHET_NO_STORE: value } });
      expect({ value, code: r.code, stderr: r.stderr, sessions: sessions() }).toEqual({ value, code: 0, stderr: "", sessions: i + 1 });
    }
    for (const value of ["2", "maybe", "y"]) {
      const absent = join(parent, `bad-${value}`);
      const r = await cachet(["--emulate", "hello"], { home: absent, env: { CACHET_NO_STORE: value } });
      expect({ code: r.code, stdout: r.stdout, stderr: r.stderr, stored: existsSync(absent) }).toEqual({
        code: 2,
        stdout: "",
        stderr: `cachet: CACHET_NO_STORE="${value}": expected 1, true, yes or on (or 0, false, no, off, empty)\n  hint: set CACHET_NO_STORE=1 to turn it on, or unset it\n`,
        stored: false,
      });
    }
    expect(sessions()).toBe(5);
  });
});
