/**
 * `cachet prices update [--from URL|FILE]`: stores a newer api.json-shaped
 * price catalog in the data directory, validated whole and applied
 * atomically; from then on it replaces the embedded catalog.
 */
import { defineCommand } from "citty";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg } from "./_args.ts";

export default defineCommand({
  meta: { name: "prices", description: "Update the price catalog" },
  args: {
    action: { type: "positional", required: true, description: "update" },
    from: { type: "string", description: "URL or FILE of an api.json-shaped catalog (default https://models.dev/api.json)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    if (args.action !== "update") {
      throw new CachetError("UNKNOWN_COMMAND", `unknown prices action "${args.action}"`, { hint: "use `cachet prices update [--from URL|FILE]`" });
    }
    const { updateCatalog, DEFAULT_CATALOG_URL } = await import("../meter/catalog.ts");
    const result = await updateCatalog(args.from ?? DEFAULT_CATALOG_URL);
    if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else process.stderr.write(`price catalog updated: ${result.providers} providers, ${result.models} models (${result.path})\n`);
  },
});
