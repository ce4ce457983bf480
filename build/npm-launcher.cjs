#!/usr/bin/env node
// The `cachet` command of the npm distribution: it runs the prebuilt binary
// from the platform package npm installed as an optional dependency (npm
// installs only the one whose os, cpu and libc match this machine). No
// download, no postinstall: if no platform package is there, it says so.
// Package names: cachet-<os>-<arch>[-musl] (build/npm-dist.ts).
"use strict";
const { spawnSync } = require("node:child_process");
const { join, dirname } = require("node:path");

function isMusl() {
  if (process.platform !== "linux") return false;
  try {
    // glibc reports its version here; musl has none.
    return !process.report.getReport().header.glibcVersionRuntime;
  } catch {
    return false;
  }
}

const os = process.platform === "win32" ? "windows" : process.platform;
const name = `cachet-${os}-${process.arch}${isMusl() ? "-musl" : ""}`;
let binary;
try {
  binary = join(dirname(require.resolve(`${name}/package.json`)), "bin", os === "windows" ? "cachet.exe" : "cachet");
} catch {
  process.stderr.write(
    `cachet: no prebuilt binary for ${process.platform}-${process.arch}${isMusl() ? " (musl)" : ""}: the package ${name} is not installed\n` +
      "hint: reinstall without --no-optional / --omit=optional, or use install.sh from the release files\n",
  );
  process.exit(1);
}
const result = spawnSync(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
if (result.error) {
  process.stderr.write(`cachet: cannot run ${binary}: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) process.kill(process.pid, result.signal);
process.exit(result.status ?? 1);
