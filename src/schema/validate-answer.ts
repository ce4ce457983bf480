/**
 * Validates a structured answer against the USER's schema (not the wire
 * schema): constraints a provider could not enforce, such as numeric bounds
 * on Anthropic, are still checked here. ajv is loaded on first use so that
 * runs without `--schema` never pay for it.
 */
import { CachetError } from "../errors.ts";
import { canonicalJson } from "../wire/canonical-json.ts";
import { pointerToPath } from "./json-path.ts";
import { isPlainObject } from "./schema-node.ts";

/** Result of {@link validateAnswer}; errors read `$.path: message`. */
export type AnswerValidation = { ok: true } | { ok: false; errors: string[] };

type Validator = ((value: unknown) => boolean) & { errors?: { instancePath: string; message?: string; params?: Record<string, unknown> }[] | null };

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
 * @throws CachetError SCHEMA_INVALID naming what the validator rejected.
 */
export async function compileUserSchema(userSchema: Record<string, unknown>): Promise<void> {
  await compile(userSchema);
}

async function compile(userSchema: Record<string, unknown>): Promise<Validator> {
  const key = canonicalJson(userSchema);
  const cached = compiled.get(key);
  if (cached) return cached;
  const [{ default: Ajv2020 }, formats] = await Promise.all([import("ajv/dist/2020.js"), import("ajv-formats")]);
  const ajv = new Ajv2020({ allErrors: true, strict: false, logger: false });
  const addFormats = (formats as { default: unknown }).default as (ajv: unknown) => void;
  (typeof addFormats === "function" ? addFormats : (formats as unknown as (ajv: unknown) => void))(ajv);
  const { $schema: _ignored, ...schema } = userSchema;
  let validate: Validator;
  try {
    validate = ajv.compile(schema) as Validator;
  } catch (error) {
    throw new CachetError("SCHEMA_INVALID", `the output schema is not a valid JSON Schema: ${(error as Error).message}`, {
      hint: "fix the schema (check $ref targets and keyword values)",
      cause: error,
    });
  }
  compiled.set(key, validate);
  return validate;
}

function describe(error: { instancePath: string; message?: string; params?: Record<string, unknown> }): string {
  const extra = isPlainObject(error.params) && typeof error.params.additionalProperty === "string" ? ` (${JSON.stringify(error.params.additionalProperty)})` : "";
  return `${pointerToPath(error.instancePath)}: ${error.message ?? "is invalid"}${extra}`;
}
