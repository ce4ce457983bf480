/**
 * The npm distribution, as the field's compiled CLIs ship (esbuild, biome):
 * one package per target holding its prebuilt binary, with `os`, `cpu` and
 * `libc` set so npm installs only the matching one, and a tiny launcher
 * package `cachet` that lists them all as optionalDependencies and runs the
 * installed one (build/npm-launcher.cjs). No postinstall, no download.
 *
 * The baseline x64 builds are not published to npm: Bun's x64 and baseline
 * runtimes are byte-identical today (build/targets.ts), and npm cannot choose
 * by CPU feature; install.sh serves them.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BuildTarget } from "./targets.ts";
import { TARGETS } from "./targets.ts";

const ROOT = join(import.meta.dir, "..");
const MANIFEST = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string; version: string; description: string; license: string };

/** The launcher package's name on npm. */
export const NPM_NAME = MANIFEST.name;

/** The targets published to npm: one per os, arch and libc. */
export const NPM_TARGETS: readonly BuildTarget[] = TARGETS.filter((t) => !t.baseline);

/** `cachet-<os>-<arch>[-musl]`: the platform package of a target (the launcher derives the same name at run time). */
export function platformPackageName(target: BuildTarget): string {
  return `${NPM_NAME}-${target.os}-${target.arch}${target.libc === "musl" ? "-musl" : ""}`;
}

/**
 * Writes a target's platform package with `binary` as its `bin/cachet[.exe]`.
 * @returns the package directory.
 */
export function writePlatformPackage(target: BuildTarget, binary: string, outDir: string, version = MANIFEST.version): string {
  const name = platformPackageName(target);
  const dir = join(outDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "bin"), { recursive: true });
  const exe = join(dir, "bin", target.os === "windows" ? "cachet.exe" : "cachet");
  copyFileSync(binary, exe);
  chmodSync(exe, 0o755);
  writeJson(join(dir, "package.json"), {
    name,
    version,
    description: `The ${target.os} ${target.arch}${target.libc === "musl" ? " musl" : ""} binary of cachet; installed by the \`${NPM_NAME}\` package`,
    license: MANIFEST.license,
    os: [target.os === "windows" ? "win32" : target.os],
    cpu: [target.arch],
    ...(target.os === "linux" ? { libc: [target.libc] } : {}),
    files: ["bin"],
    preferUnplugged: true,
  });
  return dir;
}

/**
 * Writes the launcher package: `bin/cachet.js` and every platform package as
 * an optional dependency of the same version.
 * @returns the package directory.
 */
export function writeLauncherPackage(outDir: string, version = MANIFEST.version): string {
  const dir = join(outDir, NPM_NAME);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "bin"), { recursive: true });
  copyFileSync(join(import.meta.dir, "npm-launcher.cjs"), join(dir, "bin", "cachet.js"));
  chmodSync(join(dir, "bin", "cachet.js"), 0o755);
  const readme = join(ROOT, "README.md");
  if (existsSync(readme)) copyFileSync(readme, join(dir, "README.md"));
  writeJson(join(dir, "package.json"), {
    name: NPM_NAME,
    version,
    description: MANIFEST.description,
    license: MANIFEST.license,
    bin: { cachet: "bin/cachet.js" },
    files: ["bin", "README.md"],
    optionalDependencies: Object.fromEntries(NPM_TARGETS.map((t) => [platformPackageName(t), version])),
    engines: { node: ">=18" },
  });
  return dir;
}

/**
 * `npm pack` of a package directory into `destination`.
 * @returns the tarball's path.
 * @throws Error with npm's message.
 */
export function npmPack(dir: string, destination: string): string {
  mkdirSync(destination, { recursive: true });
  const pack = Bun.spawnSync(["npm", "pack", "--silent", "--pack-destination", destination], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const file = pack.stdout.toString().trim().split("\n").at(-1) ?? "";
  if (pack.exitCode !== 0 || !existsSync(join(destination, file))) throw new Error(`npm pack of ${dir} failed: ${pack.stderr.toString().trim()}`);
  return join(destination, file);
}

/**
 * Builds dist/npm/: every platform package from the compiled binaries in
 * `dist` and the launcher, each packed (`npm publish <tarball>` publishes it).
 * @returns the tarballs.
 */
export function buildNpmDist(dist: string): string[] {
  const out = join(dist, "npm");
  rmSync(out, { recursive: true, force: true });
  const staging = join(out, ".packages");
  const tarballs = NPM_TARGETS.map((t) => npmPack(writePlatformPackage(t, join(dist, t.file), staging), out));
  tarballs.push(npmPack(writeLauncherPackage(staging), out));
  rmSync(staging, { recursive: true, force: true });
  return tarballs;
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}
