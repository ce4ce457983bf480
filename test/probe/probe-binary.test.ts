/**
 * `cachet probe` through the compiled binary against the in-process emulator:
 * each field shape's default form keeps ≥ 99% cache efficiency on every call
 * that does not change the prefix on purpose, while its naive form collapses;
 * the JSON document is byte-identical across runs; a bad scenario file is one
 * line naming the path and a non-zero exit.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT } from "../../src/errors.ts";
import type { ProbeReport, ProbeVariant } from "../../src/probe/probe-report.ts";
import { homeEnv } from "../e2e/harness.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BINARY = join(ROOT, "dist", "cachet");
const SCENARIOS = join(ROOT, "test", "scenarios");
if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run \`npm run build:host\` (npm test does it first)`);

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function probe(args: string[]): { code: number; stdout: string; stderr: string } {
  const home = mkdtempSync(join(tmpdir(), "cachet-e2e-probe-"));
  homes.push(home);
  const env: Record<string, string> = homeEnv(home);
  const proc = Bun.spawnSync([BINARY, "probe", ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 120_000 });
  return { code: proc.exitCode ?? -1, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

function report(name: string): ProbeReport {
  const r = probe([join(SCENARIOS, name), "--emulate", "--json"]);
  if (r.code !== 0) throw new Error(`cachet probe ${name} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as ProbeReport;
}

/** Calls that could read something and follow no deliberate change (prefix change, clock advance). */
function steadyCalls(variant: ProbeVariant) {
  return variant.calls.filter((c) => c.change === null && c.cacheableMax > 0);
}

const PAIRS = ["date-in-system", "plan-state", "schema-per-stage", "tool-order", "tool-loop"] as const;

describe.each(PAIRS)("%s", (shape) => {
  const naive = report(`${shape}.naive.json`);
  const fallback = report(`${shape}.default.json`);

  test.each(fallback.variants.map((v) => [v.model, v] as const))("default form on %s: ≥ 99%% efficiency on every steady call", (_model, variant) => {
    const steady = steadyCalls(variant);
    // All calls but the first are steady in the default forms: no prefix change, no clock advance.
    expect(steady.length).toBe(variant.calls.length - 1);
    for (const call of steady) expect({ call: call.call, efficiency: call.efficiency! >= 0.99 }).toEqual({ call: call.call, efficiency: true });
  });

  test("no call and no total reads more than its cacheable maximum (efficiency ≤ 100%), naive or default", () => {
    for (const variant of [...naive.variants, ...fallback.variants]) {
      for (const call of variant.calls) {
        expect({ model: variant.model, call: call.call, readWithinMax: (call.cacheRead ?? 0) <= call.cacheableMax }).toEqual({ model: variant.model, call: call.call, readWithinMax: true });
      }
      expect(variant.totals.efficiency === null || variant.totals.efficiency <= 1).toBe(true);
    }
  });

  test("naive form collapses: its hit rate and cost against the default's, per model", () => {
    for (const variant of naive.variants) {
      const twin = fallback.variants.find((v) => v.model === variant.model)!;
      const expectation = { model: variant.model, collapsed: variant.totals.hitRate! < twin.totals.hitRate! / 2, dearer: variant.totals.costUsd > twin.totals.costUsd };
      // OpenAI caches prefixes without any marker, so a client sending none (the naive tool loop) still hits there.
      const automatic = shape === "tool-loop" && variant.model.startsWith("openai/");
      expect(expectation).toEqual({ model: variant.model, collapsed: !automatic, dearer: !automatic });
    }
  });
});

test("the JSON document is byte-identical across two runs (forks, roles, clock advances, several models)", () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-e2e-probe-scenario-"));
  homes.push(dir);
  const scenario = join(dir, "fork.json");
  writeFileSync(
    scenario,
    JSON.stringify({
      models: ["anthropic/claude-sonnet-4-6", "openai/gpt-5.1"],
      system: { file: join(SCENARIOS, "data", "agent-rules.md") },
      steps: [
        { user: "first", stdin: join(SCENARIOS, "data", "command-output.txt") },
        { overlay: "day 1" },
        { user: "second" },
        { fork: { role: "subagent", steps: [{ user: "look into it" }, { user: "and report" }] } },
        { advance_clock: "6m" },
        { user: "third" },
      ],
    }),
  );
  const first = probe([scenario, "--emulate", "--json", "--cache", "both"]);
  const second = probe([scenario, "--emulate", "--json", "--cache", "both"]);
  expect(first.code).toBe(0);
  expect(second.stdout).toBe(first.stdout);
  const doc = JSON.parse(first.stdout) as ProbeReport;
  expect(doc.variants.map((v) => `${v.model} ${v.cache}`)).toEqual(["anthropic/claude-sonnet-4-6 auto", "anthropic/claude-sonnet-4-6 off", "openai/gpt-5.1 auto", "openai/gpt-5.1 off"]);
  expect(doc.comparison?.length).toBe(4);
  const anthropic = doc.variants[0]!;
  expect(anthropic.calls.map((c) => [c.session, c.role, c.change])).toEqual([
    [1, "probe", null],
    [1, "probe", null],
    [2, "subagent", null],
    [2, "subagent", null],
    [1, "probe", "clock +6m"],
  ]);
  // The fork's first call reads what its parent cached; the call after the 6-minute pause finds the 5-minute entries gone.
  expect(anthropic.calls[2]!.efficiency).toBeGreaterThanOrEqual(0.99);
  expect(anthropic.calls[4]!.cacheRead).toBe(0);
  expect(anthropic.calls[4]!.note).toContain("TTL expired");
  // Totals include every call, the subagent's too.
  expect(anthropic.totals.calls).toBe(5);
  expect(anthropic.totals.cacheRead).toBe(anthropic.calls.reduce((n, c) => n + (c.cacheRead ?? 0), 0));
});

test("a bad scenario file is one line naming the path, a non-zero exit and nothing on stdout", () => {
  const dir = mkdtempSync(join(tmpdir(), "cachet-e2e-probe-bad-"));
  homes.push(dir);
  const scenario = join(dir, "bad.json");
  writeFileSync(scenario, JSON.stringify({ models: ["anthropic/claude-sonnet-4-6"], steps: [{ user: "hi" }, { overlay: "x", colour: "red" }] }));
  const r = probe([scenario, "--emulate"]);
  expect(r.code).toBe(EXIT.input);
  expect(r.stdout).toBe("");
  expect(r.stderr).toBe(`cachet: scenario ${scenario}: steps[1].colour: unknown key\n`);
});
