/**
 * What `cachet schema check` prints: the wire schema, or the violations with
 * their JSON paths, as text or JSON. Data for stdout; pure.
 */
import type { SchemaTarget } from "./contract.ts";
import type { SchemaCheck } from "./wire-schema.ts";

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
