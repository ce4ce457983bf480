/**
 * The release matrix as data: every binary `npm run build` produces, the Bun
 * compile target behind it, and the file name install.sh looks for.
 *
 * Naming: `cachet-<os>-<arch>[-musl][-baseline][.exe]`. "baseline" builds run
 * on x86-64 CPUs without AVX2 (pre-Haswell, some VMs); the default x64 builds
 * need AVX2. build/install.sh derives the same names from uname, libc and the
 * CPU flags, so a change here must be mirrored there (install.test.ts checks).
 *
 * Measured with Bun 1.4.5: the npm runtimes for x64 and x64-baseline are
 * byte-identical (same sha256 for @oven/bun-linux-x64 and -baseline, and for
 * the darwin and windows downloads), so today both builds run on any x86-64.
 * The matrix keeps both names so install.sh and download links stay stable
 * when Bun ships a separate AVX2 runtime again.
 */

/** One compiled binary of the matrix. */
export interface BuildTarget {
  /** Operating system as install.sh names it (from `uname -s`). */
  os: "linux" | "darwin" | "windows";
  /** CPU architecture as install.sh names it (from `uname -m`). */
  arch: "x64" | "arm64";
  /** C library on Linux; glibc everywhere else. */
  libc: "glibc" | "musl";
  /** True for the build that does not need AVX2. */
  baseline: boolean;
  /** Bun's `--target` for `bun build --compile`. */
  bunTarget: Bun.Build.CompileTarget;
  /** File name under dist/. */
  file: string;
}

function target(os: BuildTarget["os"], arch: BuildTarget["arch"], options: { baseline?: boolean; musl?: boolean } = {}): BuildTarget {
  const baseline = options.baseline === true;
  const libc = options.musl === true ? "musl" : "glibc";
  const bunTarget = `bun-${os}-${arch}${libc === "musl" ? "-musl" : ""}${baseline ? "-baseline" : ""}` as Bun.Build.CompileTarget;
  const file = `cachet-${os}-${arch}${libc === "musl" ? "-musl" : ""}${baseline ? "-baseline" : ""}${os === "windows" ? ".exe" : ""}`;
  return { os, arch, libc, baseline, bunTarget, file };
}

/** The nine release binaries, in the order they are built. */
export const TARGETS: readonly BuildTarget[] = [
  target("linux", "x64"),
  target("linux", "x64", { baseline: true }),
  target("linux", "arm64"),
  target("linux", "x64", { musl: true }),
  target("darwin", "x64"),
  target("darwin", "x64", { baseline: true }),
  target("darwin", "arm64"),
  target("windows", "x64"),
  target("windows", "x64", { baseline: true }),
];

/**
 * The targets whose binaries this machine can execute, for the smoke test:
 * same OS and architecture; on x64, baseline always, the AVX2 build only when
 * the CPU has AVX2; musl only when a musl loader is present.
 * @param host facts about this machine (defaults read from the process and /proc/cpuinfo).
 */
export function runnableHere(
  targets: readonly BuildTarget[],
  host: { os: string; arch: string; avx2: boolean; musl: boolean },
): BuildTarget[] {
  const os = host.os === "win32" ? "windows" : host.os;
  return targets.filter((t) => {
    if (t.os !== os || t.arch !== host.arch) return false;
    if (t.libc === "musl" && !host.musl) return false;
    if (t.arch === "x64" && !t.baseline && !host.avx2) return false;
    return true;
  });
}
