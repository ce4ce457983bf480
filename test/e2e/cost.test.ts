/**
 * Issue 5 acceptance through the compiled binary: `cachet cost --tree --json`
 * on an emulated 10-turn session attributes every request's billed tokens to
 * its nodes exactly (per category), and the node prices add up to the
 * request's cost.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { BINARY, cachet, cleanHomes, freshHome, homeEnv, readUntil } from "./harness.ts";
import { LARGE_SYSTEM, exportSession, ok, tempFile } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const CATEGORIES = ["input", "cacheRead", "cacheWrite5m", "cacheWrite1h"] as const;

const TOOLS = [
  { name: "lookup", description: "Look an entry up in the archive", parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] } },
  { name: "annotate", description: "Attach a note to an entry", parameters: { type: "object", properties: { key: { type: "string" }, note: { type: "string" } }, required: ["key", "note"] } },
];

/** Sums of each category over `nodes`, checking on the way that every parent equals the sum of its children. */
function sums(nodes: Raw[]): Record<string, number> & { usd: number } {
  const total: Record<string, number> = { tokens: 0, usd: 0, ...Object.fromEntries(CATEGORIES.map((c) => [c, 0])) };
  for (const node of nodes) {
    if (node.children?.length) {
      const inner = sums(node.children);
      for (const c of [...CATEGORIES, "tokens"]) expect(inner[c]).toBe(node[c]);
      expect(Math.abs(inner.usd - node.usd)).toBeLessThan(1e-9);
    }
    for (const c of CATEGORIES) expect(Number.isInteger(node[c])).toBe(true);
    expect(node.tokens).toBe(CATEGORIES.reduce((n, c) => n + node[c], 0));
    for (const c of [...CATEGORIES, "tokens", "usd"]) total[c]! += node[c];
  }
  return total as Record<string, number> & { usd: number };
}

describe("cachet cost --tree on an emulated 10-turn session (issue 5)", () => {
  for (const model of ["anthropic/claude-sonnet-4-6", "openai/gpt-5"]) {
    test(
      `${model}: node sums equal each request's billed totals; node USD sums equal the request cost`,
      async () => {
        const home = freshHome();
        const tools = tempFile("tools.json", JSON.stringify(TOOLS));
        for (let i = 0; i < 10; i++) {
          const first = i === 0 ? ["-m", model, "--system", LARGE_SYSTEM, "--tools", tools] : ["-c"];
          await ok([...first, "--emulate", "--overlay", `Budget left: ${100 - i * 7} units`, "-q", `Entry ${i + 1}: summarise rule ${i + 2}.`], { home });
        }
        const { requests } = await exportSession(home);
        const report = JSON.parse((await ok(["cost", "--tree", "--json"], { home })).stdout) as Raw;
        expect(report.requests).toHaveLength(10);
        let cacheReads = 0;
        for (const [n, request] of (report.requests as Raw[]).entries()) {
          const row = requests[n]!;
          expect(request.id).toBe(row.id);
          expect(request.usage).toEqual(row.usage);
          const total = sums(request.tree);
          for (const c of CATEGORIES) expect(total[c]).toBe(row.usage[c] ?? 0);
          expect(request.output.tokens).toBe(row.usage.output);
          expect(Math.abs(total.usd + request.output.usd - row.costUsd)).toBeLessThan(1e-9);
          expect(request.costUsd).toBe(row.costUsd);
          cacheReads += row.usage.cacheRead;
          // The tree names the context: system part, both tools and every message so far.
          const kinds = (request.tree as Raw[]).map((node) => node.kind);
          expect(kinds.filter((k) => k === "system")).toHaveLength(1);
          expect(kinds.filter((k) => k === "tool")).toHaveLength(2);
          expect(kinds.filter((k) => k === "message")).toHaveLength(2 * n + 1);
        }
        expect(cacheReads).toBeGreaterThan(9 * 2_000);
        expect(Math.abs(report.total.costUsd - requests.reduce((s, r) => s + r.costUsd, 0))).toBeLessThan(1e-9);
      },
      60_000,
    );
  }
});

test("cost --json and cost --tree --json name each request's id the same way, `id`, as why --json and export do", async () => {
  const home = freshHome();
  await ok(["--emulate", "hi"], { home });
  await ok(["--emulate", "-c", "again"], { home });
  const { requests } = await exportSession(home);
  const ids = requests.map((r) => r.id);
  expect(ids).toHaveLength(2);
  for (const args of [["cost", "--json"], ["cost", "--tree", "--json"]]) {
    const listed = (JSON.parse((await ok(args, { home })).stdout) as { requests: Record<string, unknown>[] }).requests;
    expect({ args, ids: listed.map((r) => r.id), requestId: listed.map((r) => r.requestId) }).toEqual({ args, ids, requestId: [undefined, undefined] });
  }
  const why = JSON.parse((await ok(["why", ids[1]!, "--json"], { home })).stdout) as { request: { id: string } };
  expect(why.request.id).toBe(ids[1]!);
});

test("cost and cost --tree name an openai-responses request by the provider the session used; --tree --json also says the catalog id it was priced as", async () => {
  const home = freshHome();
  await ok(["--emulate", "-m", "openai-responses/gpt-5", "--session", "r", "hi"], { home });
  const label = (text: string) => text.split("\n")[0]!.split("  ")[2];
  expect(label((await ok(["cost", "r"], { home })).stdout)).toBe("openai-responses/gpt-5");
  expect(label((await ok(["cost", "r", "--tree"], { home })).stdout)).toBe("openai-responses/gpt-5");
  const tree = (JSON.parse((await ok(["cost", "r", "--tree", "--json"], { home })).stdout) as { requests: Raw[] }).requests;
  expect(tree.map((r) => [r.model, r.pricedAs])).toEqual([["openai-responses/gpt-5", "openai/gpt-5"]]);
});

test("alibaba/qwen-plus multi-turn: the catalog has no cache prices, so reads and writes are priced by Alibaba's documented rule (explicit hit 10% of input, creation 125%), every request priced", async () => {
  const home = freshHome();
  for (let i = 0; i < 4; i++) await ok([...(i === 0 ? ["-m", "alibaba/qwen-plus", "--system", LARGE_SYSTEM] : ["-c"]), "--emulate", "-q", `Entry ${i + 1}: summarise rule ${i + 2}.`], { home });
  const { requests } = await exportSession(home);
  // USD per million from src/meter/models-dev/providers/alibaba/models/qwen-plus.toml (input 0.4, output 1.2, no cache
  // prices), the cache shares from https://www.alibabacloud.com/help/en/model-studio/context-cache; in micro-USD per million.
  const INPUT = 400_000;
  const OUTPUT = 1_200_000;
  const READ = (INPUT * 10) / 100;
  const WRITE = (INPUT * 125) / 100;
  expect(requests).toHaveLength(4);
  let reads = 0;
  let writes = 0;
  for (const row of requests) {
    const u = row.usage;
    expect(u.cacheWrite1h).toBe(0);
    expect(u.reasoning ?? 0).toBe(0);
    const byHand = (u.input * INPUT + u.cacheRead * READ + u.cacheWrite5m * WRITE + u.output * OUTPUT) / 1e12;
    expect(row.costUsd).not.toBeNull();
    expect(Math.abs(row.costUsd - byHand)).toBeLessThan(1e-15);
    reads += u.cacheRead;
    writes += u.cacheWrite5m;
  }
  // The rule was exercised: the first turn wrote the system prompt, later turns read it.
  expect(requests[0]!.usage.cacheWrite5m).toBeGreaterThan(2_000);
  expect(reads).toBeGreaterThan(3 * 2_000);
  expect(writes).toBeGreaterThan(requests[0]!.usage.cacheWrite5m);
  const report = JSON.parse((await ok(["cost", "--json"], { home })).stdout) as Raw;
  expect(report.total.unpricedRequests).toBe(0);
  expect(Math.abs(report.total.costUsd - requests.reduce((s, r) => s + r.costUsd, 0))).toBeLessThan(1e-12);
  // Marked as derived where the details are shown: the text report flags each request's cost, and the reason names the rule.
  const text = (await ok(["cost"], { home })).stdout;
  expect(text).not.toContain("cost unknown");
  expect(text).not.toContain("unpriced");
  // The total and the savings rest on those estimates: both carry the ~.
  expect(text).toMatch(/^total 4 requests {2}~\$[\d.]+ {2}hit rate [\d.]+% {2}savings ~[+-]?\$[\d.]+$/m);
  const rates = requests.map((r) => String(r.costEstimate));
  expect(rates[1]).toContain("cache_read priced at 10% of input, derived by https://www.alibabacloud.com/help/en/model-studio/context-cache");
  expect(rates[0]).toContain("cache_write_5m priced at 125% of input, derived by https://www.alibabacloud.com/help/en/model-studio/context-cache");
}, 60_000);

test("cost --tree on a request the provider refused prints one line saying its nodes are not attributed (no usage, nothing billed), not a column of `0 empty $0` nodes; cost without --tree agrees", async () => {
  const home = freshHome();
  await ok(["--emulate", "-s", "You are terse.", "hello there"], { home });
  const refused = await cachet(["--emulate", "--retries", "0", "-c", "and again"], { home, env: { CACHET_EMULATOR_FAULT: "500" } });
  expect(refused.code).toBe(4);
  const { requests } = await exportSession(home);
  expect(requests.map((r) => r.status)).toEqual(["ok", "error"]);
  const [good, bad] = requests.map((r) => r.id);
  const tree = (await ok(["cost", "--tree"], { home })).stdout.split("\n");
  const block = (id: string) => tree.slice(tree.findIndex((l) => l.startsWith(id)), tree.findIndex((l, i) => i > tree.findIndex((k) => k.startsWith(id)) && !l.startsWith(" ")));
  expect(block(bad!)).toEqual([
    `${bad}  main  anthropic/claude-sonnet-4-6  $0  in ? · read ? · write ? · out ?  (status error)`,
    expect.stringMatching(/^ {2}nodes: estimated \d+ tokens, not attributed: the provider reported no usage \(nothing was billed\)$/),
  ]);
  expect(tree.filter((l) => / 0 {2}empty /.test(l))).toEqual([]);
  // The answered request still lists its nodes with their billed tokens.
  expect(block(good!).map((l) => l.trim().split(/\s+/).slice(0, 4))).toEqual([
    [good, "main", "anthropic/claude-sonnet-4-6", expect.stringMatching(/^\$0\.000\d+$/)],
    ["system", expect.stringMatching(/^system:0:/), "4", "uncached"],
    ["message", expect.stringMatching(/^m_/), "2", "uncached"],
    ["text", expect.stringMatching(/^m_\w+#0$/), "2", "uncached"],
    ["output", expect.stringMatching(/^m_/), expect.stringMatching(/^\d+$/), expect.stringMatching(/^\$0\.000\d+$/)],
  ]);
  expect((await ok(["cost"], { home })).stdout.split("\n")[1]).toBe(`${bad}  main  anthropic/claude-sonnet-4-6  $0  in ? · read ? · write ? · out ?  (status error)`);
  const views = (JSON.parse((await ok(["cost", "--tree", "--json"], { home })).stdout) as { requests: Raw[] }).requests;
  expect(views.map((v) => [v.id, v.attributed, v.tree.length, v.costUsd])).toEqual([[good, true, 2, expect.any(Number)], [bad, false, 0, 0]]);
});

test("cost --tree marks every amount of a lower-bound request with ~ (its nodes and output, not only its line and the total); an exact request's amounts carry none", async () => {
  const home = freshHome();
  await ok(["--emulate", "hello there"], { home });
  const cut = await cachet(["--emulate", "--retries", "0", "-c", "tell me more"], { home, env: { CACHET_EMULATOR_FAULT: "cut" } });
  expect(cut.code).toBe(4);
  const { requests } = await exportSession(home);
  expect(requests.map((r) => [r.status, r.usageLowerBound === true])).toEqual([
    ["ok", false],
    ["incomplete", true],
  ]);
  const text = (await ok(["cost", "--tree"], { home })).stdout;
  const blocks = text.split(/^(?=r_)/m);
  const exact = blocks.find((b) => b.startsWith(requests[0]!.id))!;
  const lower = blocks.find((b) => b.startsWith(requests[1]!.id))!;
  const amounts = (block: string) => block.split("\n").filter((line) => line.includes("$") && !line.startsWith("total"));
  // The request line, each message, each text part and the output: all priced, all marked.
  expect(amounts(lower).length).toBeGreaterThanOrEqual(5);
  for (const line of amounts(lower)) expect(line).toMatch(/ ~\$[\d.]+/);
  expect(amounts(exact).length).toBeGreaterThanOrEqual(3);
  for (const line of amounts(exact)) expect(line).not.toContain("~");
});

test("cost names the ledger status of a failed attempt (a --no-stream body cut after HTTP 200, a turn interrupted mid-answer) on its line and in every --json request object; an ok request's line is as before", async () => {
  const home = freshHome();
  const cut = await cachet(["--emulate", "--no-stream", "--session", "t1", "hello there"], { home, env: { CACHET_EMULATOR_FAULT: "cut" } });
  expect(cut.code).toBe(4);
  expect(cut.stderr).toContain("shows its ledger row (status error, cost unknown)");
  await ok(["--emulate", "--session", "t1", "and now?"], { home });
  // Interrupted once the answer has begun: what came is kept, the row marked incomplete.
  const proc = Bun.spawn([BINARY, "--emulate", "--session", "t1", "tell me more"], { env: { ...homeEnv(home), CACHET_EMULATOR_FAULT: "stall" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  await readUntil(proc.stdout, " ");
  proc.kill("SIGINT");
  expect(await proc.exited).toBe(130);
  const { requests } = await exportSession(home, "t1");
  expect(requests.map((r) => r.status)).toEqual(["error", "ok", "incomplete"]);
  const [failed, good, interrupted] = requests;
  const counts = (r: Raw) => `in ${r.usage.input ?? "?"} · read ${r.usage.cacheRead ?? "?"} · write ${(r.usage.cacheWrite5m ?? 0) + (r.usage.cacheWrite1h ?? 0)} · out ${r.usage.output ?? "?"}`;
  const text = (await ok(["cost", "t1"], { home })).stdout.split("\n");
  expect(text.slice(0, 3)).toEqual([
    `${failed!.id}  main  anthropic/claude-sonnet-4-6  cost unknown  in ? · read ? · write ? · out ?  (status error)`,
    expect.stringMatching(new RegExp(`^${good!.id}  main  anthropic/claude-sonnet-4-6  \\$0\\.\\d+  ${counts(good!)}$`)),
    expect.stringMatching(new RegExp(`^${interrupted!.id}  main  anthropic/claude-sonnet-4-6  ~\\$0\\.\\d+  ${counts(interrupted!)}  \\(status incomplete\\)$`)),
  ]);
  // --tree names them the same way on each request's line.
  const tree = (await ok(["cost", "t1", "--tree"], { home })).stdout.split("\n").filter((l) => l.startsWith("r_"));
  expect(tree).toEqual(text.slice(0, 3));
  for (const args of [["cost", "t1", "--json"], ["cost", "t1", "--tree", "--json"]]) {
    const listed = (JSON.parse((await ok(args, { home })).stdout) as { requests: Raw[] }).requests;
    expect({ args, status: listed.map((r) => [r.id, r.status]) }).toEqual({ args, status: requests.map((r) => [r.id, r.status]) });
  }
});
