/**
 * Where a JSON text stops being valid JSON, as line and column: the runtime's
 * JSON.parse names what it expected but not where, and a file the user wrote
 * (`--schema`, `--tools`) needs both in its error message.
 */
import { CachetError, type ErrorCode } from "../errors.ts";

/** A 1-based position in a text. */
export interface TextPosition {
  line: number;
  column: number;
}

/**
 * The position of the first syntax error in `text`, or undefined when `text`
 * is valid JSON. A small recursive-descent scan (RFC 8259 grammar). Pure.
 */
export function jsonErrorPosition(text: string): TextPosition | undefined {
  let at = 0;
  const fail = (): never => {
    throw new ScanStop(at);
  };
  const space = (): void => {
    while (at < text.length && " \t\n\r".includes(text[at]!)) at++;
  };
  const literal = (word: string): void => {
    if (text.startsWith(word, at)) at += word.length;
    else fail();
  };
  const string = (): void => {
    at++;
    while (at < text.length && text[at] !== "\"") {
      const code = text.charCodeAt(at);
      if (code < 0x20) fail();
      if (text[at] === "\\") {
        at++;
        if (text[at] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(at + 1, at + 5))) fail();
          at += 4;
        } else if (!"\"\\/bfnrt".includes(text[at] ?? "x")) fail();
      }
      at++;
    }
    if (at >= text.length) fail();
    at++;
  };
  const number = (): void => {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(at));
    if (match === null || match[0] === "" || match[0] === "-") fail();
    at += match![0].length;
  };
  const value = (depth: number): void => {
    if (depth > 512) fail();
    space();
    const char = text[at];
    if (char === "{") {
      at++;
      space();
      if (text[at] === "}") return void at++;
      for (;;) {
        space();
        if (text[at] !== "\"") fail();
        string();
        space();
        if (text[at] !== ":") fail();
        at++;
        value(depth + 1);
        space();
        if (text[at] === ",") at++;
        else if (text[at] === "}") return void at++;
        else fail();
      }
    }
    if (char === "[") {
      at++;
      space();
      if (text[at] === "]") return void at++;
      for (;;) {
        value(depth + 1);
        space();
        if (text[at] === ",") at++;
        else if (text[at] === "]") return void at++;
        else fail();
      }
    }
    if (char === "\"") return string();
    if (char === "t") return literal("true");
    if (char === "f") return literal("false");
    if (char === "n") return literal("null");
    return number();
  };
  try {
    value(0);
    space();
    if (at < text.length) fail();
    return undefined;
  } catch (error) {
    if (!(error instanceof ScanStop)) throw error;
    return positionOf(text, error.offset);
  }
}

/**
 * Parses a JSON document the user wrote.
 * @param source what the message names: a file path, or e.g. "inline schema"
 * @param code the error code of a syntax error (SCHEMA_INVALID, INPUT_INVALID: exit 3)
 * @returns the parsed value, of any JSON type
 * @throws CachetError `code` reading `SOURCE:LINE:COLUMN: invalid JSON (what the parser expected)`,
 *   1-based, as editors and compilers locate a position
 */
export function parseJsonDocument(text: string, source: string, code: ErrorCode): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const position = jsonErrorPosition(text);
    const where = position === undefined ? source : `${source}:${position.line}:${position.column}`;
    throw new CachetError(code, `${where}: invalid JSON (${(error as Error).message.replace(/^JSON Parse error: /, "")})`, {
      hint: "fix the JSON syntax at that position",
      cause: error,
    });
  }
}

class ScanStop {
  constructor(readonly offset: number) {}
}

function positionOf(text: string, offset: number): TextPosition {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}
