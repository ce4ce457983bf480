/**
 * Issue 8 acceptance through the compiled binary against the emulator: a
 * 10-turn session with `--schema` keeps 100% cache efficiency after the first
 * turn; stdout is the validated JSON answer; an answer that does not match is
 * a clear error with a non-zero exit and the raw answer kept in the session.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cachet, cleanHomes, freshHome } from "./harness.ts";
import { LARGE_SYSTEM, exportSession, ok, tempFile } from "./session-kit.ts";

afterAll(cleanHomes);

type Raw = Record<string, any>;

/** One envelope schema for every stage of a pipeline (`confidence` is optional). */
const SCHEMA = {
  type: "object",
  properties: {
    stage: { type: "string", enum: ["extract", "classify", "summarise"] },
    items: { type: "array", items: { type: "string" } },
    confidence: { type: "number" },
  },
  required: ["stage", "items"],
  additionalProperties: false,
};

const STAGES = ["extract", "classify", "summarise"] as const;

/** The answer of turn `i` as the model sends it, and as cachet must print it. */
function answer(i: number, strictNulls: boolean): { wire: Raw; printed: Raw } {
  const printed: Raw = { stage: STAGES[i % 3], items: Array.from({ length: (i % 4) + 1 }, (_, k) => `item-${i}-${k}`) };
  // Every third answer leaves the optional property out; a strict provider sends it as null.
  if (i % 3 !== 2) printed.confidence = Math.round((0.5 + i / 40) * 1000) / 1000;
  const wire = i % 3 === 2 && strictNulls ? { ...printed, confidence: null } : printed;
  return { wire, printed };
}

describe("--schema over a 10-turn session (issue 8)", () => {
  for (const [model, strictNulls] of [
    ["anthropic/claude-sonnet-4-6", false],
    ["openai/gpt-5", true],
  ] as const) {
    test(
      model,
      async () => {
        const home = freshHome();
        const schema = tempFile("schema.json", JSON.stringify(SCHEMA));
        const answers = Array.from({ length: 10 }, (_, i) => answer(i, strictNulls));
        const script = tempFile(
          "script.json",
          JSON.stringify([...answers.map((a) => ({ text: JSON.stringify(a.wire) })), { text: '{"stage":"review","items":"none"}' }]),
        );
        const env = { CACHET_EMULATOR_SCRIPT: script };
        for (let i = 0; i < 10; i++) {
          const first = i === 0 ? ["-m", model, "--system", LARGE_SYSTEM, "--schema", schema] : ["-c"];
          const r = await ok([...first, "--emulate", "-q", `Stage ${i + 1}: ${STAGES[i % 3]} the next batch.`], { home, env });
          expect(JSON.parse(r.stdout)).toEqual(answers[i]!.printed);
        }
        const { requests } = await exportSession(home);
        expect(requests).toHaveLength(10);
        for (const r of requests.slice(1)) {
          expect(r.cacheableMax).toBeGreaterThan(2_000);
          expect(r.usage.cacheRead).toBe(r.cacheableMax);
        }
        expect(new Set(requests.map((r) => r.prefixVersion))).toEqual(new Set([1]));
        const stats = JSON.parse((await ok(["stats", "--json"], { home })).stdout) as Raw;
        expect(stats.total.cacheEfficiency).toBe(1);

        // An answer that does not match: non-zero exit, one clear message, nothing on stdout, the raw answer stored.
        const bad = await cachet(["-c", "--emulate", "Stage 11: review."], { home, env });
        expect(bad.code).not.toBe(0);
        expect(bad.stdout).toBe("");
        expect(bad.stderr).toContain("the answer does not match the schema");
        expect(bad.stderr).toContain("$.stage");
        expect(bad.stderr).toContain("cachet export");
        const after = await exportSession(home);
        const last = after.messages.at(-1)!;
        expect(last.role).toBe("assistant");
        expect(last.content[0].text).toBe('{"stage":"review","items":"none"}');
        expect(after.messages).toHaveLength(22);

        // Another schema on the continued session is a reported prefix change.
        const other = tempFile("other.json", JSON.stringify({ ...SCHEMA, required: ["stage"] }));
        const changed = await cachet(["-c", "--emulate", "--schema", other, "Stage 12."], { home, env });
        expect(changed.stderr).toContain("stable prefix changed (schema changed)");
      },
      60_000,
    );
  }
});
