/**
 * OpenTelemetry export through the compiled binary: `cachet export --otlp`
 * sends exactly the ledger rows (decoded by a loopback receiver with the
 * official generated protobuf code), a second export sends nothing, and
 * `export.otlp_url` in config exports each turn from a detached process, so
 * a down, failing or hanging collector never holds a run up nor changes its
 * exit code.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startReceiver, type Receiver } from "../fixtures/otlp/receiver.ts";
import { cachet, cleanHomes, events, freshHome } from "./harness.ts";

afterAll(cleanHomes);
const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.stop();
});

function receiver(mode: "ok" | "fail" | "hang" = "ok"): Receiver {
  const r = startReceiver(mode);
  receivers.push(r);
  return r;
}

/** Above Anthropic's minimum cacheable length, so the second turn reads the first one's cache. */
const LONG_SYSTEM = "You answer in one short sentence, citing the rule you apply. ".repeat(150);

function configure(home: string, url: string): void {
  writeFileSync(join(home, "config.toml"), `[export]\notlp_url = "${url}"\n`);
}

describe("cachet export --otlp", () => {
  test("sends exactly the ledger rows with their usage, cost and role; a second export sends nothing", async () => {
    const home = freshHome();
    expect((await cachet(["--emulate", "-m", "anthropic/claude-sonnet-4-6", "-s", LONG_SYSTEM, "first question"], { home })).code).toBe(0);
    expect((await cachet(["--emulate", "-c", "a follow-up"], { home })).code).toBe(0);
    const ledger = events((await cachet(["export"], { home })).stdout)
      .filter((e) => e.type === "request")
      .map((e) => e.request) as Array<Record<string, any>>;
    expect(ledger).toHaveLength(2);

    const r = receiver();
    const first = await cachet(["export", "--otlp", r.url, "--json"], { home });
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ endpoint: `${r.url}/v1/traces`, exported: 2, busy: false });
    const spans = r.requests.flatMap((q) => q.spans);
    expect(spans.map((s) => s.attributes["cachet.request"])).toEqual(ledger.map((row) => row.id));
    for (const [i, span] of spans.entries()) {
      const row = ledger[i]!;
      const u = row.usage;
      expect(span.attributes["gen_ai.provider.name"]).toBe("anthropic");
      expect(span.attributes["gen_ai.request.model"]).toBe("claude-sonnet-4-6");
      expect(span.attributes["gen_ai.usage.input_tokens"]).toBe(u.input + u.cacheRead + u.cacheWrite5m + u.cacheWrite1h);
      expect(span.attributes["gen_ai.usage.output_tokens"]).toBe(u.output);
      expect(span.attributes["gen_ai.usage.cache_read.input_tokens"]).toBe(u.cacheRead);
      expect(span.attributes["gen_ai.usage.cache_creation.input_tokens"]).toBe(u.cacheWrite5m + u.cacheWrite1h);
      expect(span.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
      expect(span.attributes["cachet.cost_usd"]).toBeCloseTo(row.costUsd, 12);
      expect(span.attributes["cachet.session"]).toBe(row.sessionId);
      expect(span.attributes["cachet.role"]).toBe("main");
      expect(span.startMs).toBe(row.startedAt);
      expect(JSON.stringify(span.attributes)).not.toContain("question");
    }
    // The second turn read what the first cached: its efficiency is reported.
    expect(spans[1]!.attributes["cachet.cache_efficiency"]).toBe(1);

    const second = await cachet(["export", "--otlp", r.url, "--json"], { home });
    expect(JSON.parse(second.stdout).exported).toBe(0);
    expect(r.requests).toHaveLength(1);
  }, 60_000);

  test("a collector that is down is one line naming it, exit 1, and the rows stay for the next export", async () => {
    const home = freshHome();
    expect((await cachet(["--emulate", "hello"], { home })).code).toBe(0);
    const down = receiver();
    await down.stop();
    const failed = await cachet(["export", "--otlp", down.url], { home });
    expect(failed.code).toBe(1);
    expect(failed.stderr.split("\n")[0]).toBe(`cachet: OTLP export to ${down.url}/v1/traces failed: cannot connect (ECONNREFUSED)`);
    expect(failed.stderr).toContain("hint:");
    const up = receiver();
    // Another destination has its own watermark; the same URL would now send the row too.
    expect(JSON.parse((await cachet(["export", "--otlp", up.url, "--json"], { home })).stdout).exported).toBe(1);
  }, 60_000);

  test("--with-content without --otlp, and SESSION with --otlp, are usage errors", async () => {
    const a = await cachet(["export", "--with-content"]);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain("--with-content needs --otlp URL");
    const b = await cachet(["export", "s_aaaaaaaaaaaa", "--otlp", "http://127.0.0.1:9"]);
    expect(b.code).toBe(2);
  }, 60_000);
});

describe("export.otlp_url in config", () => {
  test("each turn is exported in the background as it is recorded", async () => {
    const home = freshHome();
    const r = receiver();
    configure(home, r.url);
    const run = await cachet(["--emulate", "--json", "hello"], { home });
    expect(run.code).toBe(0);
    await r.waitFor(1);
    const id = events(run.stdout).find((e) => e.type === "done")!.request_id;
    expect(r.requests[0]!.spans.map((s) => s.attributes["cachet.request"])).toEqual([id]);
  }, 60_000);

  test("a hanging collector does not hold the run: it has exited 0 while the collector still holds the export unanswered", async () => {
    const home = freshHome();
    const r = receiver("hang");
    configure(home, r.url);
    const run = await cachet(["--emulate", "hello"], { home });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    // The exporter reaches the collector after (or while) the run ended, and is still waiting for its answer.
    await r.waitFor(1);
    expect(r.pending).toBe(1);
  }, 60_000);

  test("a failing or down collector changes nothing in the run; the rows wait for the next export", async () => {
    const home = freshHome();
    const failing = receiver("fail");
    configure(home, failing.url);
    const run = await cachet(["--emulate", "--json", "hello"], { home });
    expect(run.code).toBe(0);
    await failing.waitFor(1);
    const down = receiver();
    await down.stop();
    configure(home, down.url);
    expect((await cachet(["--emulate", "-c", "again"], { home })).code).toBe(0);
    // Both rows are still unsent to the failing collector; once it recovers, an export sends both.
    failing.mode = "ok";
    const later = await cachet(["export", "--otlp", failing.url, "--json"], { home });
    expect(JSON.parse(later.stdout).exported).toBeGreaterThanOrEqual(1);
    const ids = failing.requests.slice(1).flatMap((q) => q.spans.map((s) => s.attributes["cachet.request"]));
    expect(new Set(ids).size).toBe(2);
  }, 60_000);
});
