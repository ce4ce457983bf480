import { expect, test } from "bun:test";
import type { Catalog } from "./catalog.ts";
import { missingModels } from "./model-list.ts";

const builtIn: Catalog = {
  openai: {
    models: {
      "gpt-4o": { cost: { input: 2.5, output: 10 }, release_date: "2024-05-13" },
      "gpt-5": { cost: { input: 1.25, output: 10 }, release_date: "2025-08-07" },
      "gpt-5.5": { cost: { input: 5, output: 30 }, release_date: "2026-04-23" },
      "gpt-6-unpriced": { release_date: "2026-09-01" },
      "gpt-4": { cost: { input: 30, output: 60 }, release_date: "2023-03-14" },
    },
  },
  deepseek: { models: { "deepseek-chat": { cost: { input: 0.28, output: 0.42 } } } },
};
const replaced: Catalog = { anthropic: { models: { "claude-sonnet-4-6": { cost: { input: 3, output: 15 } } } } };

test("a provider the stored catalog dropped is named its built-in priced models, newest first, and `cachet prices reset`", () => {
  const m = missingModels("openai", "openai", replaced, builtIn);
  expect(m.message).toBe('the price catalog in force (stored by `cachet prices update`) lists no model of provider "openai"');
  expect(m.hint).toBe(
    'the built-in catalog prices openai/gpt-5.5, openai/gpt-5, openai/gpt-4o and more: `cachet prices reset` brings it back; or price a model with [prices."openai/MODEL"] in config.toml',
  );
  // Shown under the provider's own id when its catalog id is another's.
  expect(missingModels("openai-responses", "openai", replaced, builtIn).hint).toStartWith("the built-in catalog prices openai-responses/gpt-5.5, ");
});

test("a provider with no list of its own (an OpenAI-compatible server) is named a model the catalog in force prices", () => {
  expect(missingModels("openai-compatible", "openai-compatible", builtIn, builtIn).hint).toBe(
    'a model id that names a catalog model is priced as it (e.g. openai-compatible/deepseek/deepseek-chat: see `cachet models`); price any other with [prices."openai-compatible/MODEL"] in config.toml',
  );
  expect(missingModels("openai-compatible", "openai-compatible", replaced, builtIn).hint).toStartWith("a model id that names a catalog model is priced as it (e.g. openai-compatible/anthropic/claude-sonnet-4-6: ");
});

test("a catalog in force that prices nothing: none is priced, `cachet prices reset` brings the built-in one back", () => {
  const m = missingModels("openai-compatible", "openai-compatible", { anthropic: { models: { x: {} } } }, builtIn);
  expect(m).toEqual({
    message: 'the price catalog in force prices no model, so none of provider "openai-compatible" is priced',
    hint: '`cachet prices reset` brings the built-in catalog back; or price a model with [prices."openai-compatible/MODEL"] in config.toml',
  });
});
