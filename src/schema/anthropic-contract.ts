/**
 * Anthropic structured outputs (`output_config.format` JSON outputs and
 * `strict: true` tools): the supported JSON Schema subset and the per-request
 * limits, checked locally.
 *
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use
 */
import { lintKeywords, type KeywordContract, type Report, type SchemaViolation } from "./contract.ts";
import { ROOT_PATH, memberPath } from "./json-path.ts";
import { findRecursiveRefs } from "./recursive-refs.ts";
import { isObjectNode, isPlainObject, requiredOf, subschemas, typesOf, type SchemaNode } from "./schema-node.ts";

const LABEL = "anthropic structured outputs";

/**
 * Limits per request, across all strict schemas of the request.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */
export const ANTHROPIC_LIMITS = {
  /** Properties not listed in their object's `required`. */
  optionalProperties: 24,
  /** Sub-schemas that are unions (`anyOf` or a `type` array). */
  unionParameters: 16,
  /** Strict tools in one request. */
  strictTools: 20,
} as const;

/**
 * String formats Anthropic accepts.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */
export const ANTHROPIC_FORMATS: ReadonlySet<string> = new Set(["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"]);

/**
 * Keywords Anthropic accepts: basic types, primitive `enum`, `const`, `anyOf`,
 * `allOf` (not with `$ref`), internal `$ref`/`$defs`/`definitions`, `default`,
 * `required`, `additionalProperties: false`, `format`, `minItems` 0 or 1,
 * simple `pattern`. Numeric and string-length constraints and other array
 * constraints are refused.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */
export const ANTHROPIC_KEYWORDS: ReadonlySet<string> = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions",
  "default", "format", "minItems", "pattern", "title", "description",
]);

/**
 * Tool and schema names Anthropic accepts.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools
 */
export const ANTHROPIC_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const VALIDATED_LOCALLY = "remove it from the schema: cachet still checks the answer against your full schema after it arrives";
const HINTS: Record<string, string> = {
  minimum: VALIDATED_LOCALLY,
  maximum: VALIDATED_LOCALLY,
  exclusiveMinimum: VALIDATED_LOCALLY,
  exclusiveMaximum: VALIDATED_LOCALLY,
  multipleOf: VALIDATED_LOCALLY,
  minLength: VALIDATED_LOCALLY,
  maxLength: VALIDATED_LOCALLY,
  maxItems: VALIDATED_LOCALLY,
  uniqueItems: VALIDATED_LOCALLY,
  oneOf: "use \"anyOf\"",
  not: "remove it and state the constraint in \"description\"",
  nullable: "use \"type\": [\"<type>\", \"null\"]",
  patternProperties: "declare each property in \"properties\"",
};

const CONTRACT: KeywordContract = { label: LABEL, keywords: ANTHROPIC_KEYWORDS, hints: HINTS, allowsOpenSchemas: false, check: checkNode };

/**
 * Every breach of Anthropic's structured-output contract in `schema`:
 * keywords, node rules, recursion and the per-request limits (counted as if
 * this schema were the request's only strict schema). Pure.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */
export function lintAnthropic(schema: SchemaNode): SchemaViolation[] {
  const violations = lintKeywords(schema, CONTRACT);
  const report: Report = (path, message, hint) => violations.push(hint === undefined ? { path, message } : { path, message, hint });
  for (const recursive of findRecursiveRefs(schema)) {
    report(recursive.path, `recursive schemas are not supported by ${LABEL} (${JSON.stringify(recursive.ref)} refers back to an enclosing schema)`, "unroll the recursion to a fixed depth");
  }
  checkLimits(schema, report);
  return violations;
}

/**
 * Node rules: closed objects, `minItems` 0 or 1, primitive enum members,
 * known formats, `allOf` without `$ref`, regex without backreferences,
 * lookaround or word boundaries.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */
function checkNode(node: SchemaNode, path: string, report: Report): void {
  if ("additionalProperties" in node && node.additionalProperties !== false) {
    report(memberPath(path, "additionalProperties"), `"additionalProperties" must be false in ${LABEL}`, "declare every property in \"properties\" (cachet sets additionalProperties:false itself)");
  }
  if (isObjectNode(node) && !isPlainObject(node.properties)) {
    report(path, `an object without "properties" is not supported by ${LABEL} (it could only be {})`, "declare the object's properties, or use an array of {key, value} objects for a map");
  }
  if ("minItems" in node && node.minItems !== 0 && node.minItems !== 1) {
    report(memberPath(path, "minItems"), `"minItems" may only be 0 or 1 in ${LABEL} (found ${JSON.stringify(node.minItems)})`, VALIDATED_LOCALLY);
  }
  if (Array.isArray(node.enum) && node.enum.some((value) => value !== null && typeof value === "object")) {
    report(memberPath(path, "enum"), `enum members must be strings, numbers, booleans or null in ${LABEL}`, "use \"anyOf\" of object schemas instead");
  }
  if ("format" in node && !(typeof node.format === "string" && ANTHROPIC_FORMATS.has(node.format))) {
    report(memberPath(path, "format"), `format ${JSON.stringify(node.format)} is not supported by ${LABEL}`, `use one of ${[...ANTHROPIC_FORMATS].join(", ")}, or "pattern"`);
  }
  if (Array.isArray(node.allOf) && node.allOf.some((branch) => isPlainObject(branch) && "$ref" in branch)) {
    report(memberPath(path, "allOf"), `"allOf" with "$ref" is not supported by ${LABEL}`, "inline the referenced schema into the allOf branch");
  }
  if (typeof node.pattern === "string") {
    const unsupported = unsupportedRegex(node.pattern);
    if (unsupported !== undefined) report(memberPath(path, "pattern"), `${unsupported} in "pattern" is not supported by ${LABEL}`, "simplify the regular expression");
  }
}

function unsupportedRegex(pattern: string): string | undefined {
  if (/\\[1-9]|\\k</.test(pattern)) return "a backreference";
  if (/\(\?<?[=!]/.test(pattern)) return "a lookaround";
  if (/(^|[^\\])(\\\\)*\\[bB]/.test(pattern)) return "a word boundary (\\b)";
  return undefined;
}

/**
 * At most 24 optional properties and 16 union sub-schemas per request.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */
function checkLimits(root: SchemaNode, report: Report): void {
  let optional = 0;
  let unions = 0;
  let optionalOver: string | undefined;
  let unionOver: string | undefined;
  const walk = (node: unknown, path: string): void => {
    if (!isPlainObject(node)) return;
    if (Array.isArray(node.anyOf) || typesOf(node).length > 1) {
      if (++unions > ANTHROPIC_LIMITS.unionParameters && unionOver === undefined) unionOver = path;
    }
    if (isPlainObject(node.properties)) {
      const required = requiredOf(node);
      for (const name of Object.keys(node.properties)) {
        if (!required.includes(name) && ++optional > ANTHROPIC_LIMITS.optionalProperties && optionalOver === undefined) optionalOver = memberPath(memberPath(path, "properties"), name);
      }
    }
    for (const entry of subschemas(node, path)) walk(entry.schema, entry.path);
  };
  walk(root, ROOT_PATH);
  if (optionalOver !== undefined) report(optionalOver, `the schema has ${optional} optional properties; ${LABEL} allows at most ${ANTHROPIC_LIMITS.optionalProperties} per request`, "make some properties required (nullable if they may be empty)");
  if (unionOver !== undefined) report(unionOver, `the schema has ${unions} union parameters (anyOf or type arrays); ${LABEL} allows at most ${ANTHROPIC_LIMITS.unionParameters} per request`, "replace some unions with a single type");
}
