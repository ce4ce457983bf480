/**
 * `cachet models [--provider P] [--json]`: lists the catalog's models with
 * prices (USD per million tokens), long-context tiers and limits.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";

export default defineCommand({
  meta: { name: "models", description: "List models with prices, tiers and limits" },
  args: {
    provider: { type: "string", alias: "p", description: "Only this provider (e.g. anthropic, openai, google)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const { loadCatalog } = await import("../meter/catalog.ts");
    const { listModels, formatModels } = await import("../meter/model-list.ts");
    const { catalog } = await loadCatalog();
    if (args.provider !== undefined && !Object.hasOwn(catalog, args.provider)) {
      throw new CachetError("UNKNOWN_PROVIDER", `the price catalog has no provider "${args.provider}"`, {
        hint: `known providers: ${Object.keys(catalog).sort().join(", ")}`,
      });
    }
    const rows = listModels(catalog, args.provider);
    if (args.json) process.stdout.write(rows.map((r) => JSON.stringify(r)).join("\n") + (rows.length ? "\n" : ""));
    else process.stdout.write(formatModels(rows));
  },
});
