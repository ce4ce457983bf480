/**
 * The cost cases through the compiled binary: `dist/cachet price --json`
 * with the pinned fixture prices, plus bad input. Skipped, with the reason
 * printed, when the binary has not been built (`npm run build:host`).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CASE_PRICES_FILE, COST_CASES } from "../fixtures/meter/cases.ts";

const BINARY = join(import.meta.dir, "..", "..", "dist", "cachet");
const built = existsSync(BINARY);
if (!built) console.log(`skipping meter e2e: ${BINARY} is missing (run \`npm run build:host\`)`);
const home = mkdtempSync(join(tmpdir(), "cachet-meter-e2e-"));

function run(args: string[], stdin?: string) {
  const result = Bun.spawnSync([BINARY, ...args], { env: { ...process.env, CACHET_HOME: home, NO_COLOR: "1" }, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin) });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

describe.skipIf(!built)("cachet price (compiled binary)", () => {
  for (const c of COST_CASES.filter((k) => /^(01|02|06|08|09A|33|34|35|36|37|44)/.test(k.name))) {
    test(c.name, () => {
      const file = join(home, `${c.name.replace(/\W+/g, "-")}.json`);
      writeFileSync(file, JSON.stringify(c.usage));
      const args = ["price", "--model", c.model, "--usage", file, "--prices", CASE_PRICES_FILE, ...(c.partial ? ["--partial"] : [])];
      const r = run([...args, "--json"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.cost_usd_exact).toBe(c.expected);
      expect(Math.abs(out.cost_usd - Number(c.expected))).toBeLessThan(1e-9);
      expect(out.lower_bound).toBe(c.partial === true);
      if (c.providerCost !== undefined) expect(out.provider_cost_usd).toBe(c.providerCost);
      const text = run(args);
      expect(text.code).toBe(0);
      const total = text.stdout.split("\n").find((l) => l.startsWith("total"))!;
      expect(total.split(/\s+/)[1]).toBe(c.expected);
      if (c.partial) expect(total).toEndWith("(at least)");
      if (c.providerCost !== undefined) expect(text.stdout).toContain(`provider-reported cost: ${c.providerCost}`);
      if (c.serviceTier !== undefined) expect(text.stdout.split("\n")[0]).toContain(`service tier ${c.serviceTier}`);
    });
  }

  test("usage on stdin (case 07, Codex record)", () => {
    const c = COST_CASES.find((k) => k.name.startsWith("07 OpenAI reasoning"))!;
    const r = run(["price", "--model", c.model, "--usage", "-", "--prices", CASE_PRICES_FILE, "--json"], JSON.stringify(c.usage));
    expect(JSON.parse(r.stdout).cost_usd).toBe(3.291124);
  });

  test("bad input: one clear line and a non-zero exit", () => {
    const malformed = run(["price", "--model", "openai/gpt-4o", "--usage", "-"], "{nope");
    expect(malformed.code).toBe(3);
    expect(malformed.stderr.split("\n")[0]).toStartWith("cachet: malformed JSON in usage stdin");
    const unknown = run(["price", "--model", "openai/no-such-model", "--usage", "-"], '{"prompt_tokens":1,"completion_tokens":1}');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split("\n")[0]).toBe("cachet: unknown model openai/no-such-model: it has no price in the catalog");
    expect(unknown.stdout).toBe("");
    const negative = run(["price", "--model", "openai/gpt-4o", "--usage", "-"], '{"prompt_tokens":-5,"completion_tokens":1}');
    expect(negative.code).toBe(3);
    expect(negative.stderr.split("\n")[0]).toBe("cachet: usage stdin: prompt_tokens is -5, negative: a token count is a whole number ≥ 0");
    expect(negative.stdout).toBe("");
    const file = join(home, "fractional.json");
    writeFileSync(file, '{"input_tokens":10,"output_tokens":1.5}');
    const fractional = run(["price", "--model", "anthropic/claude-sonnet-4-5", "--usage", file, "--json"]);
    expect(fractional.code).toBe(3);
    expect(fractional.stdout).toBe("");
    expect(fractional.stderr.split("\n")[0]).toBe(`cachet: usage ${file}: output_tokens is 1.5, not a whole number: a token count is a whole number ≥ 0`);
  });

  test("a token count past the number range (1e400, which JSON parsers read as infinity) or past exact integers is refused, exit 3, naming it as such, never as null", () => {
    const cases = [
      ['{"input_tokens":1e400,"output_tokens":5}', "input_tokens is beyond 1.8e308, a number too large to be a count"],
      ['{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":-1e400}', "cache_read_input_tokens is beyond -1.8e308, a number too large to be a count"],
      ['{"input_tokens":1e300,"output_tokens":5}', "input_tokens is above 9007199254740991, too large to count exactly"],
      // Parsed as ...992: the message names the bound, not a number the user never wrote.
      ['{"input_tokens":9007199254740993,"output_tokens":5}', "input_tokens is above 9007199254740991, too large to count exactly"],
    ];
    for (const [usage, problem] of cases) {
      for (const json of [[], ["--json"]]) {
        const r = run(["price", "--model", "anthropic/claude-sonnet-4-5", "--usage", "-", ...json], usage);
        expect({ usage, json, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
          usage, json, code: 3, stdout: "",
          stderr: `cachet: usage stdin: ${problem}: a token count is a whole number ≥ 0\n  hint: pass the provider's usage object as it returned it, with each token count a whole number ≥ 0\n`,
        });
      }
    }
  });
});

describe.skipIf(!built)("cachet prices update (compiled binary)", () => {
  test("a changed context limit is counted and named as a change, and `cachet models` shows it", () => {
    const own = mkdtempSync(join(tmpdir(), "cachet-prices-e2e-"));
    const inOwn = (args: string[]) => {
      const r = Bun.spawnSync([BINARY, ...args], { env: { ...process.env, CACHET_HOME: own, NO_COLOR: "1" }, stdin: "ignore" });
      return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
    };
    const before = JSON.parse(inOwn(["models", "--provider", "anthropic", "--json"]).stdout.split("\n")[0]!);
    expect(before).toMatchObject({ id: "anthropic/claude-2", input: 8, output: 24, context: 200000 });
    const file = join(own, "limits.json");
    // The same prices as in force, only the context limit raised.
    writeFileSync(file, JSON.stringify({ anthropic: { models: { "claude-2": { cost: { input: 8, output: 24 }, limit: { context: 1_000_000 } } } } }));
    const update = inOwn(["prices", "update", "--from", file]);
    expect(update.code).toBe(0);
    expect(update.stdout).toBe("~ anthropic/claude-2  limit.context 200000 → 1000000\n");
    expect(update.stderr).toMatch(/^price catalog merged: 1 models read; 0 added, 1 changed; /);
    expect(JSON.parse(inOwn(["models", "--provider", "anthropic", "--json"]).stdout.split("\n")[0]!)).toMatchObject({ id: "anthropic/claude-2", context: 1_000_000 });
  });
});
