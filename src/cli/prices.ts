/**
 * `cachet prices update [--from URL|FILE] [--replace]`: merges a newer
 * api.json-shaped price catalog over the one in force (or, with
 * `--replace`, stores it whole), validated whole and applied atomically, and
 * lists the prices and limits that changed. `cachet prices reset`: back to the
 * catalog embedded in the binary.
 */
import { defineCommand } from "citty";
import { edges } from "../edges.ts";
import { CachetError } from "../errors.ts";
import { globalArgs, jsonArg, refuseMisplacedFlags } from "./_args.ts";
import { stdout } from "../stdout.ts";

/** The words of the ACTION positional (`cachet help prices ACTION` checks them too). */
export const actions = ["update", "reset"] as const;

export default defineCommand({
  meta: { name: "prices", description: "Update (merge or replace) or reset the price catalog" },
  args: {
    action: { type: "positional", required: true, description: "update or reset" },
    from: { type: "string", description: "URL or FILE of an api.json-shaped catalog (default https://models.dev/api.json)" },
    replace: { type: "boolean", description: "Store the file whole instead of merging it over the catalog in force" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const { updateCatalog, resetCatalog, DEFAULT_CATALOG_URL } = await import("../meter/catalog.ts");
    if (args.action === "reset" || args.action === "update") refuseMisplacedFlags(`prices ${args.action}`, args, { from: ["prices update"], replace: ["prices update"] });
    if (args.action === "reset") {
      const removed = resetCatalog();
      if (args.json) stdout().write(`${JSON.stringify({ reset: removed })}\n`);
      else edges().writeStderr(removed ? "price catalog reset: the built-in catalog is in force\n" : "no stored price catalog: the built-in catalog is already in force\n");
      return;
    }
    if (args.action !== "update") {
      throw new CachetError("UNKNOWN_COMMAND", `unknown prices action "${args.action}"`, { hint: "use `cachet prices update [--from URL|FILE] [--replace]` or `cachet prices reset`" });
    }
    const result = await updateCatalog(args.from ?? DEFAULT_CATALOG_URL, undefined, { replace: args.replace === true });
    if (args.json) {
      stdout().write(`${JSON.stringify(result)}\n`);
      return;
    }
    const show = (v: unknown): string => (v === null ? "-" : typeof v === "object" ? JSON.stringify(v) : String(v));
    for (const c of result.changes) {
      const fields = Object.entries(c.fields).map(([k, f]) => (c.kind === "added" ? `${k} ${show(f.after)}` : `${k} ${show(f.before)} → ${show(f.after)}`));
      stdout().write(`${{ added: "+", changed: "~", removed: "-" }[c.kind]} ${c.model}${fields.length ? `  ${fields.join(", ")}` : ""}\n`);
    }
    for (const f of result.corrections) edges().writeStderr(`corrected ${f.model} ${f.table}.${f.price} ${f.found} → ${f.expected}: ${f.reason}\n`);
    const counts = (kind: string): number => result.changes.filter((c) => c.kind === kind).length;
    edges().writeStderr(
      `price catalog ${result.mode === "merge" ? "merged" : "replaced"}: ${result.read} models read; ${counts("added")} added, ${counts("changed")} changed${result.mode === "replace" ? `, ${counts("removed")} removed` : ""}; ${result.models} models of ${result.providers} providers in force (${result.path})\n`,
    );
  },
});
