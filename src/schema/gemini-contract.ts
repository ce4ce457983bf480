/**
 * Gemini `responseJsonSchema`: the JSON Schema keywords it reads, its enum and
 * `$ref` rules, and `propertyOrdering`, checked locally.
 *
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerationConfig.responseJsonSchema)
 * @see https://ai.google.dev/gemini-api/docs/structured-output
 */
import { lintKeywords, type KeywordContract, type Report, type SchemaViolation } from "./contract.ts";
import { memberPath } from "./json-path.ts";
import { findRecursiveRefs } from "./recursive-refs.ts";
import { isPlainObject, type SchemaNode } from "./schema-node.ts";

const LABEL = "gemini responseJsonSchema";

/**
 * The only keywords `responseJsonSchema` supports (`oneOf` is read as `anyOf`),
 * plus the non-standard `propertyOrdering`.
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerationConfig.responseJsonSchema)
 */
export const GEMINI_KEYWORDS: ReadonlySet<string> = new Set([
  "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items", "prefixItems", "minItems", "maxItems",
  "minimum", "maximum", "anyOf", "oneOf", "properties", "additionalProperties", "required", "propertyOrdering",
]);

const HINTS: Record<string, string> = {
  definitions: "rename \"definitions\" to \"$defs\" (and the refs to \"#/$defs/...\")",
  const: "use \"enum\" with one value",
  allOf: "merge the branches into one schema",
  nullable: "use \"type\": [\"<type>\", \"null\"]",
  exclusiveMinimum: "use \"minimum\"",
  exclusiveMaximum: "use \"maximum\"",
};

const CONTRACT: KeywordContract = { label: LABEL, keywords: GEMINI_KEYWORDS, hints: HINTS, allowsOpenSchemas: true, check: checkNode };

/**
 * Every breach of Gemini's `responseJsonSchema` subset in `schema`. Pure.
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerationConfig.responseJsonSchema)
 */
export function lintGemini(schema: SchemaNode): SchemaViolation[] {
  const violations = lintKeywords(schema, CONTRACT);
  for (const recursive of findRecursiveRefs(schema)) {
    if (!recursive.throughOptionalProperty) {
      violations.push({
        path: recursive.path,
        message: `cyclic ${JSON.stringify(recursive.ref)} is only allowed under a property that is not required, in ${LABEL}`,
        hint: "drop the recursive property from \"required\"",
      });
    }
  }
  return violations;
}

/**
 * Enum members are strings or numbers; a sub-schema with `$ref` carries only
 * `$`-prefixed siblings; `propertyOrdering` lists exactly the properties.
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerationConfig.responseJsonSchema)
 */
function checkNode(node: SchemaNode, path: string, report: Report): void {
  if (Array.isArray(node.enum) && node.enum.some((value) => typeof value !== "string" && typeof value !== "number")) {
    report(memberPath(path, "enum"), `enum members must be strings or numbers in ${LABEL}`, "use string values (and map them back in your script)");
  }
  if ("$ref" in node) {
    const siblings = Object.keys(node).filter((key) => !key.startsWith("$"));
    if (siblings.length > 0) report(path, `a schema with "$ref" may carry only "$"-prefixed keywords in ${LABEL} (found ${siblings.map((key) => JSON.stringify(key)).join(", ")})`, "move those keywords into the referenced definition");
  }
  if ("propertyOrdering" in node) {
    const names = isPlainObject(node.properties) ? Object.keys(node.properties) : [];
    const ordering = node.propertyOrdering;
    const valid = Array.isArray(ordering) && ordering.length === names.length && names.every((name) => ordering.includes(name));
    if (!valid) report(memberPath(path, "propertyOrdering"), "\"propertyOrdering\" must list each property exactly once", "remove it: cachet fills it in from the order of \"properties\"");
  }
}
