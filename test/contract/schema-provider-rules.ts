/**
 * An independent reading of each provider's documented structured-output
 * rules (providers.md §10), used as the oracle of the schema contract tests.
 * It shares no code with src/schema on purpose: a bug in the transform must
 * not be mirrored by the same bug in its judge.
 *
 * @see https://platform.openai.com/docs/guides/structured-outputs (section "Supported schemas")
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 * @see https://github.com/googleapis/js-genai/blob/main/src/types.ts (GenerationConfig.responseJsonSchema)
 */

type Json = Record<string, unknown>;

const OPENAI_ALLOWED = "type properties required additionalProperties items enum const anyOf $ref $defs definitions title description pattern format multipleOf maximum exclusiveMaximum minimum exclusiveMinimum minItems maxItems".split(" ");
const OPENAI_FORMATS = "date-time time date duration email hostname ipv4 ipv6 uuid".split(" ");
const ANTHROPIC_ALLOWED = "type properties required additionalProperties items enum const anyOf allOf $ref $defs definitions default format minItems pattern title description".split(" ");
const ANTHROPIC_FORMATS = "date-time time date duration email hostname uri ipv4 ipv6 uuid".split(" ");
const GEMINI_ALLOWED = "$id $defs $ref $anchor type format title description enum items prefixItems minItems maxItems minimum maximum anyOf oneOf properties additionalProperties required propertyOrdering".split(" ");

/**
 * Throws an Error listing every documented rule `wire` breaks for `target`;
 * returns normally when the provider would accept it.
 */
export function assertProviderAccepts(target: "openai" | "anthropic" | "gemini", wire: Json): void {
  const problems: string[] = [];
  const nodes = allSchemas(wire);
  const isObj = (n: Json) => n.type === "object" || (Array.isArray(n.type) && n.type.includes("object"));
  const keysOf = (n: Json) => Object.keys((n.properties ?? {}) as Json);
  const ref = (r: string): unknown => r === "#" ? wire : r.split("/").slice(1).reduce<unknown>((n, k) => (n as Json | undefined)?.[k], wire);

  for (const [where, node] of nodes) {
    if (typeof node !== "object" || node === null) {
      if (target !== "gemini") problems.push(`${where}: boolean schema`);
      continue;
    }
    const n = node as Json;
    const allowed = target === "openai" ? OPENAI_ALLOWED : target === "anthropic" ? ANTHROPIC_ALLOWED : GEMINI_ALLOWED;
    for (const k of Object.keys(n)) if (!allowed.includes(k)) problems.push(`${where}: keyword ${k}`);
    if (typeof n.$ref === "string") {
      if (!n.$ref.startsWith("#") || ref(n.$ref) === undefined) problems.push(`${where}: bad $ref`);
      if (target === "gemini" && Object.keys(n).some((k) => !k.startsWith("$"))) problems.push(`${where}: $ref sibling`);
    }
    if (target !== "gemini" && Object.keys(n).filter((k) => k !== "title" && k !== "description").length === 0) problems.push(`${where}: empty schema`);
    if (target !== "gemini" && isObj(n)) {
      if (n.additionalProperties !== false) problems.push(`${where}: additionalProperties is not false`);
      if (typeof n.properties !== "object") problems.push(`${where}: object without properties`);
    }
    if (target === "openai" && isObj(n)) {
      const req = (n.required ?? []) as string[];
      const missing = keysOf(n).filter((k) => !req.includes(k));
      if (missing.length > 0 || req.length !== keysOf(n).length) problems.push(`${where}: required is missing ${missing.join(",")}`);
    }
    if (n.format !== undefined && target !== "gemini") {
      if (!(target === "openai" ? OPENAI_FORMATS : ANTHROPIC_FORMATS).includes(n.format as string)) problems.push(`${where}: format ${n.format}`);
    }
    if (target === "anthropic") {
      if (n.minItems !== undefined && n.minItems !== 0 && n.minItems !== 1) problems.push(`${where}: minItems ${n.minItems}`);
      if (Array.isArray(n.enum) && n.enum.some((v) => typeof v === "object" && v !== null)) problems.push(`${where}: complex enum member`);
      if (typeof n.pattern === "string" && /\(\?<?[=!]|\\[1-9]|\\b/.test(n.pattern)) problems.push(`${where}: complex regex`);
    }
    if (target === "gemini") {
      if (Array.isArray(n.enum) && n.enum.some((v) => typeof v !== "string" && typeof v !== "number")) problems.push(`${where}: enum member type`);
      if (n.propertyOrdering !== undefined && JSON.stringify([...(n.propertyOrdering as string[])].sort()) !== JSON.stringify(keysOf(n).sort())) problems.push(`${where}: propertyOrdering`);
    }
  }

  if (target === "openai") {
    if (wire.type !== "object" || "anyOf" in wire) problems.push("$: root must be a plain object schema");
    let properties = 0, enumValues = 0, chars = 0;
    for (const [where, node] of nodes) {
      const n = node as Json;
      properties += keysOf(n).length;
      chars += keysOf(n).join("").length + Object.keys((n.$defs ?? {}) as Json).join("").length + Object.keys((n.definitions ?? {}) as Json).join("").length;
      if (Array.isArray(n.enum)) {
        enumValues += n.enum.length;
        const len = n.enum.map(String).join("").length;
        chars += len;
        if (n.enum.length > 250 && len > 15_000) problems.push(`${where}: large enum`);
      }
      if ("const" in n) chars += String(n.const).length;
    }
    if (properties > 5_000) problems.push("$: too many properties");
    if (enumValues > 1_000) problems.push("$: too many enum values");
    if (chars > 120_000) problems.push("$: too many characters");
    if (objectDepth(wire, ref, []) > 10) problems.push("$: nesting deeper than 10");
  }
  if (target === "gemini" && hasCycle(wire, ref, true)) problems.push("$: cyclic $ref under required properties only");
  if (target === "anthropic") {
    if (hasCycle(wire, ref)) problems.push("$: recursive schema");
    let optional = 0, unions = 0;
    for (const [, node] of nodes) {
      const n = node as Json;
      const req = (n.required ?? []) as string[];
      optional += keysOf(n).filter((k) => !req.includes(k)).length;
      if (Array.isArray(n.anyOf) || (Array.isArray(n.type) && n.type.length > 1)) unions++;
    }
    if (optional > 24) problems.push("$: more than 24 optional properties");
    if (unions > 16) problems.push("$: more than 16 unions");
  }
  if (problems.length > 0) throw new Error(`${target} would reject the schema:\n  ${problems.join("\n  ")}`);
}

/** Every sub-schema with a readable location (JSON Pointer style), the root first. */
function allSchemas(root: unknown): [string, unknown][] {
  const out: [string, unknown][] = [];
  const go = (n: unknown, at: string): void => {
    out.push([at, n]);
    for (const [step, kid] of directChildren(n)) go(kid, `${at}/${step}`);
  };
  go(root, "#");
  return out;
}

/** The sub-schemas written directly inside `n`, with their pointer step. */
function directChildren(n: unknown): [string, unknown][] {
  if (typeof n !== "object" || n === null) return [];
  const o = n as Json;
  const out: [string, unknown][] = [];
  for (const k of ["properties", "$defs", "definitions", "patternProperties"]) {
    if (o[k] && typeof o[k] === "object") for (const [name, s] of Object.entries(o[k] as Json)) out.push([`${k}/${name}`, s]);
  }
  for (const k of ["anyOf", "oneOf", "allOf", "prefixItems"]) if (Array.isArray(o[k])) (o[k] as unknown[]).forEach((s, i) => out.push([`${k}/${i}`, s]));
  for (const k of ["items", "not", "if", "then", "else", "additionalProperties"]) if (o[k] && typeof o[k] === "object" && !Array.isArray(o[k])) out.push([k, o[k]]);
  return out;
}

/** Deepest chain of nested object schemas, following refs that are not already being expanded. */
function objectDepth(n: unknown, ref: (r: string) => unknown, expanding: unknown[]): number {
  if (typeof n !== "object" || n === null) return 0;
  const o = n as Json;
  let deepest = 0;
  const kids: unknown[] = [
    ...Object.values((o.properties ?? {}) as Json),
    ...(["anyOf", "oneOf", "allOf", "prefixItems"] as const).flatMap((k) => (Array.isArray(o[k]) ? (o[k] as unknown[]) : [])),
    ...(o.items && typeof o.items === "object" ? [o.items] : []),
  ];
  for (const kid of kids) deepest = Math.max(deepest, objectDepth(kid, ref, expanding));
  if (typeof o.$ref === "string") {
    const target = ref(o.$ref);
    if (!expanding.includes(target)) deepest = Math.max(deepest, objectDepth(target, ref, [...expanding, target]));
  }
  const own = o.type === "object" || (Array.isArray(o.type) && o.type.includes("object")) ? 1 : 0;
  return own + deepest;
}

/**
 * True when following `$ref`s from the root reaches a schema already being
 * expanded. With `optionalBreaks`, a cycle that passes through a property its
 * object does not require does not count (Gemini allows those).
 */
function hasCycle(root: Json, ref: (r: string) => unknown, optionalBreaks = false): boolean {
  const stack: { node: unknown; optional: boolean }[] = [];
  const go = (n: unknown, optional: boolean): boolean => {
    if (typeof n !== "object" || n === null) return false;
    const at = stack.findIndex((frame) => frame.node === n);
    if (at >= 0) return !(optionalBreaks && (optional || stack.slice(at + 1).some((frame) => frame.optional)));
    stack.push({ node: n, optional });
    const o = n as Json;
    const required = (o.required ?? []) as string[];
    const found =
      directChildren(o).some(([step, kid]) => go(kid, step.startsWith("properties/") && !required.includes(step.slice("properties/".length)))) ||
      (typeof o.$ref === "string" && go(ref(o.$ref), false));
    stack.pop();
    return found;
  };
  return go(root, false);
}
