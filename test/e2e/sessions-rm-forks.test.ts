/**
 * `cachet sessions rm` on a session with forks, through the compiled binary:
 * refused without --force (exit 2, a usage matter) naming every session
 * --force would remove, forks of forks included, nothing removed; --force
 * removes exactly those.
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, events, freshHome } from "./harness.ts";

afterAll(cleanHomes);

/** Runs a turn and returns the session id it ran on. */
async function turn(home: string, args: string[]): Promise<string> {
  const r = await cachet(["--emulate", "--json", ...args], { home });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  const session = events(r.stdout).find((e) => e.type === "session");
  expect(typeof session?.id).toBe("string");
  return session!.id as string;
}

async function sessionIds(home: string): Promise<string[]> {
  const r = await cachet(["sessions", "--json"], { home });
  return r.stdout.trim().split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { id: string }).id).sort();
}

/** An exact decimal USD string (as `costExact` is written) in pico-USD, to sum without a float. */
function pico(exact: string): bigint {
  const [whole, fraction = ""] = exact.split(".");
  return BigInt(whole!) * 10n ** 12n + BigInt(fraction.padEnd(12, "0").slice(0, 12));
}

const HINT_END = "sessions (`cachet export SESSION` first keeps a copy), or remove the forks first";

test("sessions rm of a session with forks and forks of forks: exit 2 naming every session --force would remove with its parent, nothing removed; --force removes those 4 and no other; a leaf fork goes without --force", async () => {
  const home = freshHome();
  const main = await turn(home, ["--session", "main", "hello"]);
  const a = await turn(home, ["--fork=main", "first fork"]);
  const b = await turn(home, ["--fork=main", "second fork"]);
  const c = await turn(home, [`--fork=${a}`, "fork of the first fork"]);
  const other = await turn(home, ["--session", "other", "unrelated"]);
  const exported = (await cachet(["export"], { home })).stdout;
  const all = [main, a, b, c, other].sort();
  expect(await sessionIds(home)).toEqual(all);

  for (const ref of ["main", main]) {
    for (const extra of [[], ["--json"]]) {
      const r = await cachet(["sessions", "rm", ref, ...extra], { home });
      expect({ ref, extra, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
        ref,
        extra,
        code: 2,
        stdout: "",
        stderr: `cachet: session main has forks; --force would remove it and 3 more: ${a} (fork of main), ${b} (fork of main), ${c} (fork of ${a})\n  hint: add --force to remove all 4 ${HINT_END}\n`,
      });
    }
  }
  // A fork with a fork of its own is refused the same way, naming only its own family.
  const forkRm = await cachet(["sessions", "rm", a], { home });
  expect({ code: forkRm.code, stderr: forkRm.stderr }).toEqual({ code: 2, stderr: `cachet: session ${a} has forks; --force would remove it and 1 more: ${c} (fork of ${a})\n  hint: add --force to remove all 2 ${HINT_END}\n` });
  expect(await sessionIds(home)).toEqual(all);
  expect((await cachet(["export"], { home })).stdout).toBe(exported);

  // What `stats` says the 4 sessions cost, each exact: the removal reports their exact sum.
  const stats = JSON.parse((await cachet(["stats", "--by", "session", "--json"], { home })).stdout) as { groups: { key: string; costExact: string }[] };
  const family = stats.groups.filter((g) => [main, a, b, c].includes(g.key));
  expect(family.length).toBe(4);
  const expected = family.reduce((sum, g) => sum + pico(g.costExact), 0n);
  expect(expected).toBeGreaterThan(0n);
  const forced = await cachet(["sessions", "rm", "main", "--force", "--json"], { home });
  expect({ code: forced.code, stderr: forced.stderr }).toEqual({ code: 0, stderr: "" });
  const report = JSON.parse(forced.stdout) as { removed: string[]; ledgerRows: number; costUsd: number; costExact: string; unpricedRows: number };
  expect(report.removed).toEqual([main, a, b, c]);
  expect(report.ledgerRows).toBe(4);
  expect(report.unpricedRows).toBe(0);
  expect(pico(report.costExact)).toBe(expected);
  // The number is the nearest double to the exact sum, not a sum of doubles.
  expect(report.costUsd).toBe(Number(report.costExact));
  expect(await sessionIds(home)).toEqual([other]);

  // A fork without forks of its own needs no --force; its parent stays.
  const leaf = await turn(home, ["--fork=other", "a leaf"]);
  const leafRm = await cachet(["sessions", "rm", leaf], { home });
  expect({ code: leafRm.code, stdout: leafRm.stdout }).toEqual({ code: 0, stdout: "" });
  expect(leafRm.stderr).toMatch(new RegExp(`^\\[info\\] removed ${leaf} with its 1 ledger row\\(s\\), \\$0\\.\\d+ \\(stats and cost no longer count them\\)\\n$`));
  expect(await sessionIds(home)).toEqual([other]);
});

test("sessions rm of a session with 12 forks: the refusal names the first 10 with their parent and counts the 2 more", async () => {
  const home = freshHome();
  await turn(home, ["--session", "wide", "hello"]);
  const forks: string[] = [];
  for (let i = 0; i < 12; i++) forks.push(await turn(home, ["--fork=wide", `fork ${i}`]));
  const r = await cachet(["sessions", "rm", "wide"], { home });
  const named = forks.slice(0, 10).map((id) => `${id} (fork of wide)`).join(", ");
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
    code: 2,
    stdout: "",
    stderr: `cachet: session wide has forks; --force would remove it and 12 more: ${named} and 2 more\n  hint: add --force to remove all 13 ${HINT_END}\n`,
  });
  expect((await sessionIds(home)).length).toBe(13);
});

test("--json refusals outside a run (sessions rm of a session with forks among them) print nothing on stdout, one error line and hint on stderr, and a non-zero exit, as README says; only a run's JSON-lines stream carries an `error` line", async () => {
  const home = freshHome();
  const parent = await turn(home, ["--session", "p", "hello"]);
  const fork = await turn(home, ["--fork=p", "a fork"]);
  const refusals: Array<[string[], number, string]> = [
    [["sessions", "rm", "p", "--json"], 2, `cachet: session p has forks; --force would remove it and 1 more: ${fork} (fork of p)`],
    [["sessions", "show", "nosuch", "--json"], 2, 'cachet: no session "nosuch"'],
    [["cost", "nosuch", "--json"], 2, 'cachet: no session "nosuch"'],
    [["why", "r_nosuch", "--json"], 2, 'cachet: no request "r_nosuch" in the ledger'],
    [["compact", "--session", "nosuch", "--json"], 2, 'cachet: no session "nosuch"'],
    [["stats", "--since", "bogus", "--json"], 2, 'cachet: --since "bogus" is neither a duration nor a date that exists'],
    [["models", "--provider", "nope", "--json"], 2, 'cachet: the price catalog has no provider "nope"'],
    [["price", "--model", "openai/gpt-4o", "--usage", "-", "--json"], 3, "cachet: malformed JSON in usage stdin"],
  ];
  for (const [args, code, first] of refusals) {
    const r = await cachet(args, { home, stdin: "{nope" });
    const lines = r.stderr.split("\n");
    expect({ args, code: r.code, stdout: r.stdout, first: lines[0]!.startsWith(first), hint: lines[1]!.startsWith("  hint: "), lines: lines.length }).toEqual({ args, code, stdout: "", first: true, hint: true, lines: 3 });
  }
  // Nothing was removed by the refusal.
  expect(await sessionIds(home)).toEqual([parent, fork].sort());
  // A run's --json stdout is a stream of events: its refusal is an `error` line there.
  const run = await cachet(["--emulate", "--json", "--session", "s_nosuch00000", "hi"], { home });
  expect(run.code).toBe(2);
  expect(events(run.stdout).map((e) => [e.type, e.code])).toEqual([["error", "SESSION_NOT_FOUND"]]);
});
