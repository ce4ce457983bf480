/**
 * `cachet schema check` end to end through the CLI entry (source, not the
 * compiled binary): stdout carries the wire schema or the violations, the
 * exit code says which.
 */
import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const main = join(import.meta.dir, "../../src/cli/main.ts");
const fixtures = join(import.meta.dir, "../fixtures/schemas");

function cachet(...args: string[]) {
  const run = Bun.spawnSync([process.execPath, main, ...args], { env: { ...process.env, CACHET_HOME: mkdtempSync(join(tmpdir(), "cachet-home-")), NO_COLOR: "1" } });
  return { code: run.exitCode, stdout: run.stdout.toString(), stderr: run.stderr.toString() };
}

test("a schema within the contract prints its wire form and exits 0", () => {
  const run = cachet("schema", "check", join(fixtures, "nested-nullable-object.json"), "--provider", "openai", "--json");
  expect(run.code).toBe(0);
  expect(JSON.parse(run.stdout)).toEqual({
    provider: "openai",
    ok: true,
    strict: true,
    schema: {
      additionalProperties: false,
      properties: { address: { additionalProperties: false, properties: { city: { type: "string" } }, required: ["city"], type: ["object", "null"] } },
      required: ["address"],
      type: "object",
    },
    violations: [],
  });
});

test("violations are listed with their paths on stdout and the exit code is 3", () => {
  const run = cachet("schema", "check", join(fixtures, "impossible-not-branch.json"), "--provider", "openai");
  expect(run.code).toBe(3);
  expect(run.stdout).toBe('$.properties.price.anyOf[0].anyOf[0]: "not" is not supported by openai strict mode\n  hint: remove it: strict mode cannot express negation (state the constraint in "description")\n');
  expect(run.stderr).toBe(`cachet: ${join(fixtures, "impossible-not-branch.json")}: 1 violation of the openai structured-output contract\n  hint: fix the paths listed on stdout\n`);
});

test("a schema that is no valid JSON Schema is named with its path in the schema, before any contract is checked", () => {
  const run = cachet("schema", "check", '{"type":"object","properties":{"tags":{"type":"array","items":{"type":"strng"}}}}', "--provider", "gemini");
  expect(run.code).toBe(3);
  expect(run.stdout).toBe("");
  expect(run.stderr).toBe(
    'cachet: inline schema: $.properties.tags.items.type: must be equal to one of the allowed values ("array", "boolean", "integer", "null", "number", "object", "string")\n  hint: fix the value at that path: JSON Schema (2020-12) does not allow it there\n',
  );
});

test("an unknown provider is a usage error", () => {
  const run = cachet("schema", "check", "{}", "--provider", "acme");
  expect(run.code).toBe(2);
  expect(run.stdout).toBe("");
});
