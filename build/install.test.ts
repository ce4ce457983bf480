/**
 * build/install.sh, run with the system `sh` (dash on Debian) against small
 * fake release directories: selection of the binary from OS, architecture,
 * libc and AVX2, checksum verification, atomic install, and clear refusals.
 * The fake binaries are shell scripts that print their own file name, so the
 * installed file says which one was chosen.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { version } from "../package.json";
import { TARGETS } from "./targets.ts";

const INSTALL_SH = join(import.meta.dir, "install.sh");
const HOST_BINARY = join(import.meta.dir, "..", "dist", "cachet");
const scratch = mkdtempSync(join(tmpdir(), "cachet-install-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let counter = 0;
function freshDir(name: string): string {
  const dir = join(scratch, `${name}-${counter++}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A release directory with one fake binary per target and a matching SHA256SUMS. */
function fakeRelease(files: readonly string[] = TARGETS.map((t) => t.file)): string {
  const dir = freshDir("release");
  const sums: string[] = [];
  for (const file of files) {
    const body = `#!/bin/sh\necho fake-${file}\n`;
    writeFileSync(join(dir, file), body);
    sums.push(`${new Bun.CryptoHasher("sha256").update(body).digest("hex")}  ${file}`);
  }
  writeFileSync(join(dir, "SHA256SUMS"), `${sums.join("\n")}\n`);
  return dir;
}

function cpuinfo(flags: string): string {
  const path = join(freshDir("cpu"), "cpuinfo");
  writeFileSync(path, `processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: ${flags}\n\nprocessor\t: 1\nflags\t\t: ${flags}\n`);
  return path;
}

interface Run {
  code: number;
  stderr: string;
  prefix: string;
}

function install(args: string[], env: Record<string, string> = {}, prefix = freshDir("prefix")): Run {
  const proc = Bun.spawnSync(["sh", INSTALL_SH, "--prefix", prefix, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: scratch, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: proc.exitCode, stderr: proc.stderr.toString(), prefix };
}

/** Which fake binary ended up installed, by the name it prints. */
function installed(run: Run, name = "cachet"): string {
  return readFileSync(join(run.prefix, name), "utf8").match(/fake-(\S+)/)?.[1] ?? "(not a fake binary)";
}

const AVX2 = "fpu vme de pse tsc msr sse sse2 ssse3 sse4_1 sse4_2 avx avx2 bmi1 bmi2 fma";
const NO_AVX2 = "fpu vme de pse tsc msr sse sse2 ssse3 sse4_1 sse4_2 avx";

describe("install.sh picks the binary for the machine", () => {
  const release = fakeRelease();
  const cases: Array<{ name: string; env: Record<string, string>; expected: string; as?: string }> = [
    { name: "Linux x86_64 glibc with AVX2", env: { CACHET_INSTALL_UNAME_S: "Linux", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_LIBC: "glibc", CACHET_INSTALL_CPUINFO: cpuinfo(AVX2) }, expected: "cachet-linux-x64" },
    { name: "Linux x86_64 glibc without AVX2", env: { CACHET_INSTALL_UNAME_S: "Linux", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_LIBC: "glibc", CACHET_INSTALL_CPUINFO: cpuinfo(NO_AVX2) }, expected: "cachet-linux-x64-baseline" },
    { name: "Linux aarch64", env: { CACHET_INSTALL_UNAME_S: "Linux", CACHET_INSTALL_UNAME_M: "aarch64", CACHET_INSTALL_LIBC: "glibc" }, expected: "cachet-linux-arm64" },
    { name: "Linux x86_64 musl", env: { CACHET_INSTALL_UNAME_S: "Linux", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_LIBC: "musl", CACHET_INSTALL_CPUINFO: cpuinfo(AVX2) }, expected: "cachet-linux-x64-musl" },
    { name: "macOS Intel with AVX2", env: { CACHET_INSTALL_UNAME_S: "Darwin", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_AVX2: "1" }, expected: "cachet-darwin-x64" },
    { name: "macOS Intel without AVX2", env: { CACHET_INSTALL_UNAME_S: "Darwin", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_AVX2: "0" }, expected: "cachet-darwin-x64-baseline" },
    { name: "macOS Apple silicon", env: { CACHET_INSTALL_UNAME_S: "Darwin", CACHET_INSTALL_UNAME_M: "arm64" }, expected: "cachet-darwin-arm64" },
    { name: "Windows (Git Bash) with AVX2", env: { CACHET_INSTALL_UNAME_S: "MINGW64_NT-10.0-19045", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_CPUINFO: cpuinfo(AVX2) }, expected: "cachet-windows-x64.exe", as: "cachet.exe" },
    { name: "Windows (MSYS) without AVX2", env: { CACHET_INSTALL_UNAME_S: "MSYS_NT-10.0", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_CPUINFO: cpuinfo(NO_AVX2) }, expected: "cachet-windows-x64-baseline.exe", as: "cachet.exe" },
  ];

  for (const c of cases) {
    test(c.name, () => {
      const run = install(["--from", release], c.env);
      expect(run.stderr).toContain(`(${c.expected}, sha256 `);
      expect(run.code).toBe(0);
      expect(installed(run, c.as)).toBe(c.expected);
    });
  }

  test("every target of the build matrix is reachable", () => {
    expect(new Set(cases.map((c) => c.expected))).toEqual(new Set(TARGETS.map((t) => t.file)));
  });
});

describe("install.sh on this machine", () => {
  const hostAvx2 = existsSync("/proc/cpuinfo") && /^flags\s*:.*\bavx2\b/m.test(readFileSync("/proc/cpuinfo", "utf8"));
  const hostFile = `cachet-linux-${process.arch === "arm64" ? "arm64" : "x64"}${process.arch === "x64" && !hostAvx2 ? "-baseline" : ""}`;
  const onLinuxGlibc = process.platform === "linux" && !existsSync("/lib/ld-musl-x86_64.so.1") && !existsSync("/lib/ld-musl-aarch64.so.1");

  test.if(onLinuxGlibc)("installs the host build with mode 755, detecting everything itself", () => {
    const run = install(["--from", fakeRelease()]);
    expect(run.code).toBe(0);
    expect(installed(run)).toBe(hostFile);
    expect(Bun.spawnSync(["stat", "-c", "%a", join(run.prefix, "cachet")]).stdout.toString().trim()).toBe("755");
    expect(run.stderr).toContain(`installed cachet fake-${hostFile} (${hostFile}, sha256 `);
  });

  test.if(onLinuxGlibc)("a relative --prefix is installed into and suggested on PATH as an absolute directory", () => {
    const base = freshDir("cwd");
    const proc = Bun.spawnSync(["sh", INSTALL_SH, "--prefix", "bin", "--from", fakeRelease()], {
      cwd: base,
      env: { PATH: "/usr/bin:/bin", HOME: scratch },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(proc.exitCode).toBe(0);
    expect(existsSync(join(base, "bin", "cachet"))).toBe(true);
    expect(proc.stderr.toString()).toContain(`installed cachet fake-${hostFile} (${hostFile}, sha256 `);
    expect(proc.stderr.toString()).toContain(`note: ${join(base, "bin")} is not on PATH; add it, e.g. export PATH="${join(base, "bin")}:$PATH"`);
  });

  test.if(onLinuxGlibc && process.arch === "x64")("picks the baseline build when the CPU flags lack AVX2", () => {
    const run = install(["--from", fakeRelease()], { CACHET_INSTALL_CPUINFO: cpuinfo(NO_AVX2) });
    expect(run.code).toBe(0);
    expect(installed(run)).toBe("cachet-linux-x64-baseline");
  });

  test.if(onLinuxGlibc && process.arch === "x64" && existsSync(HOST_BINARY))("installs the real dist/cachet, which then prints the package version", () => {
    const release = freshDir("real");
    symlinkSync(HOST_BINARY, join(release, hostFile));
    const sum = new Bun.CryptoHasher("sha256").update(readFileSync(HOST_BINARY)).digest("hex");
    writeFileSync(join(release, "SHA256SUMS"), `${sum}  ${hostFile}\n`);
    const run = install(["--from", release]);
    expect(run.stderr).toContain(`installed cachet ${version} (${hostFile}, sha256 ${sum})`);
    expect(run.code).toBe(0);
    const out = Bun.spawnSync([join(run.prefix, "cachet"), "--version"]).stdout.toString().trim();
    expect(out).toBe(version);
  });
});

describe("install.sh refuses", () => {
  const linux = { CACHET_INSTALL_UNAME_S: "Linux", CACHET_INSTALL_UNAME_M: "x86_64", CACHET_INSTALL_LIBC: "glibc", CACHET_INSTALL_AVX2: "1" };

  test("a binary whose checksum does not match, keeping the installed one", () => {
    const release = fakeRelease();
    const prefix = freshDir("prefix");
    writeFileSync(join(prefix, "cachet"), "#!/bin/sh\necho fake-previous\n");
    writeFileSync(join(release, "cachet-linux-x64"), "#!/bin/sh\necho fake-tampered\n");
    const run = install(["--from", release], linux, prefix);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^install\.sh: checksum mismatch for cachet-linux-x64: SHA256SUMS says [0-9a-f]{64}, the file is [0-9a-f]{64};.*nothing was installed\n$/);
    expect(installed(run)).toBe("previous");
    expect(Bun.spawnSync(["ls", "-A", prefix]).stdout.toString().trim()).toBe("cachet");
  });

  test("a binary that SHA256SUMS does not list", () => {
    const release = fakeRelease();
    writeFileSync(join(release, "SHA256SUMS"), readFileSync(join(release, "SHA256SUMS"), "utf8").replace(/^.*  cachet-linux-x64\n/m, ""));
    const run = install(["--from", release], linux);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("install.sh: SHA256SUMS has no line for cachet-linux-x64: refusing to install an unverified binary\n");
    expect(existsSync(join(run.prefix, "cachet"))).toBe(false);
  });

  test("a directory without SHA256SUMS", () => {
    const release = fakeRelease();
    rmSync(join(release, "SHA256SUMS"));
    const run = install(["--from", release], linux);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no SHA256SUMS in");
  });

  test("an unsupported operating system, in one line naming it", () => {
    const run = install(["--from", fakeRelease()], { ...linux, CACHET_INSTALL_UNAME_S: "FreeBSD" });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('install.sh: unsupported operating system "FreeBSD": cachet is built for Linux, macOS and Windows; build from source (see README.md)\n');
    expect(existsSync(join(run.prefix, "cachet"))).toBe(false);
  });

  test("an unsupported architecture", () => {
    const run = install(["--from", fakeRelease()], { ...linux, CACHET_INSTALL_UNAME_M: "riscv64" });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('unsupported CPU architecture "riscv64"');
  });

  test("an unknown argument, with exit 2", () => {
    const run = install(["--form", "/tmp"], linux);
    expect(run.code).toBe(2);
    expect(run.stderr.split("\n")[0]).toBe("install.sh: unknown argument: --form");
  });

  test("a release that lacks the machine's binary", () => {
    const run = install(["--from", fakeRelease(["cachet-linux-arm64"])], linux);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no cachet-linux-x64 in");
  });
});

test.if(Bun.which("curl") !== null || Bun.which("wget") !== null)("install.sh downloads from a base URL (loopback)", async () => {
  const release = fakeRelease();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const name = new URL(request.url).pathname.replace(/^\/releases\/v1\//, "");
      const path = join(release, name);
      return /^[\w.-]+$/.test(name) && existsSync(path) ? new Response(Bun.file(path)) : new Response("not found", { status: 404 });
    },
  });
  try {
    const prefix = freshDir("prefix");
    const proc = Bun.spawn(["sh", INSTALL_SH, "--from", `http://127.0.0.1:${server.port}/releases/v1/`, "--prefix", prefix], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: scratch, CACHET_INSTALL_UNAME_S: "Darwin", CACHET_INSTALL_UNAME_M: "arm64" },
      stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(stderr).toContain("(cachet-darwin-arm64, sha256 ");
    expect(code).toBe(0);
    expect(readFileSync(join(prefix, "cachet"), "utf8")).toContain("fake-cachet-darwin-arm64");
  } finally {
    server.stop(true);
  }
});

