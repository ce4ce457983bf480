/**
 * Rewrites a user's schema (already found inside the provider's subset) into
 * the form the provider's constrained decoding needs: every object closed,
 * and for OpenAI strict mode every property required, the optional ones made
 * nullable so the model can still leave them empty. The rewrite recurses
 * through every sub-schema keyword: properties, items, prefixItems, anyOf,
 * oneOf, allOf, $defs/definitions, nullable object types (CASES.md 26, 28).
 */
import { LIST_KEYWORDS, MAP_KEYWORDS, SINGLE_KEYWORDS, acceptsNull, isObjectNode, isPlainObject, requiredOf, typesOf, type SchemaNode } from "./schema-node.ts";

/** What the transform does to each object node. */
export interface StrictTransformOptions {
  /** Set `additionalProperties: false` where absent. */
  closeObjects: boolean;
  /** List every property in `required`; make the ones the user left optional nullable. */
  requireAll: boolean;
  /** Add `propertyOrdering` (Gemini) from the order of `properties`, where absent. */
  propertyOrdering: boolean;
}

/**
 * Returns the rewritten copy of `root`; `root` is not modified. Properties that
 * become nullable are exactly the optional ones whose schema does not already
 * accept null: fromWireAnswer finds them again from the user's schema.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "All fields must be required")
 */
export function strictTransform(root: SchemaNode, options: StrictTransformOptions): SchemaNode {
  return rewrite(root, root, options) as SchemaNode;
}

/**
 * `schema` widened to accept null: `null` added to `type` (and to `enum`, which
 * would otherwise still refuse it), appended to `anyOf`, or the schema wrapped
 * in `anyOf: [schema, {type: "null"}]` (refs, consts). Unchanged when it
 * already accepts null.
 */
export function makeNullable(schema: unknown, root: unknown): unknown {
  if (acceptsNull(schema, root) || !isPlainObject(schema)) return schema;
  if ("type" in schema && !("const" in schema) && !("$ref" in schema)) {
    const types = typesOf(schema);
    const out: SchemaNode = { ...schema, type: types.includes("null") ? types : [...types, "null"] };
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) out.enum = [...schema.enum, null];
    return out;
  }
  if (Array.isArray(schema.anyOf) && Object.keys(schema).every((key) => key === "anyOf" || key === "title" || key === "description")) {
    return { ...schema, anyOf: [...schema.anyOf, { type: "null" }] };
  }
  return { anyOf: [schema, { type: "null" }] };
}

function rewrite(node: unknown, root: SchemaNode, options: StrictTransformOptions): unknown {
  if (!isPlainObject(node)) return node;
  const out: SchemaNode = {};
  for (const [keyword, value] of Object.entries(node)) {
    if ((MAP_KEYWORDS as readonly string[]).includes(keyword) && isPlainObject(value)) {
      out[keyword] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, rewrite(schema, root, options)]));
    } else if ((LIST_KEYWORDS as readonly string[]).includes(keyword) && Array.isArray(value)) {
      out[keyword] = value.map((schema) => rewrite(schema, root, options));
    } else if ((SINGLE_KEYWORDS as readonly string[]).includes(keyword) && isPlainObject(value)) {
      out[keyword] = rewrite(value, root, options);
    } else {
      out[keyword] = value;
    }
  }
  if (!isObjectNode(node)) return out;
  if (options.closeObjects && !("additionalProperties" in out)) out.additionalProperties = false;
  const properties = isPlainObject(out.properties) ? out.properties : undefined;
  if (properties === undefined) return out;
  const names = Object.keys(properties);
  if (options.requireAll) {
    const required = requiredOf(node);
    for (const name of names) {
      if (!required.includes(name)) properties[name] = makeNullable(properties[name], root);
    }
    out.required = names;
  }
  if (options.propertyOrdering && !("propertyOrdering" in out)) out.propertyOrdering = names;
  return out;
}
