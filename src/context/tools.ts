/**
 * Validating user-supplied tool definitions (`--tools FILE`, scenario files).
 */
import * as v from "valibot";
import { CachetError } from "../errors.ts";
import type { ToolDefinition } from "./types.ts";

const ToolSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]{1,64}$/, "must match ^[a-zA-Z0-9_-]{1,64}$ (the providers' rule)")),
  description: v.optional(v.string()),
  parameters: v.optional(v.record(v.string(), v.unknown())),
  input_schema: v.optional(v.record(v.string(), v.unknown())),
  strict: v.optional(v.boolean()),
});

/**
 * A server tool: an object with a `type` naming a tool the provider runs
 * (`web_search_20250305`), kept as written beside its name.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 */
const ServerToolSchema = v.looseObject({
  type: v.pipe(v.string(), v.check((t) => t !== "function" && t !== "custom", 'a function tool has no "type"; give name, description and parameters')),
  name: ToolSchema.entries.name,
});

/**
 * Checks a JSON array of tool definitions. `input_schema` (Anthropic's name)
 * is accepted for `parameters`. An entry with a `type` is a server tool the
 * provider runs (see {@link ToolDefinition.server}). Names must be unique.
 * @throws CachetError INPUT_INVALID naming the source, the index and the key.
 */
export function parseTools(data: unknown, source: string): ToolDefinition[] {
  const list = v.safeParse(v.array(v.lazy((item) => (typeof item === "object" && item !== null && "type" in item ? ServerToolSchema : ToolSchema))), data);
  if (!list.success) {
    const issue = list.issues[0]!;
    const path = v.getDotPath(issue);
    throw new CachetError("INPUT_INVALID", `${source}: ${path ? `tool definition ${path}` : "tool definitions"}: ${issue.message}`, {
      hint: 'expected a JSON array of {"name", "description", "parameters"}',
    });
  }
  const seen = new Set<string>();
  return list.output.map((t) => {
    if (seen.has(t.name)) throw new CachetError("INPUT_INVALID", `${source}: tool "${t.name}" is defined twice`, { hint: "keep one definition per name" });
    seen.add(t.name);
    if ("type" in t) return { name: t.name, parameters: { type: "object", properties: {} }, server: { ...t } };
    const parameters = t.parameters ?? t.input_schema ?? { type: "object", properties: {} };
    // Every provider takes a tool's arguments as one JSON object: a root of another type is refused with an HTTP 400.
    if (parameters.type !== undefined && parameters.type !== "object") {
      throw new CachetError("INPUT_INVALID", `${source}: tool "${t.name}": parameters.type is ${JSON.stringify(parameters.type)}; a tool's parameters must be an object schema`, {
        hint: 'write them as {"type": "object", "properties": {...}}',
      });
    }
    return { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters, ...(t.strict !== undefined ? { strict: t.strict } : {}) };
  });
}
