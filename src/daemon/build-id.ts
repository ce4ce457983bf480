/**
 * Bun macro (src/daemon/identity.ts imports it `with { type: "macro" }`): an
 * id of the code a binary was built from, rendered as a literal when it is
 * bundled (or transpiled from source). A daemon of another build is stale
 * even when the package version is the same.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A hash of every source file of cachet and its built-in plugins, as hex. */
export function buildId(): string {
  const root = join(import.meta.dir, "..", "..");
  const hasher = new Bun.CryptoHasher("sha256");
  for (const dir of ["src", "plugins"]) {
    const files = [...new Bun.Glob("**/*.{ts,json}").scanSync({ cwd: join(root, dir) })].filter((f) => !f.endsWith(".test.ts")).sort();
    for (const file of files) hasher.update(`${dir}/${file}\0`).update(readFileSync(join(root, dir, file)));
  }
  hasher.update(readFileSync(join(root, "package.json")));
  return hasher.digest("hex").slice(0, 16);
}
