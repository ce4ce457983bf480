/**
 * JSON paths in the form users read in error messages: `$.properties.price.anyOf[0]`,
 * with bracketed quotes for keys that are not plain identifiers (`$.properties["unit price"]`).
 */

/** The JSON path of the root. */
export const ROOT_PATH = "$";

/** The path of member `key` of the object at `path`. */
export function memberPath(path: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** The path of element `index` of the array at `path`. */
export function indexPath(path: string, index: number): string {
  return `${path}[${index}]`;
}

/**
 * Converts a JSON Pointer instance path (`/organizations/0/name`, as validators
 * report it) to a JSON path (`$.organizations[0].name`).
 */
export function pointerToPath(pointer: string): string {
  if (pointer === "") return ROOT_PATH;
  let path = ROOT_PATH;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    path = /^(0|[1-9][0-9]*)$/.test(token) ? indexPath(path, Number(token)) : memberPath(path, token);
  }
  return path;
}
