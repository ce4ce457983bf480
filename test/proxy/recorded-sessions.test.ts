/**
 * Sessions `cachet proxy` recorded (the compiled binary, `proxy --emulate`) beside cachet's own: naming one to
 * continue, fork or compact it is a usage error (exit 2, code SESSION_RECORDED) that names it and changes nothing
 * stored; `-c` and the other commands that default to "the latest session" pick the latest of cachet's own, and in a
 * store holding recorded sessions only they say so and name one; `cost` and `why` read a recorded session named.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { cachet, cleanHomes, events, freshHome, ofType } from "../e2e/harness.ts";
import { spawnProxy } from "./harness.ts";

afterAll(cleanHomes);

const CLIENT = "curl/8.5.0";

/** Records one exchange per prompt through a proxy on `home` (`upstream`, else the emulator), each prompt a conversation (so a session) of its own. */
async function record(home: string, prompts: string[], upstream?: string): Promise<void> {
  const proxy = await spawnProxy(home, upstream === undefined ? ["--emulate"] : ["--upstream", upstream]);
  try {
    for (const prompt of prompts) {
      const response = await fetch(`${proxy.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-ant-recorded-fake", "user-agent": CLIENT },
        body: JSON.stringify({ model: "claude-sonnet-4-6", max_tokens: 32, messages: [{ role: "user", content: prompt }] }),
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    await proxy.recorded(prompts.length);
  } finally {
    await proxy.stop();
  }
}

/** The recorded sessions' ids, most recently updated first. */
async function recordedIds(home: string): Promise<string[]> {
  const run = await cachet(["sessions", "--recorded", "--json"], { home });
  expect(run.code).toBe(0);
  return run.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { id: string }).id);
}

/** Every row of every table of the store, read-only: equal before and after means nothing stored changed. */
function storeRows(home: string): Record<string, string[]> {
  const db = new Database(join(home, "cachet.db"), { readonly: true });
  try {
    const tables = db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
    // Some tables are WITHOUT ROWID: rows are compared as a sorted list of their JSON.
    return Object.fromEntries(tables.map(({ name }) => [name, db.query(`SELECT * FROM "${name}"`).all().map((row) => JSON.stringify(row)).sort()]));
  } finally {
    db.close();
  }
}

describe("a store holding only sessions cachet proxy recorded", () => {
  let home: string;
  let ids: string[];
  let before: Record<string, string[]>;

  beforeAll(async () => {
    home = freshHome();
    await record(home, ["first conversation", "second conversation", "third conversation"]);
    ids = await recordedIds(home);
    expect(ids).toHaveLength(3);
    before = storeRows(home);
  }, 30_000);

  test("continuing, forking or compacting one is refused: exit 2, one line naming it, nothing stored changes", async () => {
    const id = ids[1]!;
    const line = `cachet: session ${id} was recorded by \`cachet proxy\` from ${CLIENT}: cachet never continues, forks or compacts a recorded session`;
    const reads = `\`cachet cost ${id}\` and \`cachet why ${id}\` read the recorded session`;
    const runs: [string[], string | undefined, string][] = [
      [["--emulate", "--session", id, "continue recorded"], undefined, `${reads}; a prompt without --session starts a new one`],
      [["--emulate", "-c", "--session", id, "continue recorded"], undefined, `${reads}; a prompt without -c and --session starts a new one`],
      [["--emulate", `--fork=${id}`, "fork recorded"], undefined, `${reads}; a prompt without --fork starts a new one`],
      // A bare --fork before a word naming it: --fork=ID, which the refusal of a stored session's word suggests, would be refused too.
      [["--emulate", "--fork", id, "fork recorded"], undefined, `${reads}; a prompt without --fork starts a new one`],
      [["--emulate", "--session", id, "--fork", "fork recorded"], undefined, `${reads}; a prompt without --fork starts a new one`],
      [["compact", "--emulate", "--session", id], undefined, `${reads}; \`cachet compact\` compacts cachet's own (SOURCE own in \`cachet sessions\`)`],
      [["--emulate", "--session", id, "--tool-result", "call_1"], "a result", `${reads}; --tool-result answers the tool calls of cachet's own (SOURCE own in \`cachet sessions\`)`],
    ];
    for (const [args, stdin, hint] of runs) {
      const r = await cachet(args, { home, ...(stdin === undefined ? {} : { stdin }) });
      expect([args, r.code, r.stdout, r.stderr]).toEqual([args, 2, "", `${line}\n  hint: ${hint}\n`]);
    }
    const json = await cachet(["--emulate", "--json", "--session", id, "continue recorded"], { home });
    expect(json.code).toBe(2);
    expect(events(json.stdout)).toEqual([{ type: "error", code: "SESSION_RECORDED", message: line.slice("cachet: ".length), hint: `${reads}; a prompt without --session starts a new one`, incomplete: false }]);
    expect(storeRows(home)).toEqual(before);
  }, 60_000);

  test("-c, a bare --fork, compact and --tool-result say the stored sessions are recorded ones, and store nothing", async () => {
    const runs: [string[], string | undefined, string][] = [
      [["--emulate", "-c", "x", "y"], undefined, "cachet: there is no session to continue: all 3 stored sessions were recorded by `cachet proxy`, which -c never continues\n  hint: run without -c to start a new session\n"],
      [["--emulate", "--fork", "x"], undefined, 'cachet: there is no session to fork: all 3 stored sessions were recorded by `cachet proxy`, which cachet never forks\n  hint: start one with `cachet "PROMPT"` first\n'],
      [["compact", "--emulate"], undefined, 'cachet: there is no session to compact: all 3 stored sessions were recorded by `cachet proxy`, which cachet never compacts\n  hint: start one with `cachet "PROMPT"`\n'],
      [
        ["--emulate", "--tool-result", "call_1"],
        "a result",
        "cachet: there is no session to answer with --tool-result: all 3 stored sessions were recorded by `cachet proxy`, and --tool-result answers only the tool calls of cachet's own sessions\n" +
          '  hint: start one with `cachet "PROMPT"`\n',
      ],
    ];
    for (const [args, stdin, stderr] of runs) {
      const r = await cachet(args, { home, ...(stdin === undefined ? {} : { stdin }) });
      expect([args, r.code, r.stdout, r.stderr]).toEqual([args, 2, "", stderr]);
    }
    expect(storeRows(home)).toEqual(before);
  }, 60_000);

  test("cost, why, sessions show and export without a session name the latest recorded one; named, they read it", async () => {
    const latest = ids[0]!;
    const defaults: [string[], string][] = [
      [["cost"], "there is no session of cachet's own to show: all 3 stored sessions were recorded by `cachet proxy`, which `cachet cost` shows only when named"],
      [["why"], "there is no request of cachet's own to explain: all 3 stored sessions were recorded by `cachet proxy`, which `cachet why` explains only when named"],
      [["sessions", "show"], "there is no session of cachet's own to show: all 3 stored sessions were recorded by `cachet proxy`, which `cachet sessions show` shows only when named"],
      [["export"], "there is no session of cachet's own to export: all 3 stored sessions were recorded by `cachet proxy`, which `cachet export` exports only when named"],
    ];
    for (const [args, message] of defaults) {
      const r = await cachet(args, { home });
      const command = `cachet ${args.join(" ")}`;
      expect([args, r.code, r.stdout, r.stderr]).toEqual([args, 2, "", `cachet: ${message}\n  hint: name one: \`${command} ${latest}\` (the latest recorded; \`cachet sessions --recorded\` lists them)\n`]);
    }
    // Named, the proxy's metering is read like any session's: one request each, priced.
    for (const id of ids) {
      const cost = await cachet(["cost", id, "--json"], { home });
      expect(cost.code).toBe(0);
      const report = JSON.parse(cost.stdout) as { session: string; total: { requests: number; costUsd: number } };
      expect([report.session, report.total.requests]).toEqual([id, 1]);
      expect(report.total.costUsd).toBeGreaterThan(0);
      const why = await cachet(["why", id, "--json"], { home });
      expect(why.code).toBe(0);
      expect((JSON.parse(why.stdout) as { request: { session: string } }).request.session).toBe(id);
    }
    // The proxy stored each row's figures as a turn does: reading them wrote nothing.
    expect(storeRows(home)).toEqual(before);
  }, 60_000);
});

test("beside a session of cachet's own, -c, --fork, cost, why and sessions show pick it, though a recorded one is newer", async () => {
  const home = freshHome();
  const own = await cachet(["--emulate", "--json", "own conversation"], { home });
  expect(own.code).toBe(0);
  const ownId = ofType(events(own.stdout), "session")[0]!.id as string;
  await record(home, ["a newer conversation of another client"]);
  const [recorded] = await recordedIds(home);
  // The recorded session is the most recently updated of all.
  const listed = await cachet(["sessions", "--json"], { home });
  expect(listed.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { id: string }).id)).toEqual([recorded!, ownId]);

  const continued = await cachet(["--emulate", "--json", "-c", "and again"], { home });
  expect(continued.code).toBe(0);
  expect(ofType(events(continued.stdout), "done")[0]!.session).toBe(ownId);
  const cost = await cachet(["cost", "--json"], { home });
  expect([cost.code, (JSON.parse(cost.stdout) as { session: string; total: { requests: number } }).session]).toEqual([0, ownId]);
  const why = await cachet(["why", "--json"], { home });
  expect([why.code, (JSON.parse(why.stdout) as { request: { session: string; index: number } }).request]).toMatchObject([0, { session: ownId, index: 1 }]);
  const show = await cachet(["sessions", "show"], { home });
  expect([show.code, show.stdout.split("\n")[0]]).toEqual([0, `session   ${ownId}`]);

  // A bare --fork forks the own session too, after another newer recording.
  await record(home, ["yet another conversation of another client"]);
  const forked = await cachet(["--emulate", "--json", "--fork", "a fork"], { home });
  expect(forked.code).toBe(0);
  expect(ofType(events(forked.stdout), "session")[0]!.forked_from).toBe(ownId);
}, 60_000);

test("the proxy stores each row's figures as a turn does: an estimated cost is flagged, and cost and stats read them without writing", async () => {
  // An Anthropic answer whose usage reports cache writes without the 5-minute/1-hour split, as the API did before
  // it added `cache_creation` (https://docs.anthropic.com/en/api/messages): priced at the 5-minute rate, an estimate.
  const upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () =>
      Response.json({
        id: "msg_unsplit_writes",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-6",
        content: [{ type: "text", text: "noted" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 10, cache_creation_input_tokens: 2000, cache_read_input_tokens: 0, output_tokens: 5 },
      }),
  });
  try {
    const home = freshHome();
    await record(home, ["a prompt whose writes are not split"], `http://127.0.0.1:${upstream.port}`);
    const [id] = await recordedIds(home);
    const before = storeRows(home);
    const cost = await cachet(["cost", id!, "--json"], { home });
    expect(cost.code).toBe(0);
    const report = JSON.parse(cost.stdout) as { total: { costUsd: number; estimatedRequests: number; savingsExact: string | null }; requests: { costEstimate: string | null }[] };
    // $3/M input, $3.75/M 5-minute writes, $15/M output (claude-sonnet-4-6).
    expect(report.total.costUsd).toBeCloseTo(10 * 3e-6 + 2000 * 3.75e-6 + 5 * 15e-6, 12);
    expect(report.requests[0]!.costEstimate).toMatch(/5m\/1h|split/i);
    expect(report.total.estimatedRequests).toBe(1);
    // Uncached, the 2,010 prompt tokens at $3/M: caching cost $0.0015 more.
    expect(report.total.savingsExact).toBe("-0.0015");
    const stats = await cachet(["stats", "--recorded", "--json"], { home });
    expect(stats.code).toBe(0);
    expect(storeRows(home)).toEqual(before);
  } finally {
    upstream.stop(true);
  }
}, 30_000);
