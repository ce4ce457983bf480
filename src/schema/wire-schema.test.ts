import { describe, expect, test } from "bun:test";
import { isCachetError } from "../errors.ts";
import { checkSchema, SchemaContractError, toWireSchema } from "./wire-schema.ts";

describe("CASES.md 26: optional property under OpenAI strict mode", () => {
  const schema = {
    type: "object", additionalProperties: false, required: ["organizations"],
    properties: {
      organizations: {
        type: "array",
        items: {
          type: "object", additionalProperties: false, required: ["name"],
          properties: { name: { type: "string" }, roles: { type: "array", items: { type: "string" } }, division: { type: "string" } },
        },
      },
    },
  };

  test("every key becomes required and the optional ones nullable, in canonical key order", () => {
    const wire = toWireSchema("openai", schema, { strict: true });
    expect(wire.strict).toBe(true);
    expect(JSON.stringify(wire.schema)).toBe(
      '{"additionalProperties":false,"properties":{"organizations":{"items":{"additionalProperties":false,"properties":{"division":{"type":["string","null"]},"name":{"type":"string"},"roles":{"items":{"type":"string"},"type":["array","null"]}},"required":["name","roles","division"],"type":"object"},"type":"array"}},"required":["organizations"],"type":"object"}',
    );
  });

  test("the user's schema is not modified", () => {
    const before = JSON.stringify(schema);
    toWireSchema("openai", schema);
    expect(JSON.stringify(schema)).toBe(before);
  });

  test("Anthropic keeps the optional properties optional (its contract allows them)", () => {
    const items = dig(toWireSchema("anthropic", schema).schema, "properties", "organizations", "items");
    expect(dig(items, "required")).toEqual(["name"]);
    expect(dig(items, "properties", "roles")).toEqual({ items: { type: "string" }, type: "array" });
  });
});

describe("CASES.md 27: optional + nullable price", () => {
  test("anyOf [number, null] stays as it is and is listed in required", () => {
    const wire = toWireSchema("openai", { type: "object", properties: { price: { anyOf: [{ type: "number" }, { type: "null" }] } } });
    expect(wire.schema).toEqual({ additionalProperties: false, properties: { price: { anyOf: [{ type: "number" }, { type: "null" }] } }, required: ["price"], type: "object" });
  });

  test("type [number, null] gets no second null", () => {
    const wire = toWireSchema("openai", { type: "object", properties: { price: { type: ["number", "null"] } } });
    expect(wire.schema).toEqual({ additionalProperties: false, properties: { price: { type: ["number", "null"] } }, required: ["price"], type: "object" });
  });

  test("a bare optional number becomes type [number, null]", () => {
    const wire = toWireSchema("openai", { type: "object", properties: { price: { type: "number" } } });
    expect(wire.schema.properties).toEqual({ price: { type: ["number", "null"] } });
  });

  test("the impossible {not: {}} branch is rejected locally with its path", () => {
    const schema = { type: "object", properties: { price: { anyOf: [{ anyOf: [{ not: {} }, { type: "number" }] }, { type: "null" }] } } };
    let error: unknown;
    try {
      toWireSchema("openai", schema);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SchemaContractError);
    expect(isCachetError(error)).toBe(true);
    const contract = error as SchemaContractError;
    expect(contract.code).toBe("SCHEMA_CONTRACT");
    expect(contract.exitCode).toBe(3);
    expect(contract.message).toBe('$.properties.price.anyOf[0].anyOf[0]: "not" is not supported by openai strict mode');
    expect(contract.hint).toContain("cachet schema check FILE --provider openai");
    expect(contract.violations).toEqual([
      { path: "$.properties.price.anyOf[0].anyOf[0]", message: '"not" is not supported by openai strict mode', hint: 'remove it: strict mode cannot express negation (state the constraint in "description")' },
    ]);
  });

  test("a bare {} is rejected for openai and anthropic, accepted by gemini", () => {
    const schema = { type: "object", properties: { price: { anyOf: [{}, { type: "number" }] } }, required: ["price"] };
    expect(checkSchema("openai", schema).violations.map((v) => v.path)).toEqual(["$.properties.price.anyOf[0]"]);
    expect(checkSchema("anthropic", schema).violations.map((v) => v.path)).toEqual(["$.properties.price.anyOf[0]"]);
    expect(checkSchema("gemini", schema).violations).toEqual([]);
  });
});

describe("CASES.md 28: nested and nullable objects", () => {
  const schema = {
    type: "object", additionalProperties: false, required: ["address"],
    properties: { address: { type: ["object", "null"], required: ["city"], properties: { city: { type: "string" } } } },
  };

  test("the nullable object gets additionalProperties:false and a full required list", () => {
    expect(toWireSchema("openai", schema).schema).toEqual({
      additionalProperties: false,
      properties: { address: { additionalProperties: false, properties: { city: { type: "string" } }, required: ["city"], type: ["object", "null"] } },
      required: ["address"],
      type: "object",
    });
  });

  test("objects inside anyOf, items and $defs are closed too", () => {
    const wire = toWireSchema("openai", {
      type: "object",
      $defs: { Tag: { type: "object", properties: { label: { type: "string" } } } },
      properties: {
        tags: { type: "array", items: { $ref: "#/$defs/Tag" } },
        result: { anyOf: [{ type: "object", properties: { ok: { type: "boolean" } } }, { type: "null" }] },
      },
      required: ["tags", "result"],
    }).schema;
    expect(dig(wire, "$defs", "Tag")).toEqual({ additionalProperties: false, properties: { label: { type: ["string", "null"] } }, required: ["label"], type: "object" });
    expect(dig(wire, "properties", "result", "anyOf", 0)).toEqual({ additionalProperties: false, properties: { ok: { type: ["boolean", "null"] } }, required: ["ok"], type: "object" });
  });
});

describe("nullable forms", () => {
  test("an optional enum gets null in both type and enum; an optional $ref or const is wrapped in anyOf", () => {
    const wire = toWireSchema("openai", {
      type: "object",
      $defs: { Id: { type: "string" } },
      properties: { level: { type: "string", enum: ["low", "high"] }, id: { $ref: "#/$defs/Id" }, kind: { const: "v1" } },
    }).schema;
    expect(dig(wire, "properties", "level")).toEqual({ enum: ["low", "high", null], type: ["string", "null"] });
    expect(dig(wire, "properties", "id")).toEqual({ anyOf: [{ $ref: "#/$defs/Id" }, { type: "null" }] });
    expect(dig(wire, "properties", "kind")).toEqual({ anyOf: [{ const: "v1" }, { type: "null" }] });
  });
});

describe("options and other targets", () => {
  test("strict:false sends the schema as written (keys sorted, $schema dropped) with strict:false", () => {
    const wire = toWireSchema("openai", { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { a: { not: {} } } }, { strict: false });
    expect(wire).toEqual({ schema: { properties: { a: { not: {} } }, type: "object" }, strict: false });
  });

  test("gemini gets propertyOrdering in the user's order while keys are sorted", () => {
    const wire = toWireSchema("gemini", { type: "object", properties: { zeta: { type: "string" }, alpha: { type: "object", properties: { y: { type: "integer" }, b: { type: "string" } } } } });
    expect(JSON.stringify(wire.schema)).toBe(
      '{"properties":{"alpha":{"properties":{"b":{"type":"string"},"y":{"type":"integer"}},"propertyOrdering":["y","b"],"type":"object"},"zeta":{"type":"string"}},"propertyOrdering":["zeta","alpha"],"type":"object"}',
    );
  });

  test("every violation is collected, not only the first", () => {
    const { wire, violations } = checkSchema("openai", { type: "object", properties: { a: { type: "string", default: "x" }, b: { oneOf: [{ type: "string" }] }, c: { type: "string", format: "uri" } } });
    expect(wire).toBeUndefined();
    expect(violations.map((v) => `${v.path}: ${v.message}`)).toEqual([
      '$.properties.a: "default" is not supported by openai strict mode',
      '$.properties.b: "oneOf" is not supported by openai strict mode',
      '$.properties.c.format: format "uri" is not supported by openai strict mode',
    ]);
    expect(() => toWireSchema("openai", { type: "object", properties: { a: { type: "string", default: "x" }, b: { oneOf: [] } } })).toThrow("(and 1 more)");
  });

  test("dangling and external refs are named", () => {
    const { violations } = checkSchema("anthropic", { type: "object", properties: { a: { $ref: "#/$defs/Missing" }, b: { $ref: "https://example.com/s.json" } }, required: ["a", "b"] });
    expect(violations.map((v) => v.path)).toEqual(["$.properties.a.$ref", "$.properties.b.$ref"]);
    expect(violations[1]!.message).toContain("external $ref");
  });

  test("keys with spaces are bracketed in paths", () => {
    const { violations } = checkSchema("openai", { type: "object", properties: { "unit price": { type: "number", not: { const: 0 } } } });
    expect(violations[0]!.path).toBe('$.properties["unit price"]');
  });
});

/** The value at a path of keys in a parsed JSON value. */
function dig(value: unknown, ...path: (string | number)[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown> | undefined)?.[key], value);
}
