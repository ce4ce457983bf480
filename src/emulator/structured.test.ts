import { expect, test } from "bun:test";
import { exampleOf } from "./structured.ts";

test("a deterministic instance of the requested schema: required properties, enums, formats, refs, nullable branches", () => {
  const schema = {
    type: "object",
    additionalProperties: false,
    required: ["stage", "when", "count", "tags", "price", "address", "owner"],
    properties: {
      stage: { type: "string", enum: ["extract", "classify"] },
      when: { type: "string", format: "date-time" },
      count: { type: "integer", minimum: 1 },
      tags: { type: "array", items: { type: "string" }, minItems: 1 },
      price: { anyOf: [{ type: "null" }, { type: "number" }] },
      address: { type: ["object", "null"], required: ["city"], properties: { city: { type: "string" } } },
      owner: { $ref: "#/$defs/person" },
      note: { type: "string" },
    },
    $defs: { person: { type: "object", required: ["name"], properties: { name: { type: "string", minLength: 10 } } } },
  };
  expect(exampleOf(schema)).toEqual({
    stage: "extract",
    when: "2026-01-01T00:00:00Z",
    count: 1,
    tags: ["emulated"],
    price: 0,
    address: { city: "emulated" },
    owner: { name: "emulatedxx" },
  });
});
