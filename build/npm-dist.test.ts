/**
 * The npm distribution (build/npm-dist.ts), offline: the launcher package
 * (npm-packed) and this machine's platform package holding the real host
 * binary are installed from their tarballs into a temporary global prefix,
 * and `cachet --version` runs through the launcher. npm must skip the other
 * platforms' optional dependencies (not reachable offline) without failing.
 *
 * The platform tarball is written as an uncompressed tar (npm installs
 * `.tar` files like `.tgz`): `npm pack` gzips the 118 MB binary at level 9,
 * ~50 s on a loaded machine; the full build uses `npm pack` for every package.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { version } from "../package.json";
import { NPM_NAME, NPM_TARGETS, npmPack, platformPackageName, writeLauncherPackage, writePlatformPackage } from "./npm-dist.ts";
import { TARGETS } from "./targets.ts";

const HOST_BINARY = join(import.meta.dir, "..", "dist", "cachet");
const scratch = mkdtempSync(join(tmpdir(), "cachet-npm-dist-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test("one platform package per os/arch/libc, each with os, cpu (and libc) set; the launcher lists them all as optionalDependencies", () => {
  expect(NPM_TARGETS.map(platformPackageName).sort()).toEqual(
    ["cachet-darwin-arm64", "cachet-darwin-x64", "cachet-linux-arm64", "cachet-linux-x64", "cachet-linux-x64-musl", "cachet-windows-x64"],
  );
  const dir = join(scratch, "packages");
  for (const target of NPM_TARGETS) {
    const manifest = JSON.parse(readFileSync(join(writePlatformPackage(target, join(import.meta.dir, "install.sh"), dir), "package.json"), "utf8"));
    expect(manifest).toMatchObject({ name: platformPackageName(target), version, os: [target.os === "windows" ? "win32" : target.os], cpu: [target.arch] });
    expect(manifest.libc).toEqual(target.os === "linux" ? [target.libc] : undefined);
    expect(manifest.scripts).toBeUndefined();
  }
  const launcher = JSON.parse(readFileSync(join(writeLauncherPackage(dir), "package.json"), "utf8"));
  expect(launcher).toMatchObject({ name: NPM_NAME, version, bin: { cachet: "bin/cachet.js" } });
  expect(Object.keys(launcher.optionalDependencies).sort()).toEqual(NPM_TARGETS.map(platformPackageName).sort());
  expect(Object.values(launcher.optionalDependencies)).toEqual(NPM_TARGETS.map(() => version));
  expect(launcher.scripts).toBeUndefined();
});

test.skipIf(process.platform !== "linux" || !existsSync(HOST_BINARY))(
  "installs from packed tarballs into a temp prefix, and `cachet --version` runs through the launcher",
  () => {
    const musl = [...new Bun.Glob("ld-musl-*").scanSync({ cwd: "/lib" })].length > 0;
    const host = TARGETS.find((t) => t.os === "linux" && t.arch === process.arch && !t.baseline && t.libc === (musl ? "musl" : "glibc"))!;
    const packages = join(scratch, "host");
    const launcher = npmPack(writeLauncherPackage(packages), join(scratch, "tarballs"));
    const platformDir = writePlatformPackage(host, HOST_BINARY, packages);
    const stage = join(scratch, "stage");
    mkdirSync(stage);
    renameSync(platformDir, join(stage, "package"));
    const platform = join(scratch, "tarballs", `${platformPackageName(host)}-${version}.tar`);
    const tar = Bun.spawnSync(["tar", "-C", stage, "-cf", platform, "package"], { stderr: "pipe" });
    expect(tar.exitCode).toBe(0);

    const prefix = join(scratch, "prefix");
    const install = Bun.spawnSync(["npm", "install", "--global", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", launcher, platform], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, npm_config_cache: join(scratch, "npm-cache") },
    });
    expect(install.exitCode, install.stderr.toString()).toBe(0);
    expect(existsSync(join(prefix, "lib", "node_modules", NPM_NAME, "bin", "cachet.js"))).toBe(true);

    const run = Bun.spawnSync([join(prefix, "bin", "cachet"), "--version"], { stdout: "pipe", stderr: "pipe" });
    expect({ code: run.exitCode, stdout: run.stdout.toString().trim(), stderr: run.stderr.toString() }).toEqual({ code: 0, stdout: version, stderr: "" });
  },
  180_000,
);
