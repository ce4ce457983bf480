/**
 * Reading JSON Schema documents as trees: which keywords hold sub-schemas,
 * whether a node describes an object, whether it accepts null, and internal
 * `$ref` resolution. Shared by the contract linters, the strict transform and
 * the answer mapping; no provider rule lives here.
 */
import { indexPath, memberPath } from "./json-path.ts";

/** A JSON Schema object node (boolean schemas are handled where they may occur). */
export type SchemaNode = Record<string, unknown>;

/** Keywords whose value maps names to sub-schemas. */
export const MAP_KEYWORDS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"] as const;
/** Keywords whose value is one sub-schema (when it is an object). */
export const SINGLE_KEYWORDS = ["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems"] as const;
/** Keywords whose value is a list of sub-schemas. */
export const LIST_KEYWORDS = ["anyOf", "oneOf", "allOf", "prefixItems", "items"] as const;

/** One sub-schema of a node, with the keyword that holds it and its JSON path. */
export interface SubschemaEntry {
  keyword: string;
  /** Member name for map keywords (`properties.name`), index for lists. */
  key: string | number | undefined;
  schema: unknown;
  path: string;
}

/** True for a non-null, non-array object. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The direct sub-schemas of `node`. Map and list members are returned whatever
 * their type (a boolean schema in `properties` is a finding for a linter);
 * single-schema keywords only when their value is an object, because
 * `additionalProperties: false` is a setting, not a sub-schema.
 */
export function subschemas(node: SchemaNode, path: string): SubschemaEntry[] {
  const out: SubschemaEntry[] = [];
  for (const [keyword, value] of Object.entries(node)) {
    const at = memberPath(path, keyword);
    if ((MAP_KEYWORDS as readonly string[]).includes(keyword) && isPlainObject(value)) {
      for (const [name, schema] of Object.entries(value)) out.push({ keyword, key: name, schema, path: memberPath(at, name) });
    } else if ((LIST_KEYWORDS as readonly string[]).includes(keyword) && Array.isArray(value)) {
      value.forEach((schema, index) => out.push({ keyword, key: index, schema, path: indexPath(at, index) }));
    } else if ((SINGLE_KEYWORDS as readonly string[]).includes(keyword) && isPlainObject(value)) {
      out.push({ keyword, key: undefined, schema: value, path: at });
    }
  }
  return out;
}

/** The `type` keyword as a list (empty when absent or malformed). */
export function typesOf(node: SchemaNode): string[] {
  const type = node.type;
  if (typeof type === "string") return [type];
  if (Array.isArray(type)) return type.filter((t): t is string => typeof t === "string");
  return [];
}

/** True when `node` describes an object: `type` names "object", or it declares `properties` without a type. */
export function isObjectNode(node: SchemaNode): boolean {
  const types = typesOf(node);
  return types.includes("object") || (types.length === 0 && isPlainObject(node.properties));
}

/** The `required` keyword as a list of names. */
export function requiredOf(node: SchemaNode): string[] {
  return Array.isArray(node.required) ? node.required.filter((name): name is string => typeof name === "string") : [];
}

/**
 * Resolves an internal `$ref` against `root`: `#`, a JSON Pointer (`#/$defs/Item`)
 * or an `$anchor` name (`#item`). Returns undefined for external or dangling refs.
 */
export function resolveRef(root: unknown, ref: string): unknown {
  if (ref === "#") return root;
  if (ref.startsWith("#/")) {
    let node: unknown = root;
    for (const raw of ref.slice(2).split("/")) {
      const token = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      if (Array.isArray(node) && /^\d+$/.test(token)) node = node[Number(token)];
      else if (isPlainObject(node) && Object.hasOwn(node, token)) node = node[token];
      else return undefined;
    }
    return node;
  }
  if (ref.startsWith("#")) return findAnchor(root, ref.slice(1), 0);
  return undefined;
}

/**
 * True when `schema` accepts `null`: a `null` type, a `null` enum member or
 * const, or a union with a branch that does. `$ref` chains are followed a
 * bounded number of steps so a cyclic ref cannot loop.
 */
export function acceptsNull(schema: unknown, root: unknown, hops = 0): boolean {
  if (schema === true) return true;
  if (!isPlainObject(schema)) return false;
  if (typeof schema.$ref === "string") return hops < 32 && acceptsNull(resolveRef(root, schema.$ref), root, hops + 1);
  for (const keyword of ["anyOf", "oneOf"] as const) {
    const branches = schema[keyword];
    if (Array.isArray(branches) && !branches.some((branch) => acceptsNull(branch, root, hops))) return false;
  }
  if ("type" in schema && !typesOf(schema).includes("null")) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) return false;
  if ("const" in schema && schema.const !== null) return false;
  return true;
}

function findAnchor(node: unknown, anchor: string, depth: number): unknown {
  if (!isPlainObject(node) || depth > 64) return undefined;
  if (node.$anchor === anchor) return node;
  for (const entry of subschemas(node, "$")) {
    const found = findAnchor(entry.schema, anchor, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}
