/**
 * Which plugins this host can load: a plugin declares the API versions it
 * was built for as a semver range (`"^1"`, `"^1.1"`, `">=1.0 <3"`) or a bare
 * major number (`1`, read as `^1`); the host serves {@link API_VERSION}.
 */
import { CachetError } from "../errors.ts";
import { API_VERSION } from "./define-plugin.ts";

/** The declared range as a semver range string. */
export function apiRange(declared: string | number): string {
  return typeof declared === "number" ? `^${declared}` : declared.trim();
}

/**
 * Checks that the host's API version is in the plugin's range.
 * @throws CachetError PLUGIN_API_VERSION naming both versions (the loader prefixes the plugin).
 */
export function checkApiRange(plugin: string, declared: string | number): void {
  const range = apiRange(declared);
  if (Bun.semver.satisfies(API_VERSION, range)) return;
  throw new CachetError("PLUGIN_API_VERSION", `it needs plugin API ${range}, this cachet serves ${API_VERSION}`, {
    hint: `install a version of "${plugin}" built for API ^${API_VERSION.split(".")[0]} (\`cachet plugins update\`), or a cachet that serves ${range}`,
  });
}
