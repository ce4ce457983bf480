/**
 * OpenAI strict mode (Structured Outputs, `strict: true`): the keyword subset,
 * the root rule and the size limits, checked locally so a breach never costs
 * an HTTP 400. The transform that makes every property required lives in
 * strict-transform.ts; these rules judge the user's schema before it.
 *
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
import { lintKeywords, type KeywordContract, type Report, type SchemaViolation } from "./contract.ts";
import { ROOT_PATH, indexPath, memberPath } from "./json-path.ts";
import { isObjectNode, isPlainObject, resolveRef, subschemas, typesOf, type SchemaNode } from "./schema-node.ts";

const LABEL = "openai strict mode";

/**
 * Limits of one strict schema.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
export const OPENAI_LIMITS = {
  /** Object properties in the whole schema. */
  properties: 5_000,
  /** Levels of nested objects, the root object being level 1. */
  nesting: 10,
  /** Characters of property names, definition names, enum values and const values together. */
  stringChars: 120_000,
  /** Enum values in the whole schema. */
  enumValues: 1_000,
  /** A single string enum longer than this many values … */
  largeEnumValues: 250,
  /** … may hold at most this many characters. */
  largeEnumChars: 15_000,
} as const;

/**
 * String formats strict mode accepts.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
export const OPENAI_FORMATS: ReadonlySet<string> = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]);

/**
 * Keywords strict mode accepts: types, `enum`/`const`, `anyOf`, `$defs`/`$ref`,
 * string `pattern`/`format`, number bounds and `multipleOf`, array `minItems`/`maxItems`.
 * Not supported: allOf, not, dependentRequired, dependentSchemas, if/then/else;
 * `default` is refused by the API ("'default' is not permitted").
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
export const OPENAI_KEYWORDS: ReadonlySet<string> = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs", "definitions",
  "title", "description", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
]);

const HINTS: Record<string, string> = {
  allOf: "merge the branches into one object schema",
  not: "remove it: strict mode cannot express negation (state the constraint in \"description\")",
  oneOf: "use \"anyOf\"",
  if: "use \"anyOf\" of the alternatives",
  then: "use \"anyOf\" of the alternatives",
  else: "use \"anyOf\" of the alternatives",
  dependentRequired: "list the properties in \"properties\"; cachet makes them all required and nullable",
  dependentSchemas: "use \"anyOf\" of complete object schemas",
  patternProperties: "declare each property in \"properties\"",
  default: "remove it and state the default in \"description\"",
  nullable: "use \"type\": [\"<type>\", \"null\"]",
  minLength: "use a bounded \"pattern\" instead, or drop the limit",
  maxLength: "use a bounded \"pattern\" instead, or drop the limit",
};

const CONTRACT: KeywordContract = {
  label: LABEL,
  keywords: OPENAI_KEYWORDS,
  hints: HINTS,
  allowsOpenSchemas: false,
  check: checkNode,
};

/**
 * Every breach of OpenAI strict mode in `schema` (the user's schema, before
 * the strict transform): keywords, root shape, limits. Empty when the strict
 * transform may run. Pure.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
export function lintOpenAIStrict(schema: SchemaNode): SchemaViolation[] {
  const violations = lintKeywords(schema, CONTRACT);
  const report: Report = (path, message, hint) => violations.push(hint === undefined ? { path, message } : { path, message, hint });
  checkRoot(schema, report);
  checkLimits(schema, report);
  return violations;
}

/**
 * The root must be an object and not an `anyOf`.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
function checkRoot(root: SchemaNode, report: Report): void {
  const types = typesOf(root);
  if (Array.isArray(root.anyOf)) report(ROOT_PATH, `the root must not be "anyOf" in ${LABEL}`, "wrap the alternatives in an object: {\"type\":\"object\",\"properties\":{\"result\":{\"anyOf\":[...]}},\"required\":[\"result\"]}");
  else if (types.length !== 1 || types[0] !== "object") {
    report(ROOT_PATH, `the root must be "type": "object" in ${LABEL} (found ${types.length === 0 ? "no type" : JSON.stringify(root.type)})`, "wrap the value in an object with one required property");
  }
}

/**
 * Objects must be closed (`additionalProperties: false`, set by the transform
 * when absent) and declare their properties; formats come from a fixed list.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
function checkNode(node: SchemaNode, path: string, report: Report): void {
  if ("additionalProperties" in node && node.additionalProperties !== false) {
    report(memberPath(path, "additionalProperties"), `"additionalProperties" must be false in ${LABEL}`, "declare every property in \"properties\" (cachet sets additionalProperties:false itself)");
  }
  if (isObjectNode(node) && !isPlainObject(node.properties)) {
    report(path, `an object without "properties" is not supported by ${LABEL} (it could only be {})`, "declare the object's properties, or use an array of {key, value} objects for a map");
  }
  if ("format" in node && !(typeof node.format === "string" && OPENAI_FORMATS.has(node.format))) {
    report(memberPath(path, "format"), `format ${JSON.stringify(node.format)} is not supported by ${LABEL}`, `use one of ${[...OPENAI_FORMATS].join(", ")}, or "pattern"`);
  }
  if ("anyOf" in node && (!Array.isArray(node.anyOf) || node.anyOf.length === 0)) report(memberPath(path, "anyOf"), "\"anyOf\" must be a non-empty array");
}

/**
 * Size limits, counted over the schema as the model sees it: nesting follows
 * non-recursive `$ref`s into their definitions.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 */
function checkLimits(root: SchemaNode, report: Report): void {
  let properties = 0;
  let chars = 0;
  let enumValues = 0;
  let firstOverProperties: string | undefined;
  const count = (node: unknown, path: string): void => {
    if (!isPlainObject(node)) return;
    for (const keyword of ["properties", "$defs", "definitions"] as const) {
      const members = node[keyword];
      if (!isPlainObject(members)) continue;
      for (const name of Object.keys(members)) {
        chars += name.length;
        if (keyword === "properties" && ++properties > OPENAI_LIMITS.properties && firstOverProperties === undefined) firstOverProperties = memberPath(memberPath(path, keyword), name);
      }
    }
    if (Array.isArray(node.enum)) {
      enumValues += node.enum.length;
      const strings = node.enum.filter((value): value is string => typeof value === "string");
      const enumChars = node.enum.reduce((sum: number, value) => sum + String(value).length, 0);
      chars += enumChars;
      if (strings.length > OPENAI_LIMITS.largeEnumValues && enumChars > OPENAI_LIMITS.largeEnumChars) {
        report(memberPath(path, "enum"), `a string enum of ${strings.length} values holds ${enumChars} characters; ${LABEL} allows at most ${OPENAI_LIMITS.largeEnumChars} when it has more than ${OPENAI_LIMITS.largeEnumValues} values`, "shorten the values or split the enum");
      }
    }
    if ("const" in node) chars += String(node.const).length;
    for (const entry of subschemas(node, path)) count(entry.schema, entry.path);
  };
  count(root, ROOT_PATH);
  if (firstOverProperties !== undefined) report(firstOverProperties, `the schema has ${properties} object properties; ${LABEL} allows at most ${OPENAI_LIMITS.properties}`, "split the task or drop properties");
  if (chars > OPENAI_LIMITS.stringChars) report(ROOT_PATH, `property names, definition names, enum and const values total ${chars} characters; ${LABEL} allows at most ${OPENAI_LIMITS.stringChars}`, "shorten names and enum values");
  if (enumValues > OPENAI_LIMITS.enumValues) report(ROOT_PATH, `the schema has ${enumValues} enum values; ${LABEL} allows at most ${OPENAI_LIMITS.enumValues}`, "shorten the enums or replace the largest with a \"pattern\"");
  const tooDeep = deepestOver(root, OPENAI_LIMITS.nesting);
  if (tooDeep !== undefined) report(tooDeep, `objects are nested ${OPENAI_LIMITS.nesting + 1} levels deep here; ${LABEL} allows at most ${OPENAI_LIMITS.nesting}`, "flatten the structure");
}

/** Path of the first object nested deeper than `limit` levels, following non-recursive refs. */
function deepestOver(root: SchemaNode, limit: number): string | undefined {
  const seen = new Set<string>();
  const walk = (node: unknown, path: string, depth: number, refs: readonly unknown[]): string | undefined => {
    if (!isPlainObject(node)) return undefined;
    const level = isObjectNode(node) ? depth + 1 : depth;
    if (level > limit) return path;
    const key = `${path}@${level}`;
    if (seen.has(key)) return undefined;
    seen.add(key);
    for (const entry of subschemas(node, path)) {
      if (entry.keyword === "$defs" || entry.keyword === "definitions") continue;
      const found = walk(entry.schema, entry.path, level, refs);
      if (found !== undefined) return found;
    }
    if (typeof node.$ref === "string") {
      const target = resolveRef(root, node.$ref);
      if (target !== undefined && !refs.includes(target)) {
        const found = walk(target, refPath(node.$ref), level, [...refs, target]);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  return walk(root, ROOT_PATH, 0, [root]);
}

/** The JSON path of a pointer ref's target (`#/$defs/Item` → `$.$defs.Item`). */
function refPath(ref: string): string {
  if (!ref.startsWith("#/")) return ROOT_PATH;
  return ref.slice(2).split("/").reduce((path, raw) => {
    const token = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    return /^\d+$/.test(token) ? indexPath(path, Number(token)) : memberPath(path, token);
  }, ROOT_PATH);
}
