import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { statePaths, storedCatalogFile } from "../paths.ts";
import { embeddedCatalog, findModel } from "./catalog.ts";
import { priceReport } from "./index.ts";
import { modelLimits } from "./model-limits.ts";

function home() {
  return statePaths({ CACHET_HOME: mkdtempSync(join(tmpdir(), "cachet-limits-")) });
}

test("every embedded catalog model has its limits and temperature rule, as findModel gives them", async () => {
  const catalog = embeddedCatalog();
  const paths = home();
  let checked = 0;
  for (const [provider, { models }] of Object.entries(catalog)) {
    for (const [id, entry] of Object.entries(models)) {
      const got = await modelLimits(`${provider}/${id}`, paths);
      const limit = entry.limit === undefined ? undefined : { context: entry.limit.context, output: entry.limit.output };
      expect({ context: got?.limit?.context, output: got?.limit?.output, temperatureFalse: got?.temperature === false }).toEqual({
        context: limit?.context,
        output: limit?.output,
        temperatureFalse: entry.temperature === false,
      });
      checked++;
    }
  }
  expect(checked).toBeGreaterThan(1000);
  expect((await modelLimits("openai/gpt-5", paths))?.limit?.context).toBe(findModel(catalog, "openai/gpt-5")?.limit?.context);
});

test("a model the catalog does not list has no limits; a provider without a list resolves a model id naming a catalog model", async () => {
  const paths = home();
  expect(await modelLimits("openai/no-such-model", paths)).toBeUndefined();
  expect(await modelLimits("openai-compatible/local-model", paths)).toBeUndefined();
  const fronted = await modelLimits("openai-compatible/deepseek/deepseek-chat", paths);
  expect(fronted?.limit?.context).toBe(findModel(embeddedCatalog(), "deepseek/deepseek-chat")!.limit!.context);
  expect(fronted?.limit?.context).toBeGreaterThan(0);
});

test("a stored catalog update is in force over the embedded catalog", async () => {
  const paths = home();
  const file = storedCatalogFile(paths);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ openai: { id: "openai", models: { "gpt-5": { id: "gpt-5", cost: { input: 1, output: 2 }, limit: { context: 1234, output: 56 }, temperature: false } } } }));
  expect(await modelLimits("openai/gpt-5", paths)).toMatchObject({ limit: { context: 1234, output: 56 }, temperature: false });
  expect(await modelLimits("openai/gpt-4o", paths)).toBeUndefined();
  // A later update (the same process, as a long-running one sees `cachet prices update` from another) is in force at once.
  writeFileSync(file, JSON.stringify({ openai: { id: "openai", models: { "gpt-5": { id: "gpt-5", cost: { input: 1, output: 2 }, limit: { context: 4321, output: 65 } } } } }));
  const updated = await modelLimits("openai/gpt-5", paths);
  expect(updated).toMatchObject({ limit: { context: 4321, output: 65 } });
  expect(updated?.temperature).toBeUndefined();
  writeFileSync(file, "{ not json");
  await expect(modelLimits("openai/gpt-5", paths)).rejects.toMatchObject({ code: "CATALOG_INVALID" });
});

test("a model id that is not provider/model is refused as findModel refuses it", async () => {
  await expect(modelLimits("gpt-5", home())).rejects.toMatchObject({ code: "UNKNOWN_MODEL" });
});

test("priceReport prices with the stored catalog update in force at each call, as a resident process sees `cachet prices update` between two turns", async () => {
  const env = { CACHET_HOME: mkdtempSync(join(tmpdir(), "cachet-limits-")) };
  const paths = statePaths(env);
  const file = storedCatalogFile(paths);
  mkdirSync(dirname(file), { recursive: true });
  const catalog = (input: number) => JSON.stringify({ openai: { id: "openai", models: { "gpt-5": { id: "gpt-5", cost: { input, output: 2 } } } } });
  const report = { usage: { input: 1_000_000, output: 0 }, raw: {} };
  writeFileSync(file, catalog(1));
  expect((await priceReport("openai/gpt-5", report, { config: {}, env })).costUsd).toBe(1);
  writeFileSync(file, catalog(3));
  expect((await priceReport("openai/gpt-5", report, { config: {}, env })).costUsd).toBe(3);
  rmSync(file);
  expect((await priceReport("openai/gpt-5", report, { config: {}, env })).costUsd).toBe(findModel(embeddedCatalog(), "openai/gpt-5")!.cost!.input!);
});
