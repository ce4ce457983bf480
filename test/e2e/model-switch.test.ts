/**
 * Switching a continued session's model, through the binary: stderr says so
 * (one line, like the other sticky settings; --quiet silences it), and
 * `cachet why` on the first request of the new model names the model as the
 * cause first and calls no unchanged node changed (the system prompt renders
 * to other bytes on another provider, but its node id is the same).
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";

afterAll(cleanHomes);

test("-c -m on another provider reports the model change on stderr; --quiet silences it; the same -m again says nothing", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-s", "new system", "one"], { home })).code).toBe(0);
  const switched = await cachet(["--emulate", "-c", "-m", "openai/gpt-4o", "two"], { home });
  expect(switched.code).toBe(0);
  expect(switched.stderr.trim().split("\n")).toEqual(["[warn] model anthropic/claude-sonnet-4-6 → openai/gpt-4o for this session from now on; the provider's cache starts over"]);
  const same = await cachet(["--emulate", "-c", "-m", "openai/gpt-4o", "three"], { home });
  expect(same.code).toBe(0);
  expect(same.stderr).toBe("");
  const quiet = await cachet(["--emulate", "-c", "--quiet", "-m", "openai/gpt-4o-mini", "four"], { home });
  expect(quiet.code).toBe(0);
  expect(quiet.stderr).toBe("");
  // The change was stored all the same: the next turn continues on the new model without a word.
  const after = await cachet(["--emulate", "-c", "five"], { home });
  expect(after.stderr).toBe("");
  expect(JSON.parse((await cachet(["why", "--json"], { home })).stdout).request.model).toBe("openai/gpt-4o-mini");
});

test("why after a provider switch names the different model first and not 'system changed' (same system node, other bytes), in text and --json", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-s", "new system", "one"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "-c", "two"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "-c", "-m", "openai/gpt-4o", "three"], { home })).code).toBe(0);

  const report = JSON.parse((await cachet(["why", "--json"], { home })).stdout);
  expect(report.previous.model).toBe("anthropic/claude-sonnet-4-6");
  expect(report.request.model).toBe("openai/gpt-4o");
  expect(report.divergence.index).toBe(0);
  expect(report.divergence.kind).toBe("system");
  expect(report.divergence.nodeId).toBe(report.divergence.previousNodeId);
  const modelCause = "different model (anthropic/claude-sonnet-4-6 → openai/gpt-4o): a provider caches per model, so nothing the previous request cached can be read";
  expect(report.causes).toEqual([modelCause, "below the minimum cacheable length (1024 tokens)"]);

  const text = (await cachet(["why"], { home })).stdout.split("\n");
  expect(text.find((l) => l.startsWith("diverges"))).toBe(`diverges  at node 0: ${report.divergence.nodeId} (system)`);
  expect(text.filter((l) => l.startsWith("cause") || l.startsWith("     "))).toEqual([`cause     ${modelCause}`, "          below the minimum cacheable length (1024 tokens)"]);
});

test("why after a provider switch that also changed the system prompt names the model first, then 'system changed'", async () => {
  const home = freshHome();
  expect((await cachet(["--emulate", "-s", "old system", "one"], { home })).code).toBe(0);
  expect((await cachet(["--emulate", "-c", "-m", "openai/gpt-4o", "-s", "other system", "two"], { home })).code).toBe(0);
  const report = JSON.parse((await cachet(["why", "--json"], { home })).stdout);
  expect(report.divergence.nodeId).not.toBe(report.divergence.previousNodeId);
  expect(report.causes.slice(0, 2)).toEqual(["different model (anthropic/claude-sonnet-4-6 → openai/gpt-4o): a provider caches per model, so nothing the previous request cached can be read", "system changed"]);
});
