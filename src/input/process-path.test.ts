import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fdIsOpen, processFileOf } from "./process-path.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-process-path-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("processFileOf", () => {
  test("a path as written: . and empty parts dropped, .. going up, relative ones from the directory given", () => {
    expect(processFileOf("/dev/stdin", "/", false)).toEqual({ path: "/dev/stdin", fd: 0 });
    expect(processFileOf("/dev/./fd/3", "/", false)).toEqual({ path: "/dev/fd/3", fd: 3 });
    expect(processFileOf("//dev//stderr", "/", false)).toEqual({ path: "/dev/stderr", fd: 2 });
    expect(processFileOf("/proc/self/../self/fd/0", "/", false)).toEqual({ path: "/proc/self/fd/0", fd: 0 });
    expect(processFileOf("/proc/self/fd/../fd/7", "/", false)).toEqual({ path: "/proc/self/fd/7", fd: 7 });
    expect(processFileOf("stdin", "/dev", false)).toEqual({ path: "/dev/stdin", fd: 0 });
    expect(processFileOf("fd/12", "/dev", false)).toEqual({ path: "/dev/fd/12", fd: 12 });
    expect(processFileOf("../dev/stdout", "/tmp", false)).toEqual({ path: "/dev/stdout", fd: 1 });
    expect(processFileOf("/proc/thread-self/fd/4", "/", false)).toEqual({ path: "/proc/thread-self/fd/4", fd: 4 });
    expect(processFileOf("/proc/self/environ", "/", false)).toEqual({ path: "/proc/self/environ" });
  });

  test("paths that lead to no file of the process's own", () => {
    expect(processFileOf("/dev/null", "/", false)).toBeUndefined();
    expect(processFileOf("/dev/fdx", "/", false)).toBeUndefined();
    expect(processFileOf("/home/u/dev/stdin", "/", false)).toBeUndefined();
    expect(processFileOf("stdin", "/tmp", false)).toBeUndefined();
    expect(processFileOf("/proc/1/fd/0", "/", false)).toBeUndefined();
  });

  test("symlinks are followed part by part, stopping at the per-process path before following it", () => {
    symlinkSync("/dev/stdin", join(dir, "in"));
    symlinkSync("in", join(dir, "relative-in"));
    symlinkSync("/dev", join(dir, "devices"));
    symlinkSync("/proc/self/fd", join(dir, "fds"));
    mkdirSync(join(dir, "sub"));
    symlinkSync("../devices/fd/5", join(dir, "sub", "up"));
    writeFileSync(join(dir, "plain.txt"), "text");
    expect(processFileOf(join(dir, "in"), "/", true)).toEqual({ path: "/dev/stdin", fd: 0 });
    expect(processFileOf("relative-in", dir, true)).toEqual({ path: "/dev/stdin", fd: 0 });
    expect(processFileOf("devices/./stdout", dir, true)).toEqual({ path: "/dev/stdout", fd: 1 });
    expect(processFileOf("fds/3", dir, true)).toEqual({ path: "/proc/self/fd/3", fd: 3 });
    expect(processFileOf("sub/up", dir, true)).toEqual({ path: "/dev/fd/5", fd: 5 });
    // Read as written, none of these names one.
    expect(processFileOf(join(dir, "in"), "/", false)).toBeUndefined();
    expect(processFileOf("plain.txt", dir, true)).toBeUndefined();
    expect(processFileOf("missing/stdin", dir, true)).toBeUndefined();
  });

  test("`..` after a symlink goes up from where the link led, as an open does", () => {
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    writeFileSync(join(dir, "a", "input"), "not a device");
    symlinkSync("/dev/stdin", join(dir, "input"));
    symlinkSync(join(dir, "a", "b"), join(dir, "deep"));
    // deep/.. is a/, not the directory holding deep (whose `input` is a link to /dev/stdin): a plain file.
    expect(processFileOf("deep/../input", dir, true)).toBeUndefined();
    expect(processFileOf("input", dir, true)).toEqual({ path: "/dev/stdin", fd: 0 });
    symlinkSync("/dev/fd", join(dir, "a", "b", "fds"));
    expect(processFileOf("deep/fds/4", dir, true)).toEqual({ path: "/dev/fd/4", fd: 4 });
  });

  test("`..` under a per-process path that only the opening process can follow names no descriptor", () => {
    // /dev/fd is /proc/self/fd on Linux: its `..` is /proc/self, not /dev.
    expect(processFileOf("/dev/fd/../stdin", "/", false)).toEqual({ path: "/dev/fd" });
    expect(processFileOf("/proc/self/cwd/../fd/0", "/", false)).toEqual({ path: "/proc/self" });
  });

  test("a symlink loop leads nowhere", () => {
    symlinkSync("loop-b", join(dir, "loop-a"));
    symlinkSync("loop-a", join(dir, "loop-b"));
    expect(processFileOf("loop-a", dir, true)).toBeUndefined();
  });
});

describe("fdIsOpen", () => {
  test("a descriptor this process holds is open; once closed, not", () => {
    const fd = openSync(join(dir, "held.txt"), "w");
    expect(fdIsOpen(fd)).toBe(true);
    closeSync(fd);
    expect(fdIsOpen(fd)).toBe(false);
    expect(fdIsOpen(0)).toBe(true);
  });
});
