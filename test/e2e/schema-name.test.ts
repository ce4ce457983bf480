/**
 * The output schema's name on the wire, and the session's stable prefix, come
 * from the schema's content only: the same schema given as another file, as
 * /dev/stdin or inline is no prefix change and the same request; a different
 * schema is one. A session stored when the name came from the file name
 * continues on what it stored.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { hashJson } from "../../src/wire/hash.ts";
import { cleanHomes, freshHome } from "./harness.ts";
import { LARGE_SYSTEM, against, type EmulatorProcess, exportSession, ok, startEmulatorProcess, tempFile } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, population: { type: "integer" } },
  required: ["city", "population"],
  additionalProperties: false,
};
const TEXT = JSON.stringify(SCHEMA);

/** Each of the two wires' models, with a fresh home and an emulator process serving it (stopped after). */
function perModel(title: string, body: (model: string, home: string, emulator: EmulatorProcess, target: { args: string[]; env: Record<string, string> }) => Promise<void>): void {
  describe(title, () => {
    for (const model of ["openai/gpt-5", "anthropic/claude-sonnet-4-6"]) {
      test(
        model,
        async () => {
          const home = freshHome();
          const emulator = await startEmulatorProcess(home);
          try {
            await body(model, home, emulator, against(emulator, model));
          } finally {
            emulator.stop();
          }
        },
        60_000,
      );
    }
  });
}

/** The schema part of a request body: OpenAI's format (name included) or Anthropic's `output_config.format`. */
function wireSchema(body: Raw): Raw {
  const part = body.text?.format ?? body.response_format?.json_schema ?? body.output_config?.format;
  if (part === undefined) throw new Error(`no schema in ${JSON.stringify(Object.keys(body))}`);
  return part;
}

perModel("the schema is named and compared by its content, not by how it was given", async (model, home, emulator, { args, env }) => {
  const turn = (schema: string, prompt: string, stdin?: string) =>
    ok(["-m", model, ...args, "--session", "sco", "-s", LARGE_SYSTEM, "--schema", schema, prompt], { home, env, ...(stdin === undefined ? {} : { stdin }) });
  const first = await turn(tempFile("schema.json", TEXT), "Turn 1.");
  expect(first.stderr).not.toContain("stable prefix changed");
  for (const [schema, stdin] of [[tempFile("s2.json", TEXT), undefined], ["/dev/stdin", TEXT], [TEXT, undefined]] as const) {
    const again = await turn(schema, `Turn with ${schema.startsWith("{") ? "inline" : schema}.`, stdin);
    expect(again.stderr).not.toContain("stable prefix changed");
  }
  const { requests } = await exportSession(home, "sco");
  expect(requests.map((r) => r.prefixVersion)).toEqual([1, 1, 1, 1]);
  for (const r of requests) {
    const why = JSON.parse((await ok(["why", r.id, "--json"], { home })).stdout) as Raw;
    expect(why.divergence).toBeNull();
  }
  const sent = (await emulator.bodies()).map(wireSchema);
  expect(sent).toHaveLength(4);
  for (const part of sent) expect(JSON.stringify(part)).toBe(JSON.stringify(sent[0]));
  if (model.startsWith("openai/")) expect(sent[0]!.name).toBe("output");

  // A really different schema is a change, reported and sent.
  const changed = await turn(JSON.stringify({ ...SCHEMA, required: ["city"] }), "Turn 5.");
  expect(changed.stderr).toContain("stable prefix changed (schema changed)");
  expect((await exportSession(home, "sco")).requests.at(-1)!.prefixVersion).toBe(2);
  expect(JSON.stringify(wireSchema((await emulator.bodies()).at(-1)!))).not.toBe(JSON.stringify(sent[0]));
});

perModel("a session stored when the schema was named after its file", async (model, home, emulator, { args, env }) => {
  const schemaFile = tempFile("invoice.json", TEXT);
  const turn = (prompt: string) => ok(["-m", model, ...args, "--session", "old", "-s", LARGE_SYSTEM, "--schema", schemaFile, prompt], { home, env });
  await turn("Turn 1.");
  // What an older cachet stored: the name from the file, the name in the fingerprint.
  const db = new Database(join(home, "cachet.db"));
  try {
    const row = db.query("SELECT prefix FROM prefixes").get() as { prefix: string };
    const prefix = JSON.parse(row.prefix) as Raw;
    prefix.schema.name = "invoice";
    prefix.fingerprint = hashJson({ system: prefix.system.map((s: Raw) => s.text), tools: prefix.tools, schema: prefix.schema });
    expect(db.query("UPDATE prefixes SET fingerprint = ?, prefix = ?").run(prefix.fingerprint, JSON.stringify(prefix)).changes).toBe(1);
  } finally {
    db.close();
  }
  await turn("Turn 2.");
  const next = await turn("Turn 3.");
  expect(next.stderr).not.toContain("stable prefix changed");
  expect((await exportSession(home, "old")).requests.map((r) => r.prefixVersion)).toEqual([1, 1, 1]);
  const sent = (await emulator.bodies()).map(wireSchema);
  // The stored prefix is what is rendered: the name it holds is still the one sent.
  if (model.startsWith("openai/")) expect(sent.map((s) => s.name)).toEqual(["output", "invoice", "invoice"]);
  else expect(JSON.stringify(sent[2])).toBe(JSON.stringify(sent[0]));
});
