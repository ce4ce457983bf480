import { expect, test } from "bun:test";
import { jsonErrorPosition } from "./json-error-position.ts";

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
