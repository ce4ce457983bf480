import { expect, test } from "bun:test";
import { formatSchemaCheck } from "./check-report.ts";
import { checkSchema } from "./wire-schema.ts";

test("text report: the wire schema, or one line per violation with its hint", () => {
  const ok = checkSchema("openai", { type: "object", properties: { a: { type: "string" } } });
  expect(formatSchemaCheck("openai", ok, false)).toBe('{\n  "additionalProperties": false,\n  "properties": {\n    "a": {\n      "type": [\n        "string",\n        "null"\n      ]\n    }\n  },\n  "required": [\n    "a"\n  ],\n  "type": "object"\n}\n');
  const bad = checkSchema("openai", { type: "object", properties: { a: { type: "string", default: "x" } } });
  expect(formatSchemaCheck("openai", bad, false)).toBe('$.properties.a: "default" is not supported by openai strict mode\n  hint: remove it and state the default in "description"\n');
});

test("JSON report carries provider, ok, strict, schema and violations", () => {
  const ok = checkSchema("gemini", { type: "object", properties: { a: { type: "string" } } });
  expect(JSON.parse(formatSchemaCheck("gemini", ok, true))).toEqual({ provider: "gemini", ok: true, strict: true, schema: { properties: { a: { type: "string" } }, propertyOrdering: ["a"], type: "object" }, violations: [] });
  const bad = checkSchema("gemini", { type: "object", properties: { a: { const: 1 } } });
  expect(JSON.parse(formatSchemaCheck("gemini", bad, true))).toEqual({ provider: "gemini", ok: false, violations: [{ path: "$.properties.a", message: '"const" is not supported by gemini responseJsonSchema', hint: 'use "enum" with one value' }] });
});
