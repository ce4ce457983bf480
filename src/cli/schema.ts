/**
 * `cachet schema check FILE --provider P [--json]`: prints the wire schema
 * cachet would send to P for the schema in FILE (or inline JSON), or every
 * contract violation with its JSON path and exits non-zero.
 */
import { defineCommand } from "citty";
import type { Config } from "../config.ts";
import { globalArgs, jsonArg } from "./_args.ts";
import { stdout } from "../stdout.ts";

/** The words of the ACTION positional (`cachet help schema ACTION` checks them too). */
export const actions = ["check"] as const;

export default defineCommand({
  meta: { name: "schema", description: "Check a JSON schema against a provider's structured-output contract" },
  args: {
    action: { type: "positional", required: true, description: "check" },
    file: { type: "positional", required: true, description: "Schema file, or inline JSON starting with {" },
    provider: { type: "string", required: true, description: "openai, anthropic or gemini, or any provider or provider/model `run -m` accepts (e.g. deepseek/deepseek-chat)" },
    ...jsonArg,
    ...globalArgs,
  },
  async run({ args }) {
    const { CachetError } = await import("../errors.ts");
    if (args.action !== "check") {
      throw new CachetError("UNKNOWN_COMMAND", `unknown action "${args.action}" for \`cachet schema\``, { hint: "use `cachet schema check FILE --provider P`" });
    }
    const { resolveSchemaArg, checkSchema, schemaSource } = await import("../schema/index.ts");
    const { formatSchemaCheck } = await import("../schema/check-report.ts");
    // Read whatever --provider names, as a turn reads it: whether a broken config is refused must not depend on a flag.
    const config = await (await import("../config.ts")).loadConfig();
    const target = await targetOf(args.provider, config);
    const { schema } = await resolveSchemaArg(args.file);
    const check = checkSchema(target, schema);
    stdout().write(formatSchemaCheck(target, check, args.json === true));
    if (check.wire === undefined) {
      const count = check.violations.length;
      throw new CachetError("SCHEMA_CONTRACT", `${schemaSource(args.file)}: ${count} ${count === 1 ? "violation" : "violations"} of the ${target} structured-output contract`, { hint: "fix the paths listed on stdout" });
    }
  },
});

/**
 * The contract `run --schema` would check for `--provider`: a contract name
 * (`openai`, `anthropic`, `gemini`), or any provider or `provider/model` the
 * plugins of `config` register, by its protocol (src/run/model-resolution.ts).
 */
async function targetOf(provider: string, config: Config) {
  const { SCHEMA_TARGETS } = await import("../schema/contract.ts");
  if ((SCHEMA_TARGETS as readonly string[]).includes(provider)) return provider as (typeof SCHEMA_TARGETS)[number];
  const { loadModelHost, resolveModel, schemaTargetOfProtocol } = await import("../run/model-resolution.ts");
  const host = await loadModelHost(config);
  const spec = provider.includes("/") ? resolveModel(host, provider).spec : host.provider(provider);
  return schemaTargetOfProtocol(spec.protocol);
}
