/**
 * Structured output in the emulator: the schema a request asks for, and a
 * deterministic instance of it for the default answer, so `--schema` works
 * against the emulator without a script.
 */

/** The value as a JSON Schema object, or undefined. */
export function asSchema(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * A small instance of `schema`: required properties only (strict schemas
 * list every property), the first enum value or non-null branch, formats
 * honoured, minimum lengths and counts met. Deterministic.
 */
export function exampleOf(schema: Record<string, unknown>, root: Record<string, unknown> = schema, depth = 0): unknown {
  if (depth > 12) return null;
  const ref = schema.$ref;
  if (typeof ref === "string") {
    const target = resolveRef(root, ref);
    return target ? exampleOf(target, root, depth + 1) : null;
  }
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const branches = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (Array.isArray(branches) && branches.length > 0) {
    const branch = branches.find((b) => b?.type !== "null") ?? branches[0]!;
    return exampleOf(branch, root, depth + 1);
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  const type = types.find((t) => t !== "null") ?? types[0];
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
      const out: Record<string, unknown> = {};
      for (const key of required) if (properties[key]) out[key] = exampleOf(properties[key]!, root, depth + 1);
      return out;
    }
    case "array": {
      const count = typeof schema.minItems === "number" ? schema.minItems : 0;
      const items = asSchema(schema.items) ?? {};
      return Array.from({ length: count }, () => exampleOf(items, root, depth + 1));
    }
    case "string":
      return stringFor(schema);
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : 0;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return {};
  }
}

function stringFor(schema: Record<string, unknown>): string {
  const formats: Record<string, string> = {
    "date-time": "2026-01-01T00:00:00Z",
    date: "2026-01-01",
    time: "00:00:00Z",
    duration: "P1D",
    email: "emulated@example.com",
    hostname: "example.com",
    uri: "https://example.com/",
    ipv4: "192.0.2.1",
    ipv6: "2001:db8::1",
    uuid: "00000000-0000-4000-8000-000000000000",
  };
  const text = formats[String(schema.format)] ?? "emulated";
  const min = typeof schema.minLength === "number" ? schema.minLength : 0;
  return text.length >= min ? text : text.padEnd(min, "x");
}

function resolveRef(root: Record<string, unknown>, ref: string): Record<string, unknown> | undefined {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const key of ref.slice(2).split("/")) node = (node as Record<string, unknown> | undefined)?.[key.replace(/~1/g, "/").replace(/~0/g, "~")];
  return asSchema(node);
}
