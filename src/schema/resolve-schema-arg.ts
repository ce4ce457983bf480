/**
 * `--schema FILE|JSON`: reads the user's output schema from a file or from
 * inline JSON, and names it for providers that need a name.
 */
import type { OutputSchema } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { readTextFile } from "../input/read-input.ts";
import { isInlineSchema } from "./inline-schema.ts";
import type { SchemaTarget } from "./contract.ts";
import { parseJsonDocument } from "./json-error-position.ts";
import { isPlainObject } from "./schema-node.ts";
import { compileUserSchema } from "./validate-answer.ts";
import { INLINE_SCHEMA, SchemaContractError, checkSchema } from "./wire-schema.ts";

/**
 * Names providers accept for a schema (OpenAI `json_schema.name`) or a strict tool (Anthropic).
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools
 */
export const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Options of {@link resolveSchemaArg}. */
export interface ResolveSchemaOptions {
  /** Also check the provider contract now, before anything is sent. */
  target?: SchemaTarget;
}

/**
 * Reads `arg`: inline JSON when it starts with `{` (after blanks), else a file
 * path. The name comes from the schema alone ({@link outputSchemaName}), never
 * from how it was given (file name, descriptor, inline), so the same schema is
 * the same stable prefix, and the same name on the wire, however it is passed.
 * @throws CachetError SCHEMA_INVALID for an unreadable file, a JSON syntax error
 *   (with file, line and column), a non-object document, or an invalid JSON Schema
 *   (with file, or "inline schema", and the JSON path of the offending node).
 * @throws SchemaContractError (SCHEMA_CONTRACT) when `options.target` is given
 *   and the schema breaks that provider's contract.
 */
export async function resolveSchemaArg(arg: string, options: ResolveSchemaOptions = {}): Promise<OutputSchema> {
  const source = schemaSource(arg);
  const inline = source === INLINE_SCHEMA;
  let text = arg;
  if (!inline) {
    text = await readTextFile(arg, {
      label: `schema file ${arg}`,
      code: "SCHEMA_INVALID",
      hint: "pass a readable JSON Schema file, or the schema itself as inline JSON starting with {",
    });
  }
  const schema = parseSchemaText(text, source);
  await compileUserSchema(schema, source);
  const named: OutputSchema = { name: outputSchemaName(schema), schema };
  if (options.target !== undefined) {
    const { violations } = checkSchema(options.target, schema);
    if (violations.length > 0) throw new SchemaContractError(options.target, violations, source);
  }
  return named;
}

/** How messages name the schema of `--schema ARG`: the file path, or "inline schema" for inline JSON. */
export function schemaSource(arg: string): string {
  return isInlineSchema(arg) ? INLINE_SCHEMA : arg;
}

/**
 * `error` naming where the schema came from when it is a SCHEMA_CONTRACT
 * error raised without knowing it (an adapter rendering the request):
 * `FILE: $.PATH: message`, and the hint's `cachet schema check` names FILE.
 * Any other error is returned as it is.
 * @param arg the `--schema` value the request's schema was read from
 */
export function withSchemaSource(error: unknown, arg: string): unknown {
  if (!(error instanceof SchemaContractError) || error.source !== undefined) return error;
  return new SchemaContractError(error.target, error.violations, schemaSource(arg));
}

/**
 * Parses a schema document.
 * @throws CachetError SCHEMA_INVALID naming `source` and the line:column of a syntax error.
 */
export function parseSchemaText(text: string, source: string): Record<string, unknown> {
  const value = parseJsonDocument(text, source, "SCHEMA_INVALID");
  if (!isPlainObject(value)) {
    throw new CachetError("SCHEMA_INVALID", `${source}: a JSON Schema must be a JSON object, found ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`, {
      hint: "write the schema as an object, e.g. {\"type\":\"object\",\"properties\":{...}}",
    });
  }
  return value;
}

/**
 * The name sent for `schema` where the wire needs one (OpenAI `json_schema.name`): its string `title`
 * made into a valid name ({@link schemaName}), else "output".
 */
export function outputSchemaName(schema: Record<string, unknown>): string {
  return schemaName(typeof schema.title === "string" ? schema.title : undefined);
}

/** `raw` made into a valid schema name: invalid characters become `_`, cut to 64. */
export function schemaName(raw: string | undefined): string {
  const cleaned = (raw ?? "").replace(/[^a-zA-Z0-9_-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 64);
  return cleaned === "" ? "output" : cleaned;
}
