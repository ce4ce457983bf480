/**
 * The `[[installed_plugins]]` tables of config.toml, which `cachet plugins
 * add/remove/update` own. The rest of the user's file (keys, comments) is
 * kept as written: only these tables are removed and re-appended at the end.
 */
import { existsSync, readFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import { makePrivateDir } from "../private-files.ts";
import { dirname } from "node:path";
import { parseConfig, type Config } from "../config.ts";

/** One installed plugin as recorded in the config. */
export type InstalledPlugin = NonNullable<Config["installed_plugins"]>[number];

/** The fields of a record, in the order they are written. */
export const KEYS = ["name", "version", "source", "integrity", "api", "file"] as const satisfies readonly (keyof InstalledPlugin)[];

/**
 * Replaces the installed-plugin records of the config file at `path` with
 * `records` (written atomically, and validated before it replaces the file).
 * @throws CachetError CONFIG_UNREADABLE / CONFIG_INVALID when the existing file is broken.
 */
export async function writeInstalled(path: string, records: readonly InstalledPlugin[]): Promise<void> {
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  const kept = withoutInstalledTables(text).replace(/\s*$/, "");
  const tables = records.map((r) => `[[installed_plugins]]\n${KEYS.map((k) => `${k} = ${tomlString(r[k])}`).join("\n")}\n`);
  const next = [kept, ...tables].filter((part) => part !== "").join("\n\n") + "\n";
  parseConfig(Bun.TOML.parse(next), path);
  makePrivateDir(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, next);
  await rename(tmp, path);
}

/** The text without any `[[installed_plugins]]` table (each runs to the next table header or the end). */
function withoutInstalledTables(text: string): string {
  const out: string[] = [];
  let inside = false;
  for (const line of text.split("\n")) {
    if (/^\s*\[\[\s*installed_plugins\s*\]\]\s*(#.*)?$/.test(line)) inside = true;
    else if (/^\s*\[/.test(line)) inside = false;
    if (!inside) out.push(line);
  }
  return out.join("\n");
}

/** A TOML basic string: JSON's escapes are all valid in TOML; DEL, which JSON leaves raw and TOML forbids raw, is escaped. */
function tomlString(value: string): string {
  return JSON.stringify(value).replaceAll("\x7f", "\\u007f");
}
