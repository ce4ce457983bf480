/**
 * A model the price catalog does not list is still sent (unknown models are
 * allowed); its "cost unknown" warning names the catalog's id of the same
 * provider a typo away, when there is one. A `-m` without a provider, or with
 * one no plugin registers, is refused (exit 2, nothing stored) with a "did you
 * mean" naming the provider whose catalog lists the model.
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(cleanHomes);

test("a misspelled model is sent, and its cost warning asks about the close catalog id", async () => {
  const home = freshHome();
  const typo = await cachet(["--emulate", "-m", "anthropic/claude-sonet-4-6", "hi"], { home });
  expect(typo.code).toBe(0);
  expect(typo.stdout).not.toBe("");
  const warnings = typo.stderr.split("\n").filter((l) => l.includes("cost unknown"));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toEndWith("cost unknown: unknown model anthropic/claude-sonet-4-6: no price in the catalog or config; did you mean anthropic/claude-sonnet-4-6?");

  const far = await cachet(["--emulate", "-m", "openai/totally-new-model", "hi"], { home });
  expect(far.code).toBe(0);
  const farWarnings = far.stderr.split("\n").filter((l) => l.includes("cost unknown"));
  expect(farWarnings).toHaveLength(1);
  expect(farWarnings[0]).toEndWith("cost unknown: unknown model openai/totally-new-model: no price in the catalog or config");
});

test("-m without a provider, or with an unknown one, asks about the provider whose catalog lists the model", async () => {
  const home = freshHome();
  const known = "known providers: alibaba, anthropic, deepseek, google, moonshotai, openai, openai-compatible, openai-responses, openrouter, xai";
  const cases: [string, string[]][] = [
    ["claude-sonnet-4-6", ['cachet: model "claude-sonnet-4-6" is not of the form provider/model', "  hint: did you mean -m anthropic/claude-sonnet-4-6? `cachet models` lists the models"]],
    ["gemini/gemini-2.5-flash", ['cachet: unknown provider "gemini"', `  hint: did you mean -m google/gemini-2.5-flash? ${known}`]],
    ["anthropc/claude-sonnet-4-6", ['cachet: unknown provider "anthropc"', `  hint: did you mean -m anthropic/claude-sonnet-4-6? ${known}`]],
    // Nothing close: the example is the default model.
    ["noslash", ['cachet: model "noslash" is not of the form provider/model', "  hint: e.g. -m anthropic/claude-sonnet-4-6; `cachet models` lists them"]],
    ["nope/x", ['cachet: unknown provider "nope"', `  hint: ${known}`]],
  ];
  for (const [model, lines] of cases) {
    const r = await cachet(["--emulate", "-m", model, "hi"], { home });
    expect({ model, code: r.code, stdout: r.stdout, stderr: r.stderr.split("\n").filter((l) => l !== "") }).toEqual({ model, code: 2, stdout: "", stderr: lines });
  }
  expect((await cachet(["sessions", "--json"], { home })).stdout.trim()).toBe("");
});
