import { expect, test } from "bun:test";
import { jsonErrorPosition, parseJsonDocument } from "./json-error-position.ts";

test("valid JSON has no error position", () => {
  for (const text of ['{"a":[1,-2.5e3,true,false,null,"\\u00e9\\n"]}', " [] ", '"x"', "0"]) expect(jsonErrorPosition(text)).toBeUndefined();
});

test("the first error is located by line and column", () => {
  expect(jsonErrorPosition('{"a":1,}')).toEqual({ line: 1, column: 8 });
  expect(jsonErrorPosition('{\n  "a": tru\n}')).toEqual({ line: 2, column: 8 });
  expect(jsonErrorPosition('{"a": [1, 2')).toEqual({ line: 1, column: 12 });
  expect(jsonErrorPosition('{"a": 01}')).toEqual({ line: 1, column: 8 });
  expect(jsonErrorPosition("{} x")).toEqual({ line: 1, column: 4 });
  expect(jsonErrorPosition("")).toEqual({ line: 1, column: 1 });
});

test("a document is parsed, or refused with the source, line and column and the given code", () => {
  expect(parseJsonDocument('[{"name":"a"}]', "tools.json", "INPUT_INVALID")).toEqual([{ name: "a" }]);
  expect(() => parseJsonDocument('[\n  {"name": "a",}\n]', "tools.json", "INPUT_INVALID")).toThrow(
    expect.objectContaining({ code: "INPUT_INVALID", message: "tools.json:2:16: invalid JSON (Property name must be a string literal)", hint: "fix the JSON syntax at that position" }),
  );
  expect(() => parseJsonDocument('{"type":', "inline schema", "SCHEMA_INVALID")).toThrow(expect.objectContaining({ code: "SCHEMA_INVALID", message: "inline schema:1:9: invalid JSON (Unexpected EOF)" }));
});
