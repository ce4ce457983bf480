/**
 * The entry point adapters call from `render`: the user's output schema in,
 * the schema to put on the wire out, or every contract violation with its
 * JSON path before any request is sent.
 *
 * Decision on strict mode: a schema outside the provider's subset is rejected,
 * never silently sent with `strict: false`, because a non-strict schema is
 * only a suggestion to the model and the answer would fail validation later
 * (or worse, pass by luck). A caller that wants the loose behaviour passes
 * `strict: false` explicitly: the schema is then sent as written (minus
 * annotations), unchecked, with `strict: false`.
 *
 * The output is canonical (keys sorted) because the schema is part of the
 * cached stable prefix: the same user schema always yields the same bytes.
 * Key order of the answer follows the wire schema on OpenAI, so answers come
 * in sorted key order there; Gemini gets `propertyOrdering` with the user's
 * order instead.
 */
import { CachetError } from "../errors.ts";
import { shellWord } from "../shell-word.ts";
import { canonicalize } from "../wire/canonical-json.ts";
import { lintAnthropic } from "./anthropic-contract.ts";
import type { SchemaTarget, SchemaViolation } from "./contract.ts";
import { lintGemini } from "./gemini-contract.ts";
import { lintOpenAIStrict } from "./openai-contract.ts";
import { LIST_KEYWORDS, MAP_KEYWORDS, SINGLE_KEYWORDS, isPlainObject, type SchemaNode } from "./schema-node.ts";
import { strictTransform, type StrictTransformOptions } from "./strict-transform.ts";

/** Options of {@link toWireSchema}. */
export interface WireSchemaOptions {
  /**
   * Default true: check the provider contract and apply the strict transform.
   * false: send the schema unchecked and ask the provider for `strict: false`.
   */
  strict?: boolean;
}

/** The schema as sent, and whether to send the provider's strict flag. */
export interface WireSchema {
  /** Canonical (sorted keys) JSON Schema for the provider. */
  schema: Record<string, unknown>;
  /**
   * Send `strict: true` (OpenAI `json_schema.strict`, Anthropic tool `strict`).
   * Gemini has no flag; true there means the contract was checked.
   */
  strict: boolean;
}

/** Result of {@link checkSchema}: the wire schema when there are no violations. */
export interface SchemaCheck {
  wire?: WireSchema;
  violations: SchemaViolation[];
}

/** How messages name a schema given as inline JSON (`--schema '{…}'`) rather than in a file. */
export const INLINE_SCHEMA = "inline schema";

/**
 * A SCHEMA_CONTRACT error carrying every violation, not only the first:
 * `SOURCE: $.PATH: message`, SOURCE when the thrower knows where the schema
 * came from (an adapter rendering a request does not: see `withSchemaSource`).
 */
export class SchemaContractError extends CachetError {
  override readonly name: string = "SchemaContractError";
  /** The provider contract the schema breaks. */
  readonly target: SchemaTarget;
  /** Every breach, in schema order; the message names the first. */
  readonly violations: SchemaViolation[];
  /** The schema's file path, or "inline schema"; undefined when unknown. */
  readonly source: string | undefined;

  constructor(target: SchemaTarget, violations: SchemaViolation[], source?: string) {
    const first = violations[0]!;
    const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : "";
    const file = source === undefined || source === INLINE_SCHEMA ? "FILE" : shellWord(source);
    super("SCHEMA_CONTRACT", `${source === undefined ? "" : `${source}: `}${first.path}: ${first.message}${more}`, {
      hint: `${first.hint ?? "change the schema"}; \`cachet schema check ${file} --provider ${target}\` lists every violation`,
    });
    this.target = target;
    this.violations = violations;
    this.source = source;
  }
}

const RULES: Record<SchemaTarget, { lint: (schema: SchemaNode) => SchemaViolation[]; transform: StrictTransformOptions }> = {
  openai: { lint: lintOpenAIStrict, transform: { closeObjects: true, requireAll: true, propertyOrdering: false } },
  anthropic: { lint: lintAnthropic, transform: { closeObjects: true, requireAll: false, propertyOrdering: false } },
  gemini: { lint: lintGemini, transform: { closeObjects: false, requireAll: false, propertyOrdering: true } },
};

/**
 * Checks `schema` against `target`'s contract without throwing. Pure.
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerationConfig.responseJsonSchema)
 */
export function checkSchema(target: SchemaTarget, schema: Record<string, unknown>, options: WireSchemaOptions = {}): SchemaCheck {
  const sent = withoutAnnotations(schema) as SchemaNode;
  if (options.strict === false) return { wire: { schema: canonicalize(sent), strict: false }, violations: [] };
  const rules = RULES[target];
  const violations = rules.lint(sent);
  if (violations.length > 0) return { violations };
  return { wire: { schema: canonicalize(strictTransform(sent, rules.transform)), strict: true }, violations: [] };
}

/**
 * The schema to send to `target` for the user's `schema`.
 * @throws SchemaContractError (code SCHEMA_CONTRACT) naming the first violation's
 *   JSON path, with all of them in `violations`.
 */
export function toWireSchema(target: SchemaTarget, schema: Record<string, unknown>, options: WireSchemaOptions = {}): WireSchema {
  const { wire, violations } = checkSchema(target, schema, options);
  if (wire === undefined) throw new SchemaContractError(target, violations);
  return wire;
}

/**
 * `$schema` and `$comment` only address JSON Schema tooling, are in no
 * provider's subset, and change nothing the model may produce: drop them
 * rather than reject every generator's output.
 */
function withoutAnnotations(node: unknown): unknown {
  if (!isPlainObject(node)) return node;
  const out: SchemaNode = {};
  for (const [keyword, value] of Object.entries(node)) {
    if (keyword === "$schema" || keyword === "$comment") continue;
    if ((MAP_KEYWORDS as readonly string[]).includes(keyword) && isPlainObject(value)) {
      out[keyword] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, withoutAnnotations(schema)]));
    } else if ((LIST_KEYWORDS as readonly string[]).includes(keyword) && Array.isArray(value)) {
      out[keyword] = value.map(withoutAnnotations);
    } else if ((SINGLE_KEYWORDS as readonly string[]).includes(keyword) && isPlainObject(value)) {
      out[keyword] = withoutAnnotations(value);
    } else {
      out[keyword] = value;
    }
  }
  return out;
}
