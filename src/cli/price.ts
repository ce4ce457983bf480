/**
 * `cachet price --model provider/model --usage FILE|- [--prices FILE] [--json]`:
 * prices one raw provider usage object (or a response carrying it), with the
 * model resolved as `run -m` resolves it: the provider's own `usage()` and
 * its catalog id (src/run/model-resolution.ts).
 */
import { defineCommand } from "citty";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

const args = {
  model: { type: "string", alias: "m", required: true, description: "provider/model (models.dev id), e.g. openai/gpt-4o" },
  usage: { type: "string", required: true, description: "File with the provider's raw usage JSON, or - for stdin" },
  prices: { type: "string", description: "models.dev api.json-shaped FILE whose prices override the catalog" },
  partial: { type: "boolean", description: "The usage came from a stream cut before its end: price it as a flagged lower bound" },
  ...jsonArg,
  ...globalArgs,
} as const;

export default defineCommand({
  meta: { name: "price", description: "Price one raw provider usage object" },
  args,
  async run({ args: a }) {
    const { loadConfig } = await import("../config.ts");
    const { loadCatalog } = await import("../meter/catalog.ts");
    const { priceRawUsage, formatPriceTable } = await import("../meter/price-raw-usage.ts");
    const { readTextFile, decodeInput } = await import("../input/read-input.ts");
    const usageText = a.usage === "-" ? decodeInput(await Bun.stdin.bytes(), { label: "stdin", code: "STDIN_INVALID_UTF8" }) : await readTextFile(a.usage, { label: `--usage ${a.usage}`, hint: "give a file with the provider's raw usage JSON, or - for stdin" });
    const pricesText = a.prices === undefined ? undefined : await readTextFile(a.prices, { label: `--prices ${a.prices}`, hint: "give a models.dev api.json-shaped file" });
    const [{ catalog }, config] = await Promise.all([loadCatalog(), loadConfig()]);
    const { loadModelHost, resolveModel } = await import("../run/model-resolution.ts");
    const resolved = resolveModel(await loadModelHost(config), a.model);
    const { output, cost } = priceRawUsage({
      model: a.model,
      catalogRef: resolved.catalogRef,
      read: resolved.usage,
      usageText,
      usageOrigin: a.usage === "-" ? "stdin" : a.usage,
      catalog,
      overrides: config.prices,
      partial: a.partial === true,
      ...(pricesText === undefined ? {} : { pricesText, pricesOrigin: a.prices }),
    });
    stdout().write(a.json ? `${JSON.stringify(output)}\n` : formatPriceTable(cost));
  },
});
