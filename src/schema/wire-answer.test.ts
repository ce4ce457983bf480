import { expect, test } from "bun:test";
import { fromWireAnswer } from "./wire-answer.ts";

const schema = {
  type: "object",
  $defs: { Person: { type: "object", properties: { name: { type: "string" }, email: { type: "string" } }, required: ["name"] } },
  properties: {
    title: { type: "string" },
    note: { type: "string" },
    price: { anyOf: [{ type: "number" }, { type: "null" }] },
    author: { $ref: "#/$defs/Person" },
    people: { type: "array", items: { $ref: "#/$defs/Person" } },
    result: {
      anyOf: [
        { type: "object", properties: { kind: { const: "hit" }, score: { type: "number" } }, required: ["kind"] },
        { type: "object", properties: { kind: { const: "miss" }, reason: { type: "string" } }, required: ["kind"] },
      ],
    },
  },
  required: ["title"],
};

test("nulls of optional non-nullable properties become absent, at every depth", () => {
  const answer = {
    title: "t",
    note: null,
    price: null,
    author: { name: "Ada", email: null },
    people: [{ name: "Bob", email: null }, { name: "Cy", email: "c@example.com" }],
    result: { kind: "miss", reason: null },
  };
  expect(fromWireAnswer("openai", schema, answer)).toEqual({
    title: "t",
    price: null,
    author: { name: "Ada" },
    people: [{ name: "Bob" }, { name: "Cy", email: "c@example.com" }],
    result: { kind: "miss" },
  });
  expect(answer.note).toBeNull();
});

test("a required property's null is left for validation to report", () => {
  expect(fromWireAnswer("openai", schema, { title: null })).toEqual({ title: null });
});

test("targets that keep optional properties optional return the answer unchanged", () => {
  const answer = { title: "t", note: null };
  expect(fromWireAnswer("anthropic", schema, answer)).toBe(answer);
  expect(fromWireAnswer("gemini", schema, answer)).toBe(answer);
});
