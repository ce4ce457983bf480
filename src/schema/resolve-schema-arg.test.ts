import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CachetError } from "../errors.ts";
import { resolveSchemaArg, schemaName, withSchemaSource } from "./resolve-schema-arg.ts";
import { SchemaContractError } from "./wire-schema.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-schema-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("inline JSON starting with { is the schema itself, named 'output' unless it has a title", async () => {
  expect(await resolveSchemaArg(' {"type":"object","properties":{"a":{"type":"string"}}}')).toEqual({ name: "output", schema: { type: "object", properties: { a: { type: "string" } } } });
  expect((await resolveSchemaArg('{"title":"Order summary (v2)","type":"object","properties":{}}')).name).toBe("Order_summary_v2");
});

test("a file is read and named from its content alone: the same schema under two file names or inline is the same", async () => {
  const text = '{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}';
  const first = join(dir, "invoice lines.schema.json");
  const second = join(dir, "s2.json");
  writeFileSync(first, text);
  writeFileSync(second, text);
  const expected = { name: "output", schema: { type: "object", properties: { total: { type: "number" } }, required: ["total"] } };
  expect(await resolveSchemaArg(first)).toEqual(expected);
  expect(await resolveSchemaArg(second)).toEqual(expected);
  expect(await resolveSchemaArg(text)).toEqual(expected);
  const titled = join(dir, "other-file.json");
  writeFileSync(titled, '{"title":"invoice","type":"object","properties":{}}');
  expect((await resolveSchemaArg(titled)).name).toBe("invoice");
});

test("a syntax error names the file, line and column", async () => {
  const file = join(dir, "broken.json");
  writeFileSync(file, '{\n  "type": "object",\n  "properties": {,}\n}');
  await expect(resolveSchemaArg(file)).rejects.toMatchObject({ code: "SCHEMA_INVALID", message: expect.stringContaining(`${file}:3:18: invalid JSON`) });
});

test("missing files, non-objects and invalid schemas are SCHEMA_INVALID", async () => {
  await expect(resolveSchemaArg(join(dir, "nope.json"))).rejects.toMatchObject({ code: "SCHEMA_INVALID", message: `schema file ${join(dir, "nope.json")}: no such file` });
  const array = join(dir, "array.json");
  writeFileSync(array, "[1]");
  await expect(resolveSchemaArg(array)).rejects.toMatchObject({ code: "SCHEMA_INVALID", message: `${array}: a JSON Schema must be a JSON object, found an array` });
  await expect(resolveSchemaArg('{"type":"object","properties":{"a":{"type":"strin"}}}')).rejects.toMatchObject({ code: "SCHEMA_INVALID", message: expect.stringContaining("inline schema: $.properties.a.type: must be equal to one of the allowed values (") });
  const invalid = join(dir, "invalid.json");
  writeFileSync(invalid, '{"type":"object","properties":{"total":{"type":"number","minimum":"0"}}}');
  await expect(resolveSchemaArg(invalid)).rejects.toMatchObject({ code: "SCHEMA_INVALID", message: `${invalid}: $.properties.total.minimum: must be number` });
});

test("with a target, the provider contract is checked up front, the schema named", async () => {
  await expect(resolveSchemaArg('{"type":"array","items":{"type":"string"}}', { target: "openai" })).rejects.toMatchObject({ code: "SCHEMA_CONTRACT", message: 'inline schema: $: the root must be "type": "object" in openai strict mode (found "array")' });
  const file = join(dir, "not-strict.json");
  writeFileSync(file, '{"type":"object","properties":{"n":{"type":"integer","not":{"const":0}}}}');
  await expect(resolveSchemaArg(file, { target: "openai" })).rejects.toMatchObject({ code: "SCHEMA_CONTRACT", message: `${file}: $.properties.n: "not" is not supported by openai strict mode` });
  expect((await resolveSchemaArg('{"type":"array","items":{"type":"string"}}', { target: "gemini" })).name).toBe("output");
});

test("names are cut to the provider pattern", () => {
  expect(schemaName("x".repeat(80))).toBe("x".repeat(64));
  expect(schemaName("  ")).toBe("output");
  expect(schemaName("été/plan")).toBe("t_plan");
});

test("a contract error raised without its source is re-made naming the --schema file, in the message and the hint's command", () => {
  const violations = [{ path: "$.properties.n", message: '"not" is not supported by openai strict mode', hint: "remove it" }];
  const raised = new SchemaContractError("openai", violations);
  expect(raised.message).toBe('$.properties.n: "not" is not supported by openai strict mode');
  const named = withSchemaSource(raised, "/tmp/order schema.json") as SchemaContractError;
  expect([named.code, named.message, named.hint, named.violations]).toEqual([
    "SCHEMA_CONTRACT",
    '/tmp/order schema.json: $.properties.n: "not" is not supported by openai strict mode',
    "remove it; `cachet schema check '/tmp/order schema.json' --provider openai` lists every violation",
    violations,
  ]);
  const inline = withSchemaSource(raised, '{"type":"object"}') as SchemaContractError;
  expect([inline.message, inline.hint]).toEqual(['inline schema: $.properties.n: "not" is not supported by openai strict mode', "remove it; `cachet schema check FILE --provider openai` lists every violation"]);
  // Named once; any other error is left as it is.
  expect(withSchemaSource(named, "other.json")).toBe(named);
  const other = new CachetError("PROVIDER_HTTP", "HTTP 500");
  expect(withSchemaSource(other, "order.json")).toBe(other);
});
