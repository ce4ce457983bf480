/**
 * Validates a structured answer against the USER's schema (not the wire
 * schema): constraints a provider could not enforce, such as numeric bounds
 * on Anthropic, are still checked here. ajv is loaded on first use so that
 * runs without `--schema` never pay for it.
 */
import { CachetError } from "../errors.ts";
import { canonicalJson } from "../wire/canonical-json.ts";
import { ROOT_PATH, memberPath, pointerToPath } from "./json-path.ts";
import { isPlainObject, subschemas, type SchemaNode } from "./schema-node.ts";

/** Result of {@link validateAnswer}; errors read `$.path: message`. */
export type AnswerValidation = { ok: true } | { ok: false; errors: string[] };

/** One of ajv's errors: `instancePath` is a JSON Pointer into the value checked (an answer, or the schema itself). */
type ValidationError = { instancePath: string; message?: string; params?: Record<string, unknown> };

type Validator = ((value: unknown) => boolean) & { errors?: ValidationError[] | null };

const compiled = new Map<string, Validator>();

/**
 * Checks `value` against `userSchema` (JSON Schema 2020-12 semantics; a
 * `$schema` member is ignored so draft-07 documents with `definitions` work
 * too; formats are checked). Compiled validators are memoized per schema.
 * Async only because the validator library is imported on first use.
 * @throws CachetError SCHEMA_INVALID when `userSchema` is not a valid JSON Schema.
 */
export async function validateAnswer(userSchema: Record<string, unknown>, value: unknown): Promise<AnswerValidation> {
  const validate = await compile(userSchema);
  if (validate(value)) return { ok: true };
  return { ok: false, errors: (validate.errors ?? []).map(describe) };
}

/**
 * Compiles `userSchema` once, to find out early that it is not a JSON Schema.
 * @param source names the schema in the message: its file path, or "inline schema"
 * @throws CachetError SCHEMA_INVALID reading `SOURCE: $.PATH: what is wrong`, PATH the JSON path of the offending
 *   node in the schema (`$.properties.items.type`), or `SOURCE: not a valid JSON Schema: …` when it cannot be found.
 */
export async function compileUserSchema(userSchema: Record<string, unknown>, source: string): Promise<void> {
  await compile(userSchema, source);
}

async function compile(userSchema: Record<string, unknown>, source = "the output schema"): Promise<Validator> {
  const key = canonicalJson(userSchema);
  const cached = compiled.get(key);
  if (cached) return cached;
  const [{ default: Ajv2020 }, formats] = await Promise.all([import("ajv/dist/2020.js"), import("ajv-formats")]);
  const ajv = new Ajv2020({ allErrors: true, strict: false, logger: false });
  const addFormats = (formats as { default: unknown }).default as (ajv: unknown) => void;
  (typeof addFormats === "function" ? addFormats : (formats as unknown as (ajv: unknown) => void))(ajv);
  const { $schema: _ignored, ...schema } = userSchema;
  // Checked apart from compiling: ajv's compile error lists every meta-schema error as `data/…` pointers in one line,
  // where the first error alone, as a JSON path, says which node to fix.
  if (!ajv.validateSchema(schema)) {
    const [first] = (ajv.errors ?? []) as ValidationError[];
    throw new CachetError("SCHEMA_INVALID", first ? `${source}: ${describe(first)}` : `${source}: not a valid JSON Schema`, {
      hint: "fix the value at that path: JSON Schema (2020-12) does not allow it there",
    });
  }
  let validate: Validator;
  try {
    validate = ajv.compile(schema) as Validator;
  } catch (error) {
    const at = compileErrorPath(schema, error);
    throw new CachetError("SCHEMA_INVALID", `${source}: ${at === undefined ? "not a valid JSON Schema" : at}: ${(error as Error).message}`, {
      hint: "fix the schema (check $ref targets and keyword values)",
      cause: error,
    });
  }
  compiled.set(key, validate);
  return validate;
}

/**
 * The JSON path of what a compile error (not a meta-schema error) is about, when it can be found: ajv names a
 * dangling `$ref`'s target and a `pattern`'s regex error, but not where in the schema they are.
 */
function compileErrorPath(schema: SchemaNode, error: unknown): string | undefined {
  const missingRef = (error as { missingRef?: unknown }).missingRef;
  // ajv compiles patterns with the `u` flag (its unicodeRegExp default).
  const badRegex = (pattern: unknown) => error instanceof SyntaxError && typeof pattern === "string" && !isRegex(pattern);
  const visit = (node: unknown, path: string, depth: number): string | undefined => {
    if (!isPlainObject(node) || depth > 64) return undefined;
    if (typeof missingRef === "string" && node.$ref === missingRef) return memberPath(path, "$ref");
    if (badRegex(node.pattern)) return memberPath(path, "pattern");
    const bad = isPlainObject(node.patternProperties) ? Object.keys(node.patternProperties).find(badRegex) : undefined;
    if (bad !== undefined) return memberPath(memberPath(path, "patternProperties"), bad);
    for (const entry of subschemas(node, path)) {
      const found = visit(entry.schema, entry.path, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return visit(schema, ROOT_PATH, 0);
}

function isRegex(pattern: string): boolean {
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}

/** `$.PATH: message`, with the extra property or the allowed values ajv names apart from its message. */
function describe(error: ValidationError): string {
  const params = isPlainObject(error.params) ? error.params : {};
  const extra =
    typeof params.additionalProperty === "string"
      ? ` (${JSON.stringify(params.additionalProperty)})`
      : Array.isArray(params.allowedValues)
        ? ` (${params.allowedValues.map((value) => JSON.stringify(value)).join(", ")})`
        : "";
  return `${pointerToPath(error.instancePath)}: ${error.message ?? "is invalid"}${extra}`;
}
