/**
 * Fetching packages from an npm registry the way npm does, without npm and
 * without running anything from the package: the packument
 * (`GET <registry>/<name>`), the version a spec selects, the tarball from
 * `dist.tarball`, checked against `dist.integrity` (Subresource Integrity,
 * sha512) before a byte of it is unpacked. Install scripts are never run:
 * nothing in a package is executed here.
 * @see https://github.com/npm/registry/blob/main/docs/REGISTRY-API.md
 * @see https://docs.npmjs.com/cli/v11/configuring-npm/package-lock-json#packages (integrity)
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { isHttpUrl, NOT_HTTP_URL } from "../config.ts";
import { CachetError } from "../errors.ts";

/** The public registry, unless `CACHET_NPM_REGISTRY` or `npm_config_registry` names another. */
export const DEFAULT_REGISTRY = "https://registry.npmjs.org";

/** How to reach the registry. */
export interface RegistryOptions {
  /** Base URL, no trailing slash. */
  registry: string;
  fetch: typeof fetch;
}

/** One version of a package as the packument lists it. */
export interface PackageVersion {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  dist: { tarball: string; integrity?: string; shasum?: string };
}

/**
 * The registry URL for an environment.
 * @throws CachetError BAD_FLAG (exit 2) naming the variable when its value is not an http:// or https:// URL
 */
export function registryUrl(env: Record<string, string | undefined>): string {
  const variable = env.CACHET_NPM_REGISTRY ? "CACHET_NPM_REGISTRY" : env.npm_config_registry ? "npm_config_registry" : undefined;
  const url = variable === undefined ? DEFAULT_REGISTRY : env[variable]!;
  if (variable !== undefined && !isHttpUrl(url)) {
    throw new CachetError("BAD_FLAG", `${variable}=${JSON.stringify(url)}: ${NOT_HTTP_URL}`, { hint: `e.g. ${variable}=${DEFAULT_REGISTRY}, or unset it for that default` });
  }
  return url.replace(/\/+$/, "");
}

/** Splits `name`, `name@1.2.3`, `name@^1`, `@scope/name@latest`. */
export function parsePackageSpec(spec: string): { name: string; range: string } {
  const at = spec.indexOf("@", spec.startsWith("@") ? 1 : 0);
  return at === -1 ? { name: spec, range: "latest" } : { name: spec.slice(0, at), range: spec.slice(at + 1) || "latest" };
}

/**
 * The version of `name` that `range` selects: a dist-tag (`latest`), an
 * exact version, or the highest version in a semver range.
 * @throws CachetError PLUGIN_INSTALL when the package or a matching version does not exist, or the registry fails.
 */
export async function resolveVersion(name: string, range: string, options: RegistryOptions): Promise<PackageVersion> {
  const url = `${options.registry}/${name.replace("/", "%2f")}`;
  const response = await request(url, options, { accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8" });
  if (response.status === 404) {
    throw new CachetError("PLUGIN_INSTALL", `no package "${name}" in the registry ${options.registry}`, { hint: "check the name, or set CACHET_NPM_REGISTRY" });
  }
  if (!response.ok) throw new CachetError("PLUGIN_INSTALL", `the registry answered ${response.status} for ${url}`, { hint: "try again later" });
  const packument = (await response.json()) as { "dist-tags"?: Record<string, string>; versions?: Record<string, PackageVersion> };
  const versions = packument.versions ?? {};
  const tagged = packument["dist-tags"]?.[range];
  const chosen = tagged ?? (versions[range] ? range : highestSatisfying(Object.keys(versions), range));
  const found = chosen === undefined ? undefined : versions[chosen];
  if (!found?.dist?.tarball) {
    throw new CachetError("PLUGIN_INSTALL", `no version of "${name}" matches ${range}`, {
      hint: `published: ${Object.keys(versions).slice(-5).join(", ") || "none"}`,
    });
  }
  return found;
}

/**
 * Downloads a tarball and checks it against `integrity` (when given) before
 * returning it; returns the bytes and their sha512 SRI string.
 * @throws CachetError PLUGIN_INSTALL on a download failure or an integrity mismatch.
 */
export async function downloadTarball(url: string, integrity: string | undefined, options: Pick<RegistryOptions, "fetch">, label: string): Promise<{ bytes: Uint8Array; integrity: string }> {
  const response = await request(url, options, {});
  if (!response.ok) throw new CachetError("PLUGIN_INSTALL", `download of ${label} failed: HTTP ${response.status} from ${url}`, { hint: "try again later" });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const actual = sri("sha512", bytes);
  if (integrity !== undefined) {
    const expected = integrity.split(/\s+/).find((h) => h.startsWith("sha512-")) ?? integrity.split(/\s+/)[0]!;
    const algorithm = expected.slice(0, expected.indexOf("-")) as "sha512" | "sha384" | "sha256" | "sha1";
    const got = algorithm === "sha512" ? actual : sri(algorithm, bytes);
    if (got !== expected) {
      throw new CachetError("PLUGIN_INSTALL", `integrity check failed for ${label}: the tarball's ${algorithm} is ${got}, the registry says ${expected}`, {
        hint: "the download was altered or corrupted; nothing was installed",
      });
    }
  }
  return { bytes, integrity: actual };
}

/**
 * Unpacks an npm tarball (its files sit under `package/`) into `dir`.
 * @returns the package's directory.
 */
export async function unpackTarball(bytes: Uint8Array, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await new Bun.Archive(bytes).extract(dir);
  return join(dir, "package");
}

/** A Subresource Integrity string, e.g. `sha512-<base64>`. */
export function sri(algorithm: "sha512" | "sha384" | "sha256" | "sha1", bytes: Uint8Array): string {
  return `${algorithm}-${new Bun.CryptoHasher(algorithm).update(bytes).digest("base64")}`;
}

function highestSatisfying(versions: string[], range: string): string | undefined {
  const matching = versions.filter((v) => !v.includes("-") && Bun.semver.satisfies(v, range));
  return matching.sort((a, b) => Bun.semver.order(a, b)).at(-1);
}

async function request(url: string, options: Pick<RegistryOptions, "fetch">, headers: Record<string, string>): Promise<Response> {
  try {
    return await options.fetch(url, { headers, redirect: "follow" });
  } catch (cause) {
    throw new CachetError("PLUGIN_INSTALL", `cannot reach ${new URL(url).origin}: ${(cause as Error).message}`, {
      hint: "check the network, or set CACHET_NPM_REGISTRY to a reachable registry",
      cause,
    });
  }
}
