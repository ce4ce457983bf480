/**
 * What `cachet schema check` prints: the wire schema, or the violations with
 * their JSON paths, as text or JSON. Data for stdout; pure.
 */
import { CachetError } from "../errors.ts";
import { SCHEMA_TARGETS, type SchemaTarget } from "./contract.ts";
import type { SchemaCheck } from "./wire-schema.ts";

/** Provider names `--provider` accepts, and the contract each one uses. */
const PROVIDER_TARGETS: Record<string, SchemaTarget> = { openai: "openai", anthropic: "anthropic", gemini: "gemini", google: "gemini" };

/**
 * The contract for `--provider P`: `openai`, `anthropic`, `gemini` (or
 * `google`), or a model id whose provider is one of them (`openai/gpt-5`).
 * @throws CachetError BAD_FLAG for any other provider.
 */
export function schemaTargetOf(provider: string): SchemaTarget {
  const target = PROVIDER_TARGETS[provider.split("/")[0]!.toLowerCase()];
  if (target === undefined) {
    throw new CachetError("BAD_FLAG", `--provider ${JSON.stringify(provider)} has no known structured-output contract`, {
      hint: `use one of ${[...SCHEMA_TARGETS, "google"].join(", ")}`,
    });
  }
  return target;
}

/**
 * The report text: with `json`, one JSON object `{provider, ok, strict?, schema?, violations}`;
 * otherwise the wire schema indented, or one `PATH: MESSAGE` line per violation
 * followed by an indented `hint:` line.
 */
export function formatSchemaCheck(target: SchemaTarget, check: SchemaCheck, json: boolean): string {
  if (json) {
    const body = check.wire === undefined
      ? { provider: target, ok: false, violations: check.violations }
      : { provider: target, ok: true, strict: check.wire.strict, schema: check.wire.schema, violations: [] };
    return `${JSON.stringify(body)}\n`;
  }
  if (check.wire !== undefined) return `${JSON.stringify(check.wire.schema, null, 2)}\n`;
  return check.violations.map((v) => `${v.path}: ${v.message}\n${v.hint === undefined ? "" : `  hint: ${v.hint}\n`}`).join("");
}
