/**
 * Contract suite of the schema corpus (test/fixtures/schemas): for every
 * provider, each schema either becomes a wire schema that an independent
 * reading of the provider's documented rules accepts, or fails locally with
 * JSON paths that point into the schema. Answers round-trip: a value valid
 * under the wire schema maps back (fromWireAnswer) to one valid under the
 * user's schema.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SCHEMA_TARGETS, checkSchema, fromWireAnswer, toWireSchema, validateAnswer } from "../../src/schema/index.ts";
import { canonicalJson } from "../../src/wire/canonical-json.ts";
import { assertProviderAccepts } from "./schema-provider-rules.ts";

type Json = Record<string, unknown>;
const dir = join(import.meta.dir, "../fixtures/schemas");
const expectations = JSON.parse(readFileSync(join(dir, "expectations.json"), "utf8")) as Record<string, Record<string, "ok" | string[]>>;
const corpus = readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "expectations.json").sort().map((f) => ({
  name: f.replace(/\.json$/, ""),
  schema: JSON.parse(readFileSync(join(dir, f), "utf8")) as Json,
}));

test("the corpus has ~20+ schemas, each with an expectation per provider, and both outcomes occur for every provider", () => {
  expect(corpus.length).toBeGreaterThanOrEqual(20);
  expect(Object.keys(expectations).sort()).toEqual(corpus.map((c) => c.name));
  for (const target of SCHEMA_TARGETS) {
    const outcomes = corpus.map((c) => expectations[c.name]![target]);
    expect(outcomes.filter((o) => o === "ok").length).toBeGreaterThan(5);
    expect(outcomes.filter((o) => o !== "ok").length).toBeGreaterThan(2);
  }
});

for (const target of SCHEMA_TARGETS) {
  describe(`${target} contract`, () => {
    for (const { name, schema } of corpus) {
      const expected = expectations[name]![target]!;
      if (expected === "ok") {
        test(`${name}: translates to a wire schema ${target} accepts, deterministically`, () => {
          const { wire, violations } = checkSchema(target, schema);
          expect(violations).toEqual([]);
          expect(() => assertProviderAccepts(target, wire!.schema)).not.toThrow();
          expect(wire!.strict).toBe(true);
          expect(canonicalJson(toWireSchema(target, reversedKeys(schema) as Json).schema)).toBe(JSON.stringify(wire!.schema));
        });
        test(`${name}: answers round-trip through fromWireAnswer to the user's schema`, async () => {
          const wire = toWireSchema(target, schema).schema;
          for (const preferNull of [true, false]) {
            const answer = sample(wire, wire, 0, preferNull);
            expect(await validateAnswer(wire, answer)).toEqual({ ok: true });
            const mapped = fromWireAnswer(target, schema, answer);
            expect(await validateAnswer(schema, mapped)).toEqual({ ok: true });
          }
        });
      } else {
        test(`${name}: fails locally with paths into the schema`, () => {
          const { wire, violations } = checkSchema(target, schema);
          expect(wire).toBeUndefined();
          expect(violations.map((v) => v.path)).toEqual(expected);
          for (const v of violations) {
            expect(resolvePath(schema, v.path)).not.toBeUndefined();
            expect(v.message.length).toBeGreaterThan(10);
            expect(v.hint?.length ?? 0).toBeGreaterThan(5);
          }
          expect(() => toWireSchema(target, schema)).toThrow(`${expected[0]}: `);
          // The same schema sent as written would be refused by the provider too.
          expect(() => assertProviderAccepts(target, schema)).toThrow();
        });
      }
    }
  });
}

test("strict answers of the optional-properties case lose their nulls and validate", async () => {
  const schema = corpus.find((c) => c.name === "optional-properties")!.schema;
  const wire = toWireSchema("openai", schema).schema;
  const answer = sample(wire, wire, 0, true);
  expect(answer).toEqual({ organizations: [{ name: "x", roles: null, division: null }] });
  expect(await validateAnswer(schema, answer)).toEqual({ ok: false, errors: ["$.organizations[0].roles: must be array", "$.organizations[0].division: must be string"] });
  const mapped = fromWireAnswer("openai", schema, answer);
  expect(mapped).toEqual({ organizations: [{ name: "x" }] });
  expect(await validateAnswer(schema, mapped)).toEqual({ ok: true });
});

/** A value valid under `schema`: nulls wherever allowed (`preferNull`) or the first non-null choice. */
function sample(schema: unknown, root: Json, depth: number, preferNull: boolean): unknown {
  let s = schema as Json;
  while (typeof s.$ref === "string") s = s.$ref === "#" ? root : (s.$ref.slice(2).split("/").reduce<unknown>((n, k) => (n as Json)[k], root) as Json);
  if (Array.isArray(s.anyOf)) {
    const branches = s.anyOf as Json[];
    const nullBranch = branches.find((b) => b.type === "null");
    if (nullBranch && (preferNull || depth > 3)) return null;
    return sample(branches.find((b) => b.type !== "null"), root, depth + 1, preferNull);
  }
  if ("const" in s) return s.const;
  const types = Array.isArray(s.type) ? (s.type as string[]) : s.type === undefined ? [] : [s.type as string];
  if (Array.isArray(s.enum)) return preferNull && s.enum.includes(null) ? null : s.enum.find((v) => v !== null);
  if (types.includes("null") && (preferNull || depth > 3)) return null;
  const type = types.find((t) => t !== "null") ?? (s.properties ? "object" : "string");
  switch (type) {
    case "object":
      return Object.fromEntries(Object.entries((s.properties ?? {}) as Json).map(([k, v]) => [k, sample(v, root, depth + 1, preferNull)]));
    case "array": {
      const count = depth > 3 ? ((s.minItems as number | undefined) ?? 0) : Math.max((s.minItems as number | undefined) ?? 1, 1);
      return Array.from({ length: count }, () => sample(s.items, root, depth + 1, preferNull));
    }
    case "integer":
    case "number":
      return (s.minimum as number | undefined) ?? 1;
    case "boolean":
      return true;
    default: {
      const byFormat: Record<string, string> = {
        "date-time": "2026-01-02T03:04:05Z", date: "2026-01-02", time: "03:04:05Z", email: "a@example.com", uri: "https://example.com/",
        uuid: "123e4567-e89b-12d3-a456-426614174000", hostname: "example.com", ipv4: "127.0.0.1", ipv6: "::1", duration: "P1D",
      };
      if (typeof s.format === "string") return byFormat[s.format];
      if (typeof s.pattern === "string") return ["ABC1", "x"].find((c) => new RegExp(s.pattern as string, "u").test(c));
      return "x";
    }
  }
}

/** The value at a `$.a.b[0]["c d"]` path, or undefined. */
function resolvePath(root: unknown, path: string): unknown {
  const steps = [...path.slice(1).matchAll(/\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)].map((m) => m[1] ?? (m[2] !== undefined ? Number(m[2]) : JSON.parse(m[3]!)));
  return steps.reduce<unknown>((node, step) => (node === undefined || node === null ? undefined : (node as Record<string | number, unknown>)[step]), root);
}

/**
 * A deep copy with the keywords of every schema in reverse order. Property
 * order is kept: it is meaning (the order the answer's keys come in), not form.
 */
function reversedKeys(value: unknown, keepOrder = false): unknown {
  if (Array.isArray(value)) return value.map((item) => reversedKeys(item));
  if (value === null || typeof value !== "object") return value;
  const keys = keepOrder ? Object.keys(value) : Object.keys(value).reverse();
  return Object.fromEntries(keys.map((k) => [k, reversedKeys((value as Json)[k], !keepOrder && k === "properties")]));
}
