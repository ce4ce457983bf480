/**
 * The binary's entry chunk (src/cli/main.ts, bundled as build/build.ts does:
 * splitting, ESM, minified) imports nothing statically: `cachet --version`
 * and `cachet --help` answer before any other module is evaluated, and every
 * other path reaches its modules through a dynamic import.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

test("the entry chunk has no static import and holds the version and the root help as literals", async () => {
  const outdir = mkdtempSync(join(tmpdir(), "cachet-entry-"));
  try {
    const result = await Bun.build({ entrypoints: [join(import.meta.dir, "..", "src", "cli", "main.ts")], outdir, target: "bun", format: "esm", splitting: true, minify: true });
    const entry = result.outputs.find((o) => o.kind === "entry-point")!;
    const code = await entry.text();
    const { version } = await Bun.file(join(import.meta.dir, "..", "package.json")).json();
    expect(code).toContain(JSON.stringify(version));
    expect(code.match(/import\s*\(/g)?.length).toBe(1);
    expect(code).toContain("Usage: cachet [PROMPT]");
    expect(code).not.toMatch(/from\s*["']|import\s*["'{*]/);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});
