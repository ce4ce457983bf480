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
 * System part ids are content-derived, so an unchanged part keeps its id. The
 * fingerprint covers system texts, tools and the output schema's content, not
 * its name.
 */
export function buildPrefix(input: PrefixInput): StablePrefix {
  const system: SystemPart[] = input.system.map((text, i) => ({ id: `system:${i}:${hashText(text).slice(0, 8)}`, text }));
  const tools = [...input.tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((t) => canonicalize(t));
  const schema = input.schema ? { name: input.schema.name, schema: canonicalize(input.schema.schema) } : undefined;
  // The schema's name is left out: it is made from the schema itself (outputSchemaName), and some wires never send
  // it (Anthropic, Gemini), so only the schema can make two prefixes differ.
  const fingerprint = hashJson({ system: system.map((s) => s.text), tools, schema: schema?.schema ?? null });
  return schema ? { system, tools, schema, fingerprint } : { system, tools, fingerprint };
}

/**
 * Names what changed between two prefixes ("system changed", "tools changed",
 * "schema changed"), or null when system texts, tools and schema content are
 * the same. The schema's name is not compared: a session stored before names
 * were made from the schema alone may hold one made from a file name, and the
 * unchanged stored prefix it keeps is what is rendered, so that name is still
 * what a provider receives. Its fingerprint, made then with the name, is
 * therefore not trusted to tell the prefixes apart.
 */
export function prefixChange(before: StablePrefix, after: StablePrefix): string | null {
  if (before.fingerprint === after.fingerprint) return null;
  const reasons: string[] = [];
  if (hashJson(before.system.map((s) => s.text)) !== hashJson(after.system.map((s) => s.text))) reasons.push("system changed");
  if (hashJson(before.tools) !== hashJson(after.tools)) reasons.push("tools changed");
  if (hashJson(before.schema?.schema ?? null) !== hashJson(after.schema?.schema ?? null)) reasons.push("schema changed");
  return reasons.length > 0 ? reasons.join(", ") : null;
}
