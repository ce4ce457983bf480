/**
 * `cachet schema check FILE --provider P [--json]`: prints the wire schema
 * cachet would send to P for the schema in FILE (or inline JSON), or every
 * contract violation with its JSON path and exits non-zero.
 */
import { defineCommand } from "citty";
import { globalArgs, jsonArg } from "./_args.ts";

export default defineCommand({
  meta: { name: "schema", description: "Check a JSON schema against a provider's structured-output contract" },
  args: {
    action: { type: "positional", required: true, description: "check" },
    file: { type: "positional", required: true, description: "Schema file, or inline JSON starting with {" },
    provider: { type: "string", required: true, description: "openai, anthropic or gemini (or a model id such as openai/gpt-5)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const { CachetError } = await import("../errors.ts");
    if (args.action !== "check") {
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${args.action}" for \`cachet schema\``, { hint: "use `cachet schema check FILE --provider P`" });
    }
    const { resolveSchemaArg, checkSchema } = await import("../schema/index.ts");
    const { formatSchemaCheck, schemaTargetOf } = await import("../schema/check-report.ts");
    const target = schemaTargetOf(args.provider);
    const { schema } = await resolveSchemaArg(args.file);
    const check = checkSchema(target, schema);
    process.stdout.write(formatSchemaCheck(target, check, args.json === true));
    if (check.wire === undefined) {
      const count = check.violations.length;
      throw new CachetError("SCHEMA_CONTRACT", `${count} ${count === 1 ? "violation" : "violations"} of the ${target} structured-output contract`, { hint: "fix the paths listed on stdout" });
    }
  },
});
