/**
 * Building and comparing the stable prefix (Z0): system parts, tools sorted
 * by name, output schema. Built once per session and frozen; a change is an
 * explicit event with a named reason.
 */
import { canonicalize } from "../wire/canonical-json.ts";
import { hashJson, hashText } from "../wire/hash.ts";
import type { OutputSchema, StablePrefix, SystemPart, ToolDefinition } from "./types.ts";

/** What the user gave for the stable prefix. */
export interface PrefixInput {
  /** System prompt texts, in order. */
  system: string[];
  tools: ToolDefinition[];
  schema?: OutputSchema;
}

/**
 * Builds a frozen stable prefix. Tools are sorted by name and every schema is
 * put in canonical key order, so the same input always renders the same bytes.
 * System part ids are content-derived, so an unchanged part keeps its id.
 */
export function buildPrefix(input: PrefixInput): StablePrefix {
  const system: SystemPart[] = input.system.map((text, i) => ({ id: `system:${i}:${hashText(text).slice(0, 8)}`, text }));
  const tools = [...input.tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((t) => canonicalize(t));
  const schema = input.schema ? { name: input.schema.name, schema: canonicalize(input.schema.schema) } : undefined;
  const fingerprint = hashJson({ system: system.map((s) => s.text), tools, schema: schema ?? null });
  return schema ? { system, tools, schema, fingerprint } : { system, tools, fingerprint };
}

/**
 * Names what changed between two prefixes ("system changed", "tools changed",
 * "tools reordered", "schema changed"), or null when they are identical.
 */
export function prefixChange(before: StablePrefix, after: StablePrefix): string | null {
  if (before.fingerprint === after.fingerprint) return null;
  const reasons: string[] = [];
  if (hashJson(before.system.map((s) => s.text)) !== hashJson(after.system.map((s) => s.text))) reasons.push("system changed");
  if (hashJson(before.tools) !== hashJson(after.tools)) reasons.push("tools changed");
  if (hashJson(before.schema ?? null) !== hashJson(after.schema ?? null)) reasons.push("schema changed");
  return reasons.join(", ") || "prefix changed";
}
