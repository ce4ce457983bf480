import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildCatalog, CATALOG_SOURCE } from "../../build/catalog.ts";
import { supplementCatalog } from "../../build/genai-prices.ts";
import { parseConfig } from "../config.ts";
import { statePaths } from "../paths.ts";
import { checkAnthropicCachePrices } from "./cache-price-check.ts";
import { embeddedCatalog, findModel, loadCatalog, modelHome, nearModelId, resetCatalog, storedCatalogFile, updateCatalog } from "./catalog.ts";
import { formatModels, listModels } from "./model-list.ts";

function home() {
  return statePaths({ CACHET_HOME: mkdtempSync(join(tmpdir(), "cachet-meter-")) });
}

describe("findModel", () => {
  const catalog = { deepseek: { models: { "deepseek-chat": { cost: { input: 0.28, output: 0.42 } } } }, openrouter: { models: { "x/y": { cost: { input: 1, output: 2 } } } } };
  test("a provider with no list of its own resolves a model id that names a catalog model, and nothing else", () => {
    expect(findModel(catalog as never, "openai-compatible/deepseek/deepseek-chat")?.cost?.input).toBe(0.28);
    expect(findModel(catalog as never, "openai-compatible/deepseek/no-such")).toBeUndefined();
    expect(findModel(catalog as never, "openai-compatible/local-model")).toBeUndefined();
    // A provider the catalog lists is looked up in its own list only.
    expect(findModel(catalog as never, "openrouter/deepseek/deepseek-chat")).toBeUndefined();
  });
});

describe("generated catalog", () => {
  const built = buildCatalog(CATALOG_SOURCE);
  test("api.json shape: provider → models, ids with slashes from subfolders, tiers normalized", () => {
    expect(Object.keys(built).sort()).toEqual(["alibaba", "anthropic", "deepseek", "google", "moonshotai", "openai", "openrouter"]);
    expect(findModel(built as never, "openrouter/anthropic/claude-sonnet-4.5")?.cost?.input).toBe(3);
    expect(findModel(built as never, "google/gemini-2.5-pro")?.cost?.tiers).toEqual([{ tier: { type: "context", size: 200000 }, input: 2.5, output: 15, cache_read: 0.25 }]);
  });
  test("base_model metadata is merged, cost is not inherited, benchmarks are dropped", () => {
    const model = findModel(built as never, "google/gemini-2.5-pro")!;
    expect(model.name).toBe("Gemini 2.5 Pro");
    expect(model.limit?.context).toBe(1048576);
    expect("benchmarks" in model).toBe(false);
  });
  test("the embedded snapshot is the generated one (models.dev, then genai-prices where it lacks data, then the Anthropic cache-price check)", () => {
    const generated = supplementCatalog(structuredClone(built));
    checkAnthropicCachePrices(generated);
    expect(embeddedCatalog()).toEqual(generated as never);
  });
});

describe("prices update", () => {
  test("a valid catalog is stored whole and then loaded instead of the embedded one", async () => {
    const paths = home();
    const file = join(paths.data, "new.json");
    writeFileSync(file, JSON.stringify({ acme: { models: { m1: { cost: { input: 1, output: 2 } } } } }));
    const result = await updateCatalog(file, paths, { replace: true });
    expect(result).toMatchObject({ path: storedCatalogFile(paths), mode: "replace", providers: 1, models: 1, read: 1 });
    expect(result.changes.find((c) => c.model === "acme/m1")).toEqual({ model: "acme/m1", kind: "added", fields: { input: { before: null, after: 1 }, output: { before: null, after: 2 } } });
    expect(result.changes.filter((c) => c.kind === "removed").length).toBe(Object.values(embeddedCatalog()).reduce((n, p) => n + Object.keys(p.models).length, 0));
    const loaded = await loadCatalog(paths);
    expect(loaded.source).toBe("updated");
    expect(findModel(loaded.catalog, "acme/m1")?.cost?.output).toBe(2);
  });

  test("an invalid catalog is refused and the stored one is left as it was", async () => {
    const paths = home();
    const good = join(paths.data, "good.json");
    writeFileSync(good, JSON.stringify({ acme: { models: { m1: { cost: { input: 1, output: 2 } } } } }));
    await updateCatalog(good, paths);
    const before = readFileSync(storedCatalogFile(paths), "utf8");
    const bad = join(paths.data, "bad.json");
    writeFileSync(bad, JSON.stringify({ acme: { models: { m1: { cost: { input: -1 } } } } }));
    await expect(updateCatalog(bad, paths)).rejects.toThrow(/invalid price catalog .*bad.json at "acme.models.m1.cost.input"/);
    writeFileSync(bad, "{truncated");
    await expect(updateCatalog(bad, paths)).rejects.toThrow(/malformed JSON/);
    expect(readFileSync(storedCatalogFile(paths), "utf8")).toBe(before);
  });

  test("--from goes through the shared reader: a BOM is dropped; a directory, a missing path and invalid UTF-8 are named (exit 3), not raw runtime errors", async () => {
    const paths = home();
    const bom = join(paths.data, "bom.json");
    writeFileSync(bom, `\uFEFF${JSON.stringify({ acme: { models: { m1: { cost: { input: 1, output: 2 } } } } })}`);
    await updateCatalog(bom, paths);
    expect(findModel((await loadCatalog(paths)).catalog, "acme/m1")?.cost?.output).toBe(2);
    await expect(updateCatalog(paths.data, paths)).rejects.toMatchObject({ exitCode: 3, message: `price catalog ${paths.data}: is a directory, not a file` });
    await expect(updateCatalog(join(paths.data, "none.json"), paths)).rejects.toMatchObject({ exitCode: 3, message: `price catalog ${join(paths.data, "none.json")}: no such file` });
    const latin1 = join(paths.data, "latin1.json");
    writeFileSync(latin1, Buffer.from([0x7b, 0xe9, 0x7d]));
    await expect(updateCatalog(latin1, paths)).rejects.toThrow(/latin1\.json is not valid UTF-8: invalid byte 0xe9 at offset 1/);
  });

  test("by default a file is merged: its models replace the same models, every other model stays; the changes are listed", async () => {
    const paths = home();
    const file = join(paths.data, "one.json");
    const gpt5 = findModel(embeddedCatalog(), "openai/gpt-5")!;
    writeFileSync(file, JSON.stringify({ openai: { models: { "gpt-5": { ...gpt5, cost: { ...gpt5.cost, input: 9 } }, "gpt-9": { cost: { input: 1, output: 2 } } } } }));
    const result = await updateCatalog(file, paths);
    expect(result.mode).toBe("merge");
    expect(result.read).toBe(2);
    expect(result.changes).toEqual([
      { model: "openai/gpt-5", kind: "changed", fields: { input: { before: gpt5.cost!.input, after: 9 } } },
      { model: "openai/gpt-9", kind: "added", fields: { input: { before: null, after: 1 }, output: { before: null, after: 2 } } },
    ]);
    const { catalog } = await loadCatalog(paths);
    expect(findModel(catalog, "anthropic/claude-sonnet-4-6")?.cost).toEqual(findModel(embeddedCatalog(), "anthropic/claude-sonnet-4-6")!.cost!);
    expect(result.models).toBe(Object.values(embeddedCatalog()).reduce((n, p) => n + Object.keys(p.models).length, 0) + 1);
    expect(resetCatalog(paths)).toBe(true);
    expect((await loadCatalog(paths)).source).toBe("embedded");
    expect(resetCatalog(paths)).toBe(false);
  });

  test("an update's Anthropic cache price that contradicts the documented multiplier is stored corrected and reported", async () => {
    const paths = home();
    const file = join(paths.data, "wrong.json");
    // models.dev's own figures for Claude 3 Sonnet: a $3 model whose 5-minute write was given as 0.3 (the read's price).
    writeFileSync(file, JSON.stringify({ anthropic: { models: { "claude-3-sonnet-20240229": { cost: { input: 3, output: 15, cache_read: 0.3, cache_write: 0.3 } } } } }));
    const result = await updateCatalog(file, paths);
    expect(result.corrections.map((f) => [f.model, f.table, f.price, f.found, f.expected])).toEqual([["anthropic/claude-3-sonnet-20240229", "cost", "cache_write", 0.3, 3.75]]);
    const { catalog } = await loadCatalog(paths);
    expect(findModel(catalog, "anthropic/claude-3-sonnet-20240229")?.cost).toMatchObject({ input: 3, cache_read: 0.3, cache_write: 3.75 });
  });

  test("without an update the embedded catalog is used", async () => {
    const paths = home();
    const loaded = await loadCatalog(paths);
    expect(loaded.source).toBe("embedded");
    expect(existsSync(storedCatalogFile(paths))).toBe(false);
  });
});

describe("price overrides in config", () => {
  test("a valid override is accepted", () => {
    expect(parseConfig({ prices: { "anthropic/claude-x": { input: 3, cache_write_1h: 6 } } }, "config.toml").prices).toEqual({ "anthropic/claude-x": { input: 3, cache_write_1h: 6 } });
  });
  test("an unknown key such as a nested cache table is an error naming the key", () => {
    expect(() => parseConfig({ prices: { "anthropic/claude-x": { input: 3, cache: { read: 0.3 } } } }, "config.toml")).toThrow(/unknown config key "prices.anthropic\/claude-x.cache"/);
  });
});

describe("models listing", () => {
  test("rows with prices, tiers and limits; text table", () => {
    const rows = listModels(embeddedCatalog(), "google");
    const pro = rows.find((r) => r.id === "google/gemini-2.5-pro")!;
    expect(pro).toMatchObject({ input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: null, context: 1048576 });
    expect(pro.tiers).toEqual([{ size: 200000, input: 2.5, output: 15, cacheRead: 0.25, cacheWrite: null }]);
    expect(rows.every((r) => r.id.startsWith("google/"))).toBe(true);
    expect(pro.maxOutput).toBe(65536);
    expect(formatModels([pro])).toBe(
      [
        "model                  in $/M  out $/M  read $/M  write $/M  context  max out  tiers",
        "google/gemini-2.5-pro    1.25       10     0.125          -  1048576    65536  >200000: 2.5/15",
        "",
      ].join("\n"),
    );
  });
});

test("nearModelId: a listed id of the same provider a typo away, else none", () => {
  const catalog = embeddedCatalog();
  expect(nearModelId(catalog, "anthropic/claude-sonet-4-6")).toBe("anthropic/claude-sonnet-4-6");
  expect(nearModelId(catalog, "openai/gtp-4o-mini")).toBe("openai/gpt-4o-mini");
  expect(nearModelId(catalog, "anthropic/totally-new-model")).toBeUndefined();
  // Only the model's own provider is searched: no catalog of its own, no suggestion.
  expect(nearModelId(catalog, "no-such-provider/claude-sonet-4-6")).toBeUndefined();
});

test("modelHome: the one provider listing the model (else one id a typo away); none when several or none do", () => {
  const catalog = {
    anthropic: { models: { "claude-sonnet-4-6": {}, "claude-opus-4-6": {} } },
    google: { models: { "gemini-2.5-flash": {} } },
    openai: { models: { "gpt-4o": {}, shared: {} } },
    xai: { models: { shared: {}, "grok-4": {} } },
  };
  const all = ["anthropic", "google", "openai", "xai", "not-in-catalog"];
  expect(modelHome(catalog as never, "claude-sonnet-4-6", all)).toBe("anthropic/claude-sonnet-4-6");
  expect(modelHome(catalog as never, "gemini-2.5-flash", all)).toBe("google/gemini-2.5-flash");
  expect(modelHome(catalog as never, "claude-sonet-4-6", all)).toBe("anthropic/claude-sonnet-4-6");
  // Listed by two providers, exactly or a typo away: no guess.
  expect(modelHome(catalog as never, "shared", all)).toBeUndefined();
  expect(modelHome(catalog as never, "sharet", all)).toBeUndefined();
  expect(modelHome(catalog as never, "totally-new-model", all)).toBeUndefined();
  // Only the providers given are searched.
  expect(modelHome(catalog as never, "shared", ["openai"])).toBe("openai/shared");
  expect(modelHome(catalog as never, "gemini-2.5-flash", ["anthropic"])).toBeUndefined();
});
