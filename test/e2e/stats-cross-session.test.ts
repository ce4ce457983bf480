/**
 * Cache efficiency across sessions through the compiled binary (`--emulate`):
 * a provider's cache is shared by every session of a model, so a new
 * session's first request reads the system prompt another session cached.
 * The ledger records that as cacheable (the entry of the other session's
 * request), `cachet stats` keeps efficiency at 100% in every grouping, and
 * `cachet why` names the request that wrote the entry.
 */
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { cleanHomes, freshHome } from "./harness.ts";
import { LARGE_SYSTEM, ok, tempFile } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

test("a second session with the same system prompt: its first read is cacheable (session A's entry), efficiency 100% in every grouping", async () => {
  const home = freshHome();
  const system = tempFile("system.txt", LARGE_SYSTEM);
  await ok(["--emulate", "-s", `@${system}`, "-q", "Session A: what does rule 1 say?"], { home });
  await ok(["--emulate", "-s", `@${system}`, "-q", "Session B: what does rule 2 say?"], { home });
  for (const n of [3, 4]) await ok(["--emulate", "-c", "-q", `Session B: and rule ${n}?`], { home });

  const db = new Database(join(home, "cachet.db"), { readonly: true });
  const rows = db.query("SELECT id, session_id AS session, cache_read AS cacheRead, cache_write_5m AS written, cacheable_max AS cacheableMax FROM requests ORDER BY started_at").all() as Raw[];
  db.close();
  expect(rows).toHaveLength(4);
  const [a, b1, ...bLater] = rows as [Raw, Raw, ...Raw[]];
  expect(b1.session).not.toBe(a.session);
  // A wrote the system prompt and its question; B's first request read the system prompt A cached.
  expect(a.cacheRead).toBe(0);
  expect(b1.cacheRead).toBeGreaterThan(2_000);
  expect(b1.cacheRead).toBeLessThan(a.written);
  // Recorded as what A's entry could serve, not left at 0 as for a session's first request with nothing cached.
  expect(b1.cacheableMax).toBe(b1.cacheRead);
  for (const r of bLater) expect(r.cacheableMax).toBe(r.cacheRead);

  const stats = async (by: string) => JSON.parse((await ok(["stats", "--by", by, "--json"], { home })).stdout) as Raw;
  const byRequest = await stats("request");
  const b1Stats = (byRequest.groups as Raw[]).find((g) => g.key === b1.id)!;
  expect(b1Stats.cacheableTokens).toBe(b1.cacheRead);
  expect(b1Stats.cacheEfficiency).toBe(1);
  // Every request of B read all it could; A could read nothing: 100% in total and in every grouping.
  const read = rows.reduce((n, r) => n + r.cacheRead, 0);
  expect(byRequest.total.tokens.cacheRead).toBe(read);
  expect(byRequest.total.cacheableTokens).toBe(read);
  expect(byRequest.total.cacheEfficiency).toBe(1);
  for (const by of ["session", "role", "day", "model"]) {
    const s = await stats(by);
    for (const g of s.groups as Raw[]) expect(g.cacheEfficiency === null || g.cacheEfficiency === 1).toBe(true);
    expect(s.total.cacheEfficiency).toBe(1);
  }
  const text = (await ok(["stats", "--by", "session"], { home })).stdout;
  const percents = [...text.matchAll(/(\d+\.\d)%/g)].map((m) => Number(m[1]));
  expect(percents).toContain(100);
  expect(Math.max(...percents)).toBe(100);

  const why = (await ok(["why", b1.id], { home })).stdout;
  expect(why).toContain(`cached    expected ${b1.cacheRead.toLocaleString("en-US")} tokens, actual ${b1.cacheRead.toLocaleString("en-US")}`);
  expect(why).toContain(`the one written by request ${a.id} of session ${a.session}`);
}, 60_000);
