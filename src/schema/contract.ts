/**
 * The shape of a provider's structured-output contract and the engine that
 * lints a schema against one: every keyword outside the provider's subset is a
 * violation naming its JSON path; the provider's own node checks and limits run
 * beside it. The rules themselves live in one module per provider.
 */
import { ROOT_PATH, memberPath } from "./json-path.ts";
import { isPlainObject, requiredOf, resolveRef, subschemas, type SchemaNode } from "./schema-node.ts";

/** Providers whose structured-output contract cachet knows. */
export type SchemaTarget = "openai" | "anthropic" | "gemini";

/** Every {@link SchemaTarget}, for argument checks and tests. */
export const SCHEMA_TARGETS: readonly SchemaTarget[] = ["openai", "anthropic", "gemini"];

/** One breach of a provider contract. */
export interface SchemaViolation {
  /** JSON path of the offending node, e.g. `$.properties.price.anyOf[0]`. */
  path: string;
  /** What is wrong, without the path, e.g. `"not" is not supported by openai strict mode`. */
  message: string;
  /** What to do about it, one line. */
  hint?: string;
}

/** A provider's keyword subset and its extra checks. */
export interface KeywordContract {
  /** How messages name the contract, e.g. "openai strict mode". */
  label: string;
  /** Keywords the provider accepts; any other keyword is a violation. */
  keywords: ReadonlySet<string>;
  /** What to do instead of a rejected keyword, by keyword. */
  hints: Readonly<Record<string, string>>;
  /** Provider checks of one node whose keywords are all allowed. */
  check?: (node: SchemaNode, path: string, report: Report, root: SchemaNode) => void;
  /** True when boolean schemas (`true`/`false`) and `{}` may stand for a sub-schema. */
  allowsOpenSchemas: boolean;
}

/** Adds a violation. */
export type Report = (path: string, message: string, hint?: string) => void;

/** Keywords every provider accepts because they only annotate (stripped or harmless). */
const ANNOTATIONS = new Set(["title", "description"]);

/** JSON Schema's type names. */
const JSON_TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);

/**
 * Lints `root` against `contract`: rejected keywords (not descended into),
 * malformed `type`, `required` names that are not properties, external or
 * dangling `$ref`, then the contract's own node checks. Pure.
 */
export function lintKeywords(root: SchemaNode, contract: KeywordContract): SchemaViolation[] {
  const violations: SchemaViolation[] = [];
  const report: Report = (path, message, hint) => violations.push(hint === undefined ? { path, message } : { path, message, hint });
  const visit = (node: unknown, path: string): void => {
    if (!isPlainObject(node)) {
      if (!(typeof node === "boolean" && contract.allowsOpenSchemas)) {
        report(path, `a ${typeof node === "boolean" ? `boolean schema (${node})` : "non-object schema"} is not supported by ${contract.label}`, "write an object schema with a \"type\"");
      }
      return;
    }
    const keys = Object.keys(node);
    if (!contract.allowsOpenSchemas && keys.every((key) => ANNOTATIONS.has(key))) {
      report(path, `an empty schema {} accepts any value, which ${contract.label} does not support`, "give it a \"type\" (or an \"anyOf\" of typed schemas)");
      return;
    }
    const rejected = new Set<string>();
    for (const key of keys) {
      if (contract.keywords.has(key)) continue;
      rejected.add(key);
      report(path, `${JSON.stringify(key)} is not supported by ${contract.label}`, contract.hints[key] ?? `remove ${JSON.stringify(key)} (state the constraint in "description" if the model should know it)`);
    }
    checkCommon(node, path, report, root);
    contract.check?.(node, path, report, root);
    for (const entry of subschemas(node, path)) {
      if (!rejected.has(entry.keyword)) visit(entry.schema, entry.path);
    }
  };
  visit(root, ROOT_PATH);
  return violations;
}

function checkCommon(node: SchemaNode, path: string, report: Report, root: SchemaNode): void {
  if ("type" in node) {
    const types = Array.isArray(node.type) ? node.type : [node.type];
    for (const type of types) {
      if (typeof type !== "string" || !JSON_TYPES.has(type)) report(memberPath(path, "type"), `${JSON.stringify(type)} is not a JSON Schema type`, `use one of ${[...JSON_TYPES].join(", ")}`);
    }
  }
  if ("required" in node) {
    const properties = isPlainObject(node.properties) ? node.properties : {};
    if (!Array.isArray(node.required)) report(memberPath(path, "required"), "\"required\" must be an array of property names");
    for (const name of requiredOf(node)) {
      if (!Object.hasOwn(properties, name)) report(memberPath(path, "required"), `"required" names ${JSON.stringify(name)}, which is not in "properties"`, `declare ${JSON.stringify(name)} in "properties" or drop it from "required"`);
    }
  }
  if ("$ref" in node) {
    const ref = node.$ref;
    if (typeof ref !== "string") report(memberPath(path, "$ref"), "\"$ref\" must be a string");
    else if (!ref.startsWith("#")) report(memberPath(path, "$ref"), `external $ref ${JSON.stringify(ref)} is not supported; only refs inside the schema ("#/$defs/...")`, "copy the referenced schema into \"$defs\" and point the $ref at it");
    else if (resolveRef(root, ref) === undefined) report(memberPath(path, "$ref"), `$ref ${JSON.stringify(ref)} points at nothing in this schema`, "fix the pointer or add the definition to \"$defs\"");
  }
  if ("enum" in node && (!Array.isArray(node.enum) || node.enum.length === 0)) report(memberPath(path, "enum"), "\"enum\" must be a non-empty array");
}
