/**
 * A plugin package's package.json, as cachet reads it in both places it
 * does: the loader (a plugin named by package in `plugins = [...]`,
 * src/plugin/loader.ts) and `cachet plugins add/test` (src/plugin/install.ts).
 * One validator for both, so a manifest the one refuses the other refuses
 * too, with the same words: the file must hold a JSON object, and each field
 * cachet reads has its documented type when present (https://docs.npmjs.com/cli/v10/configuring-npm/package-json).
 * An entry (`exports`, `module`, `main`, `source`) must name a file inside
 * the package directory: a package cannot make cachet import a file elsewhere.
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import * as v from "valibot";

const EXPORTS_EXPECTED = "a path, an array, an object of subpaths or conditions, or null";

/**
 * An `exports` value as Node defines it (https://nodejs.org/api/packages.html#exports):
 * a path, an array of fallbacks, an object of subpaths or conditions (each
 * holding such a value), or null (no export).
 */
type ExportTarget = string | null | ExportTarget[] | { [key: string]: ExportTarget };

const ExportTargetShape: v.GenericSchema<ExportTarget> = v.union(
  [v.string(), v.null(), v.array(v.lazy(() => ExportTargetShape)), v.record(v.string(), v.lazy(() => ExportTargetShape))],
  EXPORTS_EXPECTED,
);

const ManifestShape = v.looseObject({
  name: v.optional(v.string()),
  version: v.optional(v.string()),
  main: v.optional(v.string()),
  module: v.optional(v.string()),
  /** A source entry (the convention of microbundle and Parcel): what a local project is bundled from. */
  source: v.optional(v.string()),
  exports: v.optional(ExportTargetShape),
  dependencies: v.optional(v.record(v.string(), v.string())),
});

/** The fields of a package.json cachet reads, validated; other fields are kept as they are. */
export type Manifest = v.InferOutput<typeof ManifestShape>;

/**
 * Parses package.json text.
 * @returns the manifest, or the `problem` as a predicate of the file (`is not valid JSON (…)`,
 *   `holds an array, not a JSON object`, `has "main": 5, expected a string`), one line.
 */
export function parseManifest(text: string): { manifest: Manifest } | { problem: string } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    return { problem: `is not valid JSON (${(cause instanceof Error ? cause.message : String(cause)).split("\n", 1)[0]})` };
  }
  // valibot's object schemas take an array for an object: a package.json of [1, 2] is refused here.
  if (data === null || typeof data !== "object" || Array.isArray(data)) return { problem: `holds ${Array.isArray(data) ? "an array" : data === null ? "null" : `a ${typeof data}`}, not a JSON object` };
  const result = v.safeParse(ManifestShape, data);
  if (result.success) return { manifest: result.output };
  const issue = result.issues[0]!;
  const path = issue.path?.map((item) => String(item.key)) ?? [];
  const expected = path[0] === "exports" ? EXPORTS_EXPECTED : issue.expected === "string" ? "a string" : issue.expected === "Object" ? "an object" : issue.message;
  return { problem: `has ${path.map((key) => JSON.stringify(key)).join(" → ")}: ${printed(issue.input)}, expected ${expected}` };
}

/** A value as the manifest holds it, cut short: what the user sees in their file. */
function printed(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** An entry a manifest declares: the field it came from, and the path as written (relative to the package directory). */
export interface DeclaredEntry {
  field: "source" | "exports" | "module" | "main";
  path: string;
}

/**
 * The built entries a package declares, in the order cachet tries them:
 * `exports` (the `.` subpath; conditions `bun`, `import`, `default`; the
 * first usable of an array), `module`, `main`. What a published package
 * ships and the loader imports.
 */
export function builtEntries(manifest: Manifest): DeclaredEntry[] {
  const fromExports = exportTarget(manifest.exports, ["bun", "import", "default"], true);
  return [
    ...(fromExports === undefined ? [] : [{ field: "exports" as const, path: fromExports }]),
    ...(manifest.module === undefined ? [] : [{ field: "module" as const, path: manifest.module }]),
    ...(manifest.main === undefined ? [] : [{ field: "main" as const, path: manifest.main }]),
  ];
}

/**
 * The source entries a local project declares: `source`, then the `source`
 * condition of `exports`. A project bundled from its sources gives the same
 * bytes whether or not its build output is there or up to date.
 */
export function sourceEntries(manifest: Manifest): DeclaredEntry[] {
  const fromExports = exportTarget(manifest.exports, ["source"], false);
  return [
    ...(manifest.source === undefined ? [] : [{ field: "source" as const, path: manifest.source }]),
    ...(fromExports === undefined ? [] : [{ field: "exports" as const, path: fromExports }]),
  ];
}

/**
 * The path the `.` export resolves to under the first of `conditions` that
 * gives one. A path reached through no condition (`"exports": "./x.js"`)
 * counts only when `unconditional`: it is a built entry, not a source one.
 */
function exportTarget(target: ExportTarget | undefined, conditions: readonly string[], unconditional: boolean): string | undefined {
  if (target === undefined || target === null) return undefined;
  if (typeof target === "string") return unconditional ? target : undefined;
  if (Array.isArray(target)) {
    for (const fallback of target) {
      const found = exportTarget(fallback, conditions, unconditional);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (Object.keys(target).some((key) => key.startsWith("."))) return exportTarget(target["."], conditions, unconditional);
  for (const key of conditions) {
    const found = exportTarget(target[key], conditions, true);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The absolute path of a declared entry, when it names a file inside the
 * package directory `dir`.
 * @returns the path, or the `problem` naming the field and its value (one line).
 */
export function entryInside(dir: string, entry: DeclaredEntry): { path: string } | { problem: string } {
  const path = resolve(dir, entry.path);
  const within = relative(dir, path);
  if (within === "" || within === ".." || within.startsWith(`..${sep}`) || isAbsolute(within)) {
    return { problem: `has "${entry.field}": ${JSON.stringify(entry.path)}, which is not a file inside the package directory ${dir}` };
  }
  return { path };
}
