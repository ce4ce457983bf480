/**
 * Finds the `$ref`s that make a schema recursive: each `$ref` whose target is
 * being expanded above it (a back edge of a depth-first walk that follows
 * refs). Every cycle of refs contains at least one of them.
 */
import { ROOT_PATH, memberPath } from "./json-path.ts";
import { isPlainObject, requiredOf, resolveRef, subschemas, type SchemaNode } from "./schema-node.ts";

/** A `$ref` that closes a cycle. */
export interface RecursiveRef {
  /** JSON path of the `$ref` member, e.g. `$.$defs.Node.properties.children.items.$ref`. */
  path: string;
  ref: string;
  /**
   * True when the cycle passes through a property its object does not list in
   * `required`, so a finite answer exists without expanding the cycle.
   */
  throughOptionalProperty: boolean;
}

/** Every recursive `$ref` of `root`, in walk order. Pure. */
export function findRecursiveRefs(root: SchemaNode): RecursiveRef[] {
  const paths = new Map<object, string>();
  const record = (node: unknown, path: string): void => {
    if (!isPlainObject(node) || paths.has(node)) return;
    paths.set(node, path);
    for (const entry of subschemas(node, path)) record(entry.schema, entry.path);
  };
  record(root, ROOT_PATH);

  const state = new Map<object, "active" | "done">();
  const stack: { node: object; optionalEdge: boolean }[] = [];
  const found: RecursiveRef[] = [];
  const visit = (node: unknown, optionalEdge: boolean): void => {
    if (!isPlainObject(node) || state.has(node)) return;
    const path = paths.get(node) ?? ROOT_PATH;
    state.set(node, "active");
    stack.push({ node, optionalEdge });
    const required = requiredOf(node);
    for (const entry of subschemas(node, path)) {
      visit(entry.schema, entry.keyword === "properties" && !required.includes(String(entry.key)));
    }
    if (typeof node.$ref === "string") {
      const target = resolveRef(root, node.$ref);
      if (isPlainObject(target) && state.get(target) === "active") {
        const start = stack.findIndex((frame) => frame.node === target);
        found.push({ path: memberPath(path, "$ref"), ref: node.$ref, throughOptionalProperty: stack.slice(start + 1).some((frame) => frame.optionalEdge) });
      } else {
        visit(target, false);
      }
    }
    stack.pop();
    state.set(node, "done");
  };
  visit(root, false);
  return found;
}
