/**
 * The scenario file format: what validates, and the one-line errors that
 * name the file and the JSON path of the first problem.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDuration } from "../../src/duration.ts";
import { loadScenario, parseScenario } from "../../src/probe/scenario.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-probe-scenario-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const minimal = { models: ["anthropic/claude-sonnet-4-6"], steps: [{ user: "hi" }] };

function errorOf(data: unknown): string {
  try {
    parseScenario(data, join(dir, "s.json"));
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("expected an error");
}

describe("parseScenario", () => {
  test("reads files relative to the scenario, merges stdin like the run command, keeps step paths", () => {
    file("input.txt", "line 1\nline 2");
    file("rules.md", "Be brief.\n");
    file("out.txt", "result {{i}}\n");
    const s = parseScenario(
      {
        models: ["anthropic/claude-sonnet-4-6", "openai/gpt-5.1"],
        cache: "both",
        system: ["You help.", { file: "rules.md" }],
        answers: [{ tool_calls: [{ name: "read", arguments: { path: "a" } }] }],
        steps: [{ user: "summarise", stdin: "input.txt" }, { repeat: { times: 3, steps: [{ tool_result: { file: "out.txt" } }, { advance_clock: "1h30m" }] } }],
      },
      join(dir, "s.json"),
    );
    expect(s.name).toBe("s.json");
    expect(s.cache).toEqual(["auto", "off"]);
    expect(s.system).toEqual(["You help.", "Be brief.\n"]);
    expect(s.answers).toEqual([{ tool_calls: [{ name: "read", arguments: '{"path":"a"}' }] }]);
    expect(s.steps[0]).toEqual({ at: "steps[0]", kind: "user", prompt: "line 1\nline 2\n\nsummarise", role: "probe" });
    const repeat = s.steps[1]!;
    if (repeat.kind !== "repeat") throw new Error("expected a repeat");
    expect(repeat.times).toBe(3);
    expect(repeat.steps[0]).toEqual({ at: "steps[1].repeat.steps[0]", kind: "tool_result", id: "last", content: "result {{i}}\n", isError: false, role: "probe" });
    expect(repeat.steps[1]).toEqual({ at: "steps[1].repeat.steps[1]", kind: "advance_clock", ms: 5_400_000, text: "1h30m" });
  });

  test("an unknown key is named with its full path", () => {
    expect(errorOf({ ...minimal, steps: [{ user: "a" }, { tool_result: { conten: "x" } }] })).toBe(`scenario ${join(dir, "s.json")}: steps[1].tool_result.conten: unknown key`);
    expect(errorOf({ ...minimal, modles: [] })).toContain(": modles: unknown key");
  });

  test("wrong types, missing fields and bad values name their path", () => {
    // No models is allowed (cachet probe --model M names them); an empty list is not.
    expect(parseScenario({ steps: [{ user: "a" }] }, join(dir, "s.json")).models).toEqual([]);
    expect(errorOf({ ...minimal, models: [] })).toContain(": models: name at least one provider/model, or leave the key out and pass --model");
    expect(errorOf({ ...minimal, models: ["claude"] })).toContain(": models[0]: expected a provider/model id");
    expect(errorOf({ ...minimal, steps: [{ user: 3 }] })).toContain(": steps[0].user: Expected string but received 3");
    expect(errorOf({ ...minimal, steps: [{ say: "a" }] })).toContain(": steps[0]: unknown step: expected one of the keys");
    expect(errorOf({ ...minimal, steps: [{ advance_clock: "soon" }] })).toContain(": steps[0].advance_clock: expected a duration");
    expect(errorOf({ ...minimal, steps: [{ repeat: { times: 0, steps: [{ user: "a" }] } }] })).toContain(": steps[0].repeat.times: expected at least 1");
    expect(errorOf({ ...minimal, steps: [{ tool_result: { content: "a", file: "b" } }] })).toContain(": steps[0].tool_result: give exactly one of content or file");
    expect(errorOf({ ...minimal, steps: [{ user: "a", stdin: "missing.txt" }] })).toContain(": steps[0].stdin: missing.txt: no such file");
    expect(errorOf({ ...minimal, answers: [{ tool_calls: [{ name: "x", arguments: "[1]" }] }] })).toContain(": answers[0].tool_calls[0].arguments: expected a JSON object");
  });

  test("a referenced file that is not UTF-8 is an error naming the byte offset", () => {
    file("bad.txt", new Uint8Array([0x61, 0xff, 0x62]));
    expect(errorOf({ ...minimal, steps: [{ user: "a", stdin: "bad.txt" }] })).toContain(": steps[0].stdin: bad.txt is not valid UTF-8: invalid byte 0xff at offset 1");
  });
});

describe("loadScenario", () => {
  test("unreadable and malformed files give one line naming the file", () => {
    expect(() => loadScenario(join(dir, "nope.json"))).toThrow(`scenario ${join(dir, "nope.json")}: no such file`);
    const broken = file("broken.json", "{ models: [");
    expect(() => loadScenario(broken)).toThrow(new RegExp(`^scenario ${broken}: not valid JSON`));
  });
});

test("parseDuration reads ms, s, m, h, d and their sums", () => {
  expect(parseDuration("250ms")).toBe(250);
  expect(parseDuration("6m")).toBe(360_000);
  expect(parseDuration("1h30m")).toBe(5_400_000);
  expect(parseDuration("1.5s")).toBe(1_500);
  expect(parseDuration("6")).toBeUndefined();
  expect(parseDuration("6 m")).toBeUndefined();
});
