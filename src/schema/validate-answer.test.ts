import { expect, test } from "bun:test";
import { compileUserSchema, validateAnswer } from "./validate-answer.ts";

const schema = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 }, email: { type: "string", format: "email" } },
  required: ["name"],
  additionalProperties: false,
};

test("a conforming answer passes", async () => {
  expect(await validateAnswer(schema, { name: "Ada", age: 36, email: "ada@example.com" })).toEqual({ ok: true });
});

test("every error is reported with its JSON path, including formats and bounds", async () => {
  expect(await validateAnswer(schema, { age: -1, email: "nope", extra: 1 })).toEqual({
    ok: false,
    errors: [
      "$: must have required property 'name'",
      '$: must NOT have additional properties ("extra")',
      "$.age: must be >= 0",
      '$.email: must match format "email"',
    ],
  });
});

test("draft-07 documents with $schema and definitions validate", async () => {
  const draft7 = { $schema: "http://json-schema.org/draft-07/schema#", type: "object", definitions: { N: { type: "number" } }, properties: { n: { $ref: "#/definitions/N" } } };
  expect(await validateAnswer(draft7, { n: 1 })).toEqual({ ok: true });
  expect(await validateAnswer(draft7, { n: "1" })).toEqual({ ok: false, errors: ["$.n: must be number"] });
});

test("an invalid JSON Schema is a SCHEMA_INVALID error", async () => {
  await expect(validateAnswer({ type: 5 }, {})).rejects.toMatchObject({ code: "SCHEMA_INVALID", message: "the output schema: $.type: must be equal to one of the allowed values (\"array\", \"boolean\", \"integer\", \"null\", \"number\", \"object\", \"string\")" });
});

test("an invalid schema is named with its source and the JSON path of the offending node", async () => {
  const invalid = async (schema: Record<string, unknown>) => compileUserSchema(schema, "order.json").then(() => undefined, (error: { code: string; message: string }) => [error.code, error.message]);
  expect(await invalid({ type: "object", properties: { items: { type: "strin" } } })).toEqual(["SCHEMA_INVALID", 'order.json: $.properties.items.type: must be equal to one of the allowed values ("array", "boolean", "integer", "null", "number", "object", "string")']);
  expect(await invalid({ type: "object", properties: { "unit price": { type: "number", minimum: "0" } } })).toEqual(["SCHEMA_INVALID", 'order.json: $.properties["unit price"].minimum: must be number']);
  expect(await invalid({ type: "object", required: "id" })).toEqual(["SCHEMA_INVALID", "order.json: $.required: must be array"]);
  // Not meta-schema errors: ajv names the dangling ref or the bad regex, the path is found in the schema.
  expect(await invalid({ type: "object", properties: { lines: { type: "array", items: { $ref: "#/$defs/Line" } } } })).toEqual(["SCHEMA_INVALID", "order.json: $.properties.lines.items.$ref: can't resolve reference #/$defs/Line from id #"]);
  expect(await invalid({ type: "object", properties: { sku: { type: "string", pattern: "[A-Z" } } })).toEqual(["SCHEMA_INVALID", "order.json: $.properties.sku.pattern: Invalid regular expression: missing terminating ] for character class"]);
  expect(await invalid({ type: "object", patternProperties: { "^x-(": { type: "string" } } })).toEqual(["SCHEMA_INVALID", 'order.json: $.patternProperties["^x-("]: Invalid regular expression: missing )']);
  // Found nowhere in particular: the source and ajv's words.
  expect(await invalid({ type: "object", properties: { a: { enum: [] } } })).toEqual(["SCHEMA_INVALID", "order.json: not a valid JSON Schema: enum must have non-empty array"]);
});
