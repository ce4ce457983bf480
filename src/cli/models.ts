/**
 * `cachet models [--provider P] [--json]`: lists the catalog's models with
 * prices (USD per million tokens), long-context tiers and limits.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

export default defineCommand({
  meta: { name: "models", description: "List models with prices, tiers and limits" },
  args: {
    provider: { type: "string", alias: "p", description: "Only this provider (e.g. anthropic, openai, google)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const { loadCatalog, embeddedCatalog } = await import("../meter/catalog.ts");
    const { listModels, formatModels, missingModels } = await import("../meter/model-list.ts");
    // Read whatever the flags, as a turn reads it: `--provider` takes the providers its plugins register, and whether
    // a broken config is refused must not depend on a flag.
    const config = await (await import("../config.ts")).loadConfig();
    const { catalog } = await loadCatalog();
    let catalogId = args.provider;
    if (args.provider !== undefined) {
      // A provider `run -m` accepts lists its catalog id's models under its own id (openai-responses → openai).
      const { loadModelHost, catalogIdOf } = await import("../run/model-resolution.ts");
      const host = await loadModelHost(config);
      if (host.providers.has(args.provider)) catalogId = catalogIdOf(host.provider(args.provider));
      if (!Object.hasOwn(catalog, catalogId!) && host.providers.has(args.provider)) {
        const missing = missingModels(args.provider, catalogId!, catalog, embeddedCatalog());
        throw new CachetError("UNKNOWN_PROVIDER", missing.message, { hint: missing.hint });
      }
      if (!Object.hasOwn(catalog, catalogId!)) {
        throw new CachetError("UNKNOWN_PROVIDER", `the price catalog has no provider "${args.provider}"`, {
          hint: `known providers: ${[...new Set([...host.providers.keys(), ...Object.keys(catalog)])].sort().join(", ")}`,
        });
      }
    }
    const rows = listModels(catalog, catalogId, args.provider);
    if (args.json) stdout().write(rows.map((r) => JSON.stringify(r)).join("\n") + (rows.length ? "\n" : ""));
    else stdout().write(formatModels(rows));
  },
});
