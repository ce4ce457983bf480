import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../config.ts";
import { CachetError } from "../errors.ts";
import { withModelHint } from "./model-hint.ts";
import { loadModelHost } from "./model-resolution.ts";
import { DEFAULT_MODEL, parseModelRef } from "./resolve-provider.ts";

const host = await loadModelHost(parseConfig({}, "test"), {});
// A home with no stored catalog update: the embedded catalog is the one in force.
const env = { CACHET_HOME: mkdtempSync(join(tmpdir(), "cachet-model-hint-")) };

/** The hint `-m flag` ends with: the error the turn throws for it, through withModelHint. */
async function hintFor(flag: string): Promise<string | undefined> {
  let error: CachetError;
  try {
    host.provider(parseModelRef(flag).provider);
    throw new Error(`-m ${flag} was taken`);
  } catch (e) {
    error = e as CachetError;
  }
  return (await withModelHint(error, flag, host, env)).hint;
}

test("a model id without a provider: the one provider whose catalog lists it (or an id a typo away)", async () => {
  expect(await hintFor("claude-sonnet-4-6")).toBe("did you mean -m anthropic/claude-sonnet-4-6? `cachet models` lists the models");
  expect(await hintFor("claude-sonet-4-6")).toBe("did you mean -m anthropic/claude-sonnet-4-6? `cachet models` lists the models");
  expect(await hintFor("gemini-2.5-flash")).toBe("did you mean -m google/gemini-2.5-flash? `cachet models` lists the models");
  // Nothing close: the example is the default model.
  expect(await hintFor("noslash")).toBe(`e.g. -m ${DEFAULT_MODEL}; \`cachet models\` lists them`);
});

test("an unknown provider: the provider whose catalog lists the model, else a registered provider a typo away", async () => {
  const known = `known providers: ${[...host.providers.keys()].sort().join(", ")}`;
  expect(await hintFor("gemini/gemini-2.5-flash")).toBe(`did you mean -m google/gemini-2.5-flash? ${known}`);
  expect(await hintFor("anthropc/my-model")).toBe(`did you mean -m anthropic/my-model? ${known}`);
  expect(await hintFor("nope/x")).toBe(known);
});

test("a -m the turn took is left alone: the refusal was about something else", async () => {
  const other = new CachetError("BAD_FLAG", "-o: something else", { hint: "as it was" });
  expect(await withModelHint(other, "anthropic/claude-sonet-4-6", host, env)).toBe(other);
});
