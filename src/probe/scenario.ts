/**
 * The probe's scenario file: a JSON document naming the models, the stable
 * prefix (system, tools, output schema), optional scripted answers for the
 * emulator and a list of steps (user turns, scripted tool results, overlay
 * changes, explicit prefix changes, forks, clock advances, repeats).
 *
 * Validated with valibot; unknown keys are errors. Every error is one line
 * naming the file and the JSON path of the problem (e.g.
 * `steps[2].tool_result.conten`). Files named in a scenario (stdin, system
 * parts, tool outputs) are read relative to the scenario's directory, as raw
 * strict UTF-8 bytes, so the same file always gives the same request bytes.
 */
import { dirname, resolve } from "node:path";
import * as v from "valibot";
import type { OutputSchema, ToolDefinition } from "../context/types.ts";
import { CachetError } from "../errors.ts";
import { parseDuration } from "../duration.ts";
import { readTextFileSync } from "../input/read-input.ts";
import { mergeInput } from "../run/stdin.ts";
import { outputSchemaName } from "../schema/index.ts";

/** A scripted emulator answer, in the shape of the emulator's script file (src/emulator/script.ts). */
export interface ScenarioAnswer {
  text?: string;
  thinking?: string;
  /** `arguments` is the JSON object text the emulator replays byte for byte. */
  tool_calls?: { name: string; arguments: string }[];
}

/** One step of a scenario, after validation (files read, defaults applied). */
export type ScenarioStep = { /** JSON path of the step in its file, e.g. `steps[3]`, for messages. */ at: string } & (
  | { kind: "user"; prompt: string; role: string }
  | { kind: "tool_result"; id: string; content: string; isError: boolean; prompt?: string; role: string }
  | { kind: "overlay"; text: string | undefined }
  | { kind: "system"; system: string[] }
  | { kind: "tools"; tools: ToolDefinition[] }
  | { kind: "schema"; schema: OutputSchema }
  | { kind: "fork"; role: string | undefined; steps: ScenarioStep[] }
  | { kind: "advance_clock"; ms: number; text: string }
  | { kind: "repeat"; times: number; steps: ScenarioStep[] }
);

/** A validated scenario. */
export interface Scenario {
  /** File name without directory, used as the scenario's name in reports. */
  name: string;
  description: string | undefined;
  /** `provider/model` ids, in file order; empty when the file names none (`cachet probe --model M` then must). */
  models: string[];
  /** Cache settings to run: the file's `cache` (default `auto`); `both` runs `auto` then `off`. */
  cache: ("auto" | "off")[];
  system: string[];
  tools: ToolDefinition[];
  schema: OutputSchema | undefined;
  answers: ScenarioAnswer[];
  steps: ScenarioStep[];
}

/** The calls' default role. */
export const PROBE_ROLE = "probe";

/**
 * Reads and validates a scenario file.
 * @throws CachetError INPUT_INVALID, one line naming `path` and the JSON path
 *   of the first problem (unreadable file, JSON syntax, unknown key, wrong
 *   type, unreadable or non-UTF-8 referenced file).
 */
export function loadScenario(path: string): Scenario {
  const text = readTextFileSync(path, { label: `scenario ${path}`, hint: "give the path of a scenario file (see README.md, Probing cache behaviour)" });
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new CachetError("INPUT_INVALID", `scenario ${path}: not valid JSON (${(error as Error).message})`, { hint: "fix the JSON syntax" });
  }
  return parseScenario(data, path);
}

/**
 * Validates a parsed scenario document. `source` names it in errors and its
 * directory anchors relative file paths.
 * @throws CachetError INPUT_INVALID (see {@link loadScenario}).
 */
export function parseScenario(data: unknown, source: string): Scenario {
  const top = check(TopSchema, data, source, []);
  const base = dirname(resolve(source));
  const ctx: Ctx = { source, base };
  const tools = (top.tools ?? []).map(toTool);
  const cache = top.cache ?? "auto";
  return {
    name: source.split(/[\\/]/).pop()!,
    description: top.description,
    models: top.models ?? [],
    cache: cache === "both" ? ["auto", "off"] : [cache],
    system: top.system === undefined ? [] : systemParts(top.system, ctx, ["system"]),
    tools,
    schema: top.schema === undefined ? undefined : toSchema(top.schema),
    answers: (top.answers ?? []).map((a) => ({
      ...(a.text !== undefined ? { text: a.text } : {}),
      ...(a.thinking !== undefined ? { thinking: a.thinking } : {}),
      ...(a.tool_calls ? { tool_calls: a.tool_calls.map((c) => ({ name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments) })) } : {}),
    })),
    steps: parseSteps(top.steps, ctx, ["steps"]),
  };
}

// ── schemas ───────────────────────────────────────────────────────────────

const ModelId = v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9._-]*\/\S+$/, "expected a provider/model id, e.g. anthropic/claude-sonnet-4-6"));
const FileRef = v.strictObject({ file: v.pipe(v.string(), v.minLength(1, "expected a file path")) });
const Text = v.union([v.string(), FileRef], "expected a string or {\"file\": PATH}");
const SystemSchema = v.union([Text, v.array(Text)], "expected a string, {\"file\": PATH}, or a list of them");
const ToolSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]{1,64}$/, "expected 1-64 letters, digits, _ or -")),
  description: v.optional(v.string()),
  parameters: v.record(v.string(), v.unknown()),
  strict: v.optional(v.boolean()),
});
const JsonSchema = v.record(v.string(), v.unknown());
const Role = v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]*$/, "expected a lower-case role name such as probe, subagent, summarizer"));
const AnswerSchema = v.strictObject({
  text: v.optional(v.string()),
  thinking: v.optional(v.string()),
  tool_calls: v.optional(
    v.array(
      v.strictObject({
        name: v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]{1,64}$/, "expected 1-64 letters, digits, _ or -")),
        arguments: v.union([v.record(v.string(), v.unknown()), v.pipe(v.string(), v.check(isJsonObjectText, "expected a JSON object (or its text)"))], "expected a JSON object (or its text)"),
      }),
    ),
  ),
});

const TopSchema = v.strictObject({
  description: v.optional(v.string()),
  models: v.optional(v.pipe(v.array(ModelId), v.minLength(1, "name at least one provider/model, or leave the key out and pass --model"))),
  cache: v.optional(v.picklist(["auto", "off", "both"], "expected auto, off or both")),
  system: v.optional(SystemSchema),
  tools: v.optional(v.array(ToolSchema)),
  schema: v.optional(JsonSchema),
  answers: v.optional(v.array(AnswerSchema)),
  steps: v.pipe(v.array(v.unknown()), v.minLength(1, "add at least one step")),
});

// One schema per step kind: the kind is the step's only key among these names.
const STEP_SCHEMAS = {
  user: v.strictObject({ user: v.string(), stdin: v.optional(v.pipe(v.string(), v.minLength(1))), role: v.optional(Role) }),
  tool_result: v.strictObject({
    tool_result: v.strictObject({
      id: v.optional(v.pipe(v.string(), v.minLength(1))),
      content: v.optional(v.string()),
      file: v.optional(v.pipe(v.string(), v.minLength(1))),
      is_error: v.optional(v.boolean()),
    }),
    user: v.optional(v.string()),
    role: v.optional(Role),
  }),
  overlay: v.strictObject({ overlay: v.nullable(Text) }),
  system: v.strictObject({ system: SystemSchema }),
  tools: v.strictObject({ tools: v.array(ToolSchema) }),
  schema: v.strictObject({ schema: JsonSchema }),
  fork: v.strictObject({ fork: v.strictObject({ role: v.optional(Role), steps: v.pipe(v.array(v.unknown()), v.minLength(1, "add at least one step")) }) }),
  advance_clock: v.strictObject({ advance_clock: v.pipe(v.string(), v.check((s) => parseDuration(s) !== undefined, "expected a duration such as 6m, 90s, 1h30m")) }),
  repeat: v.strictObject({
    repeat: v.strictObject({
      times: v.pipe(v.number(), v.integer("expected an integer"), v.minValue(1, "expected at least 1"), v.maxValue(10_000, "expected at most 10000")),
      steps: v.pipe(v.array(v.unknown()), v.minLength(1, "add at least one step")),
    }),
  }),
} as const;

type StepKind = keyof typeof STEP_SCHEMAS;
// `tool_result` may carry a `user` prompt; it wins over `user` when both are present.
const KIND_ORDER: StepKind[] = ["tool_result", "user", "overlay", "system", "tools", "schema", "fork", "advance_clock", "repeat"];

interface Ctx {
  source: string;
  base: string;
}

type Path = (string | number)[];

function parseSteps(list: unknown[], ctx: Ctx, path: Path): ScenarioStep[] {
  return list.map((raw, i) => parseStep(raw, ctx, [...path, i]));
}

function parseStep(raw: unknown, ctx: Ctx, path: Path): ScenarioStep {
  return { at: formatPath(path), ...parseStepBody(raw, ctx, path) } as ScenarioStep;
}

type StepBody = ScenarioStep extends infer S ? (S extends unknown ? Omit<S, "at"> : never) : never;

function parseStepBody(raw: unknown, ctx: Ctx, path: Path): StepBody {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) fail(ctx.source, path, `expected a step object with one of: ${KIND_ORDER.join(", ")}`);
  const kind = KIND_ORDER.find((k) => Object.hasOwn(raw, k));
  if (!kind) fail(ctx.source, path, `unknown step: expected one of the keys ${KIND_ORDER.join(", ")}`);
  const s = check(STEP_SCHEMAS[kind], raw, ctx.source, path) as Record<string, unknown>;
  switch (kind) {
    case "user": {
      const step = s as v.InferOutput<(typeof STEP_SCHEMAS)["user"]>;
      const prompt = step.stdin === undefined ? step.user : (mergeInput(readText(step.stdin, ctx, [...path, "stdin"]), step.user) ?? "");
      return { kind, prompt, role: step.role ?? PROBE_ROLE };
    }
    case "tool_result": {
      const step = s as v.InferOutput<(typeof STEP_SCHEMAS)["tool_result"]>;
      const r = step.tool_result;
      if ((r.content === undefined) === (r.file === undefined)) fail(ctx.source, [...path, "tool_result"], "give exactly one of content or file");
      const content = r.content ?? readText(r.file!, ctx, [...path, "tool_result", "file"]);
      return { kind, id: r.id ?? "last", content, isError: r.is_error === true, ...(step.user !== undefined ? { prompt: step.user } : {}), role: step.role ?? PROBE_ROLE };
    }
    case "overlay": {
      const value = (s as v.InferOutput<(typeof STEP_SCHEMAS)["overlay"]>).overlay;
      return { kind, text: value === null ? undefined : textOf(value, ctx, [...path, "overlay"]) };
    }
    case "system":
      return { kind, system: systemParts((s as v.InferOutput<(typeof STEP_SCHEMAS)["system"]>).system, ctx, [...path, "system"]) };
    case "tools":
      return { kind, tools: (s as v.InferOutput<(typeof STEP_SCHEMAS)["tools"]>).tools.map(toTool) };
    case "schema":
      return { kind, schema: toSchema((s as v.InferOutput<(typeof STEP_SCHEMAS)["schema"]>).schema) };
    case "fork": {
      const f = (s as v.InferOutput<(typeof STEP_SCHEMAS)["fork"]>).fork;
      return { kind, role: f.role, steps: parseSteps(f.steps, ctx, [...path, "fork", "steps"]) };
    }
    case "advance_clock": {
      const text = (s as v.InferOutput<(typeof STEP_SCHEMAS)["advance_clock"]>).advance_clock;
      return { kind, ms: parseDuration(text)!, text };
    }
    case "repeat": {
      const r = (s as v.InferOutput<(typeof STEP_SCHEMAS)["repeat"]>).repeat;
      return { kind, times: r.times, steps: parseSteps(r.steps, ctx, [...path, "repeat", "steps"]) };
    }
  }
}

function check<S extends v.GenericSchema>(schema: S, data: unknown, source: string, prefix: Path): v.InferOutput<S> {
  const result = v.safeParse(schema, data);
  if (result.success) return result.output;
  // The deepest issue of a union says what is wrong more precisely than the union itself.
  let issue: v.BaseIssue<unknown> = result.issues[0]!;
  while (issue.issues?.length) issue = issue.issues.reduce((a, b) => ((b.path?.length ?? 0) > (a.path?.length ?? 0) ? b : a));
  const path = [...prefix, ...(issue.path ?? []).map((p) => p.key as string | number)];
  if (issue.type === "strict_object" && issue.expected === "never") fail(source, path, "unknown key");
  if (issue.received === "undefined") fail(source, path, `missing: ${issue.message.replace(/^Invalid \w+: /, "")}`);
  fail(source, path, issue.message.replace(/^Invalid (type|key|format|length|value): /, ""));
}

function fail(source: string, path: Path, problem: string): never {
  throw new CachetError("INPUT_INVALID", `scenario ${source}: ${formatPath(path)}: ${problem}`);
}

/** `["steps", 2, "tool_result"]` → `steps[2].tool_result`; the empty path is `(root)`. */
function formatPath(path: Path): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? p : `.${p}`;
  return out === "" ? "(root)" : out;
}

function readText(file: string, ctx: Ctx, path: Path): string {
  try {
    return readTextFileSync(resolve(ctx.base, file), { label: file });
  } catch (error) {
    fail(ctx.source, path, (error as Error).message);
  }
}

function textOf(value: string | { file: string }, ctx: Ctx, path: Path): string {
  return typeof value === "string" ? value : readText(value.file, ctx, [...path, "file"]);
}

function systemParts(value: v.InferOutput<typeof SystemSchema>, ctx: Ctx, path: Path): string[] {
  return Array.isArray(value) ? value.map((part, i) => textOf(part, ctx, [...path, i])) : [textOf(value, ctx, path)];
}

function toTool(t: v.InferOutput<typeof ToolSchema>): ToolDefinition {
  return { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters: t.parameters, ...(t.strict !== undefined ? { strict: t.strict } : {}) };
}

function toSchema(schema: Record<string, unknown>): OutputSchema {
  return { name: outputSchemaName(schema), schema };
}

function isJsonObjectText(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
