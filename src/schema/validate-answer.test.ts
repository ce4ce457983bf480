import { expect, test } from "bun:test";
import { validateAnswer } from "./validate-answer.ts";

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
  await expect(validateAnswer({ type: 5 }, {})).rejects.toMatchObject({ code: "SCHEMA_INVALID" });
});
