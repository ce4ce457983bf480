/**
 * `cachet why` on a fork's first request, through the binary: the request is
 * compared with the parent's last one (whose cache it was sent against), so
 * its expectation is the one the ledger recorded and the explanation no longer
 * says "nothing cached yet" beside a cache read. `--fork=ID --session NAME`
 * naming another session is refused (as --fork=ID with --session X is).
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(cleanHomes);

// Over Claude's minimum cacheable length, so the parent's request writes a cache entry the fork can read.
const SYSTEM = Array.from({ length: 400 }, (_, i) => `Rule ${i}: keep every answer short and exact.`).join("\n");

test("why on a fork's first request compares it with the parent's last request and agrees with the recorded expectation", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-s", SYSTEM, "--session", "p", "hello"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "--fork=p", "and more"], { home })).code).toBe(0);
  const parentRequest = JSON.parse((await cachet(["why", "p", "--json"], { home })).stdout).request;

  const why = await cachet(["why", "--json"], { home });
  expect(why.code).toBe(0);
  const report = JSON.parse(why.stdout);
  expect(report.request.index).toBe(0);
  expect(report.request.session).not.toBe(parentRequest.session);
  expect(report.previous).toMatchObject({ id: parentRequest.id, session: parentRequest.session });
  expect(report.actualCacheRead).toBeGreaterThan(1_024);
  // The ledger's own expectation for a fork's first request (README: "records how much of the parent's cache it was expected to read").
  const exported = (await cachet(["export"], { home })).stdout.trim().split("\n").map((l) => JSON.parse(l));
  const row = exported.find((e) => e.type === "request").request;
  expect(row.expectedCacheRead).toBeGreaterThan(0);
  expect(report.expectedCacheRead).toBe(row.expectedCacheRead);
  expect(report.expectedCacheRead).toBe(report.actualCacheRead);
  expect(report.causes).toEqual(["no miss: the request read everything the previous one cached"]);

  const text = (await cachet(["why"], { home })).stdout;
  expect(text).toContain(`previous  ${parentRequest.id}  (anthropic/claude-sonnet-4-6, parent session ${parentRequest.session})`);
  expect(text).not.toContain("nothing cached yet");
});

test("--fork=p --session NEWNAME is refused (exit 2) and creates no session", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "p", "hello"], { home })).code).toBe(0);
  const r = await cachet(["--emulate", "--fork=p", "--session", "newname", "more"], { home });
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr.split("\n")).toEqual([
    "cachet: --fork=p and --session newname name two sessions to fork",
    "  hint: --fork=p alone forks p; --session newname --fork forks the other (--session names the session to continue or fork; a fork takes no name of its own)",
    "",
  ]);
  expect((await cachet(["sessions"], { home })).stdout.trim().split("\n").length).toBe(2);
});

test("why on a request the provider refused says so (HTTP 400 and its message) and that nothing was read or billed", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "--session", "mt", "-m", "google/gemini-2.5-flash", "hello"], { home })).code).toBe(0);
  const bad = await cachet(["--emulate", "--session", "mt", "-m", "google/gemini-2.5-flash", "-o", "top_p=0.9", "bad"], { home });
  expect(bad.code).toBe(4);
  const refusal = /cachet: (google: HTTP 400: .*)/.exec(bad.stderr)![1]!;

  const why = await cachet(["why", "mt"], { home });
  expect(why.code).toBe(0);
  const lines = why.stdout.split("\n");
  expect(lines.find((l) => l.startsWith("cached"))).toBe("cached    none: refused by the provider (HTTP 400), nothing read or billed");
  expect(lines.filter((l) => l.startsWith("cause"))).toEqual([`cause     the provider refused this request (${refusal}): nothing was read from the cache or billed`]);
  expect(why.stdout).not.toContain("usage unknown");

  const report = JSON.parse((await cachet(["why", "mt", "--json"], { home })).stdout);
  expect(report.refused).toEqual({ httpStatus: 400, error: refusal });
  expect(report.causes).toEqual([`the provider refused this request (${refusal}): nothing was read from the cache or billed`]);
  expect(report.actualCacheRead).toBeUndefined();
});
