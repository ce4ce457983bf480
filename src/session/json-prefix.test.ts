import { describe, expect, test } from "bun:test";
import { closeJsonPrefix } from "./json-prefix.ts";

describe("closeJsonPrefix", () => {
  const whole = JSON.stringify([{ type: "text", text: 'a "q" \\ é 😀 \n z' }, { type: "tool_use", id: "t1", name: "calc", arguments: "{\"x\":[1,2]}" }, { n: 12.5, ok: true, v: null }]);

  test("every cut of a JSON text parses, and keeps what its prefix holds", () => {
    for (let at = 1; at <= whole.length; at++) {
      const closed = closeJsonPrefix(whole.slice(0, at));
      const value = JSON.parse(closed) as unknown;
      expect(Array.isArray(value)).toBe(true);
      // What was kept is a prefix of the text, up to the closing quote and brackets added.
      const kept = closed.replace(/"?[\]}]*$/, "");
      expect(whole.startsWith(kept)).toBe(true);
    }
  });

  test("a string value cut short ends where the prefix ends; an escape cut short is dropped", () => {
    expect(JSON.parse(closeJsonPrefix('[{"type":"text","text":"hello wor'))).toEqual([{ type: "text", text: "hello wor" }]);
    expect(JSON.parse(closeJsonPrefix('[{"text":"ab\\'))).toEqual([{ text: "ab" }]);
    expect(JSON.parse(closeJsonPrefix('[{"text":"ab\\\\'))).toEqual([{ text: "ab\\" }]);
    expect(JSON.parse(closeJsonPrefix('[{"text":"ab\\u00'))).toEqual([{ text: "ab" }]);
    expect(JSON.parse(closeJsonPrefix('[{"text":"ab\\u00e9'))).toEqual([{ text: "abé" }]);
  });

  test("a key, or a member cut before its value, is left out", () => {
    expect(JSON.parse(closeJsonPrefix('[{"type":"text","te'))).toEqual([{ type: "text" }]);
    expect(JSON.parse(closeJsonPrefix('[{"type":"text","text":'))).toEqual([{ type: "text" }]);
    expect(JSON.parse(closeJsonPrefix('[{"n":12'))).toEqual([{}]);
    expect(JSON.parse(closeJsonPrefix('[1,2'))).toEqual([1]);
  });

  test("a whole text is itself", () => {
    expect(closeJsonPrefix(whole)).toBe(whole);
  });
});
