import { describe, expect, test } from "bun:test";
import { lintAnthropic } from "./anthropic-contract.ts";
import { lintGemini } from "./gemini-contract.ts";
import { OPENAI_LIMITS, lintOpenAIStrict } from "./openai-contract.ts";
import { findRecursiveRefs } from "./recursive-refs.ts";

const object = (properties: Record<string, unknown>) => ({ type: "object", properties, required: Object.keys(properties) });

describe("openai strict limits", () => {
  test("10 nested object levels pass, 11 fail at the 11th, also through $defs", () => {
    const nest = (levels: number): Record<string, unknown> => (levels === 1 ? object({ v: { type: "string" } }) : object({ n: nest(levels - 1) }));
    expect(lintOpenAIStrict(nest(OPENAI_LIMITS.nesting))).toEqual([]);
    expect(lintOpenAIStrict(nest(11)).map((v) => v.path)).toEqual([`$${".properties.n".repeat(10)}`]);
    const viaDefs = { ...object({ a: { $ref: "#/$defs/Deep" } }), $defs: { Deep: nest(10) } };
    expect(lintOpenAIStrict(viaDefs).map((v) => v.path)).toEqual([`$.$defs.Deep${".properties.n".repeat(9)}`]);
  });

  test("recursion is allowed and does not count as infinite depth", () => {
    const tree = { ...object({ root: { $ref: "#/$defs/Node" } }), $defs: { Node: object({ kids: { type: "array", items: { $ref: "#/$defs/Node" } } }) } };
    expect(lintOpenAIStrict(tree)).toEqual([]);
  });

  test("5,001 properties and 120,001 characters of names are refused", () => {
    const many = Object.fromEntries(Array.from({ length: 5_001 }, (_, i) => [`p${i}`, { type: "string" }]));
    expect(lintOpenAIStrict(object(many)).map((v) => v.path)).toEqual(["$.properties.p5000"]);
    const long = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`${"k".repeat(1_200)}${i}`, { type: "string" }]));
    expect(lintOpenAIStrict(object(long)).map((v) => v.message)).toEqual([expect.stringContaining("total 120190 characters")]);
  });

  test("enum values are counted across the schema", () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
    expect(lintOpenAIStrict(object({ a: { type: "string", enum: values(600) }, b: { type: "string", enum: values(400) } }))).toEqual([]);
    expect(lintOpenAIStrict(object({ a: { type: "string", enum: values(600) }, b: { type: "string", enum: values(401) } })).map((v) => v.message)).toEqual(["the schema has 1001 enum values; openai strict mode allows at most 1000"]);
  });
});

describe("anthropic rules", () => {
  test("minItems 0 and 1 pass, 2 fails; objects in enums fail; backreferences fail", () => {
    expect(lintAnthropic(object({ a: { type: "array", items: { type: "string" }, minItems: 1 } }))).toEqual([]);
    const bad = object({ a: { type: "array", items: { type: "string" }, minItems: 2 }, b: { enum: [{ x: 1 }] }, c: { type: "string", pattern: "(a)\\1" } });
    expect(lintAnthropic(bad).map((v) => v.path)).toEqual(["$.properties.a.minItems", "$.properties.b.enum", "$.properties.c.pattern"]);
  });

  test("allOf is allowed, but not with $ref", () => {
    expect(lintAnthropic(object({ a: { allOf: [{ type: "string" }] } }))).toEqual([]);
    const withRef = { ...object({ a: { allOf: [{ $ref: "#/$defs/S" }] } }), $defs: { S: { type: "string" } } };
    expect(lintAnthropic(withRef).map((v) => v.path)).toEqual(["$.properties.a.allOf"]);
  });

  test("24 optional properties pass, 25 fail", () => {
    const optional = (n: number) => ({ type: "object", properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string" }])) });
    expect(lintAnthropic(optional(24))).toEqual([]);
    expect(lintAnthropic(optional(25)).map((v) => v.path)).toEqual(["$.properties.p24"]);
  });
});

describe("gemini rules", () => {
  test("$ref siblings must be $-prefixed; propertyOrdering must match the properties", () => {
    const schema = { ...object({ a: { $ref: "#/$defs/S", $anchor: "a" }, b: { $ref: "#/$defs/S", description: "no" } }), $defs: { S: { type: "string" } }, propertyOrdering: ["a"] };
    expect(lintGemini(schema).map((v) => `${v.path}: ${v.message}`)).toEqual([
      '$.propertyOrdering: "propertyOrdering" must list each property exactly once',
      '$.properties.b: a schema with "$ref" may carry only "$"-prefixed keywords in gemini responseJsonSchema (found "description")',
    ]);
  });

  test("boolean enums are refused, numbers and strings pass", () => {
    expect(lintGemini(object({ a: { enum: ["x", 1] } }))).toEqual([]);
    expect(lintGemini(object({ a: { enum: [true] } })).map((v) => v.path)).toEqual(["$.properties.a.enum"]);
  });
});

test("recursive refs are found with whether an optional property breaks the cycle", () => {
  expect(findRecursiveRefs({ type: "object", properties: { next: { $ref: "#" } } })).toEqual([{ path: "$.properties.next.$ref", ref: "#", throughOptionalProperty: true }]);
  expect(findRecursiveRefs({ type: "object", properties: { next: { $ref: "#" } }, required: ["next"] })).toEqual([{ path: "$.properties.next.$ref", ref: "#", throughOptionalProperty: false }]);
  expect(findRecursiveRefs({ type: "object", $defs: { A: { type: "string" } }, properties: { a: { $ref: "#/$defs/A" }, b: { $ref: "#/$defs/A" } } })).toEqual([]);
});
