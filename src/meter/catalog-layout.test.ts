import { expect, test } from "bun:test";
import { catalogText, layOutCatalog, providerRanges, providerSlice } from "./catalog-layout.ts";
import { embeddedCatalog, embeddedCatalogFor, findModel, type Catalog } from "./catalog.ts";

const ODD: Catalog = {
  bare: { models: {} },
  acme: {
    id: "acme",
    name: "Acmé \"quoted\"\nname",
    models: {
      "m/with/slashes": { cost: { input: 1, output: 2 } },
      "say \"hi\"\t": { name: "tab and quotes", limit: { context: 10 } },
      ["__proto__"]: { name: "own key, not a prototype" },
      "déjà-vu": { cost: { input: 3 } },
    },
  },
  deepseek: { id: "deepseek", models: { "deepseek-chat": { limit: { context: 128000 } } } },
};

const LAID_OUT = layOutCatalog(ODD as Record<string, Record<string, unknown>>);
const BYTES = Buffer.from(LAID_OUT);
const RANGES = providerRanges(LAID_OUT.slice(0, LAID_OUT.indexOf("\n")));

function lines(provider: string): Buffer {
  const [start, end] = RANGES[provider]!;
  return BYTES.subarray(start, end);
}

test("below its first line a laid-out catalog is the same catalog, one model per line", () => {
  const parsed = JSON.parse(catalogText(LAID_OUT));
  expect(parsed).toEqual(JSON.parse(JSON.stringify(ODD)));
  expect(Object.hasOwn(parsed.acme.models, "__proto__")).toBe(true);
  expect(LAID_OUT.split("\n").filter((line) => line.startsWith(" ")).length).toBe(5);
});

test("each provider's range holds its line and its models' lines, and a slice of it resolves each model as the whole catalog does", () => {
  expect(Object.keys(RANGES)).toEqual(["bare", "acme", "deepseek"]);
  for (const [provider, { models }] of Object.entries(ODD)) {
    const text = lines(provider).toString("utf8");
    expect(text.startsWith(`${JSON.stringify(provider)}:{`)).toBe(true);
    expect(text.split("\n").filter((line) => line.startsWith(" ")).length).toBe(Object.keys(models).length);
    for (const model of Object.keys(models)) {
      const got = providerSlice(lines(provider), model);
      expect(Object.keys(got)).toEqual([provider]);
      expect(Object.keys(got[provider]!.models)).toEqual([model]);
      expect(findModel(got, `${provider}/${model}`)).toEqual(models[model]!);
    }
  }
  expect(providerSlice(lines("acme"), "missing")).toEqual({ acme: { id: "acme", name: ODD.acme!.name!, models: {} } });
  expect(providerSlice(lines("bare"), "x")).toEqual({ bare: { models: {} } });
});

test("the embedded catalog's slices resolve every model as the whole embedded catalog does", async () => {
  const whole = embeddedCatalog();
  let checked = 0;
  for (const [provider, { models }] of Object.entries(whole)) {
    for (const id of Object.keys(models)) {
      expect(findModel(await embeddedCatalogFor(`${provider}/${id}`), `${provider}/${id}`)).toEqual(findModel(whole, `${provider}/${id}`)!);
      checked++;
    }
  }
  expect(checked).toBeGreaterThan(1000);
  expect(await embeddedCatalogFor("openai/no-such-model")).toEqual({ openai: { ...whole.openai!, models: {} } });
  // A provider the catalog does not list: the provider the model id names, as findModel resolves it.
  expect(findModel(await embeddedCatalogFor("openai-compatible/deepseek/deepseek-chat"), "openai-compatible/deepseek/deepseek-chat")).toEqual(findModel(whole, "deepseek/deepseek-chat")!);
  expect(await embeddedCatalogFor("openai-compatible/local-model")).toEqual({});
  expect(await embeddedCatalogFor("openai-compatible/nowhere/model")).toEqual({});
  // A listed provider is looked up in its own models only.
  expect(findModel(await embeddedCatalogFor("openrouter/deepseek/no-such"), "openrouter/deepseek/no-such")).toBeUndefined();
  await expect(embeddedCatalogFor("gpt-5")).rejects.toMatchObject({ code: "UNKNOWN_MODEL" });
});
