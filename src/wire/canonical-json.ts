/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, numbers and
 * strings as JSON.stringify writes them. Anything cachet re-serializes (tool
 * definitions, schemas, hashes of nodes) goes through here so the same value
 * always yields the same bytes. Tool-call arguments are never re-serialized:
 * they are replayed as the raw string the model produced.
 */

/**
 * Serializes `value` canonically. `undefined` object members are dropped, as
 * JSON.stringify does.
 * @throws TypeError on a cycle, a BigInt or a non-finite number.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

/**
 * Returns a deep copy of `value` whose objects have their keys inserted in
 * sorted order, so that `JSON.stringify` of the copy is canonical. Use it for
 * bodies handed to SDKs, which serialize with JSON.stringify.
 */
export function canonicalize<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => canonicalize(item)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member !== undefined) out[key] = canonicalize(member);
    }
    return out as T;
  }
  return value;
}

function write(value: unknown, seen: Set<object>): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: non-finite number ${value}`);
      return JSON.stringify(value);
    case "object": {
      if (seen.has(value)) throw new TypeError("canonicalJson: cycle");
      seen.add(value);
      let out: string;
      if (Array.isArray(value)) {
        out = `[${value.map((item) => (item === undefined ? "null" : write(item, seen))).join(",")}]`;
      } else {
        const parts: string[] = [];
        for (const key of Object.keys(value).sort()) {
          const member = (value as Record<string, unknown>)[key];
          if (member === undefined || typeof member === "function") continue;
          parts.push(`${JSON.stringify(key)}:${write(member, seen)}`);
        }
        out = `{${parts.join(",")}}`;
      }
      seen.delete(value);
      return out;
    }
    default:
      throw new TypeError(`canonicalJson: cannot serialize ${typeof value}`);
  }
}
