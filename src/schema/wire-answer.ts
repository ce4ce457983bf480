/**
 * Maps an answer produced under the wire schema back to the user's schema:
 * OpenAI strict mode made every optional property required and nullable, so
 * the model writes `null` where the user meant "absent". Those nulls are
 * removed before the answer is validated against the user's schema.
 */
import type { SchemaTarget } from "./contract.ts";
import { acceptsNull, isPlainObject, requiredOf, resolveRef, type SchemaNode } from "./schema-node.ts";

/** Targets whose strict transform turns optional properties into nullable ones. */
const NULLS_INTRODUCED: Record<SchemaTarget, boolean> = { openai: true, anthropic: false, gemini: false };

/**
 * Returns a copy of `value` in which every `null` that stands for a property
 * the user's schema left optional, and whose own schema does not accept null,
 * is removed. Other values (and nulls the user's schema allows) are kept. Walks
 * properties, items, prefixItems, anyOf/oneOf/allOf branches and internal refs.
 * Pure; `value` is not modified.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "All fields must be required")
 */
export function fromWireAnswer(target: SchemaTarget, userSchema: Record<string, unknown>, value: unknown): unknown {
  if (!NULLS_INTRODUCED[target]) return value;
  return restore(userSchema, value, userSchema);
}

function restore(schema: unknown, value: unknown, root: SchemaNode): unknown {
  const node = resolved(schema, root);
  if (node === undefined) return value;
  if (Array.isArray(value)) return value.map((item, index) => restore(itemSchema(node, index, root), item, root));
  if (!isPlainObject(value)) return value;
  const shape = objectShape(node, value, root);
  if (shape === undefined) return value;
  const properties = shape.properties as Record<string, unknown>;
  const required = requiredOf(shape);
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    const memberSchema = properties[key];
    if (member === null && memberSchema !== undefined && !required.includes(key) && !acceptsNull(memberSchema, root)) continue;
    out[key] = memberSchema === undefined ? member : restore(memberSchema, member, root);
  }
  return out;
}

/** Follows `$ref` chains (bounded) to a schema object. */
function resolved(schema: unknown, root: SchemaNode): SchemaNode | undefined {
  let node = schema;
  for (let hops = 0; hops < 32 && isPlainObject(node) && typeof node.$ref === "string"; hops++) node = resolveRef(root, node.$ref);
  return isPlainObject(node) ? node : undefined;
}

function itemSchema(node: SchemaNode, index: number, root: SchemaNode): unknown {
  if (Array.isArray(node.prefixItems) && index < node.prefixItems.length) return node.prefixItems[index];
  if (isPlainObject(node.items)) return node.items;
  for (const branch of branches(node, root)) {
    if (isPlainObject(branch.items) || Array.isArray(branch.prefixItems)) return itemSchema(branch, index, root);
  }
  return undefined;
}

/**
 * The object schema `value` was produced under: the node itself when it
 * declares properties, else the union branch whose property names match the
 * value's keys best (strict answers carry every key of their branch).
 */
function objectShape(node: SchemaNode, value: Record<string, unknown>, root: SchemaNode): SchemaNode | undefined {
  const candidates = [node, ...branches(node, root)].filter((candidate) => isPlainObject(candidate.properties));
  const keys = Object.keys(value);
  const score = (candidate: SchemaNode): number => {
    const names = Object.keys(candidate.properties as object);
    const missing = keys.filter((key) => !names.includes(key)).length;
    return missing === 0 && names.length === keys.length ? 0 : 1 + missing;
  };
  return candidates.sort((a, b) => score(a) - score(b))[0];
}

/** Union branches of `node` (anyOf, oneOf, allOf), refs resolved, nested unions flattened. */
function branches(node: SchemaNode, root: SchemaNode, depth = 0): SchemaNode[] {
  if (depth > 8) return [];
  const out: SchemaNode[] = [];
  for (const keyword of ["anyOf", "oneOf", "allOf"] as const) {
    const list = node[keyword];
    if (!Array.isArray(list)) continue;
    for (const branch of list) {
      const resolvedBranch = resolved(branch, root);
      if (resolvedBranch === undefined) continue;
      out.push(resolvedBranch, ...branches(resolvedBranch, root, depth + 1));
    }
  }
  return out;
}
