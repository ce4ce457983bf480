/**
 * `cachet models --provider P` after `cachet prices update --replace` with a
 * catalog lacking P: the hint names models P really has (from the built-in
 * catalog) and `cachet prices reset`, never an OpenAI-compatible id such as
 * `openai/deepseek/deepseek-chat`; an OpenAI-compatible server's hint names a
 * model the catalog in force prices.
 */
import { afterAll, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";
import { tempFile } from "./session-kit.ts";

afterAll(cleanHomes);

test("models --provider openai after a replacing update without openai: its built-in models and `cachet prices reset`; after the reset it lists them", async () => {
  const home = freshHome();
  const file = tempFile("api.json", JSON.stringify({ anthropic: { id: "anthropic", models: { "claude-sonnet-4-6": { id: "claude-sonnet-4-6", cost: { input: 3, output: 15 } } } } }));
  expect((await cachet(["prices", "update", "--replace", "--from", file], { home })).code).toBe(0);

  const openai = await cachet(["models", "--provider", "openai"], { home });
  expect(openai.code).toBe(2);
  const [message, hint] = openai.stderr.trimEnd().split("\n");
  expect(message).toBe('cachet: the price catalog in force (stored by `cachet prices update`) lists no model of provider "openai"');
  expect(hint).toMatch(/^ {2}hint: the built-in catalog prices openai\/gpt-[^,\s]+, openai\/[^,\s]+, openai\/[^,\s]+ and more: `cachet prices reset` brings it back; or price a model with \[prices\."openai\/MODEL"\] in config\.toml$/);
  expect(openai.stderr).not.toContain("deepseek");

  const compatible = await cachet(["models", "--provider", "openai-compatible"], { home });
  expect(compatible.code).toBe(2);
  expect(compatible.stderr).toContain("(e.g. openai-compatible/anthropic/claude-sonnet-4-6: see `cachet models`)");

  expect((await cachet(["prices", "reset"], { home })).code).toBe(0);
  const listed = await cachet(["models", "--provider", "openai", "--json"], { home });
  expect(listed.code).toBe(0);
  const ids = listed.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { id: string }).id);
  // Every model the hint named is listed once the built-in catalog is back.
  const named = hint!.split(" and more")[0]!.match(/openai\/[^,\s]+/g)!;
  expect(named).toHaveLength(3);
  for (const id of named) expect(ids).toContain(id);
}, 30_000);
