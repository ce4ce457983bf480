/**
 * A model the price catalog does not list is still sent (unknown models are
 * allowed); its "cost unknown" warning names the catalog's id of the same
 * provider a typo away, when there is one.
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
