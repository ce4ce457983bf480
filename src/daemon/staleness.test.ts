import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { otherStateDirs } from "./staleness.ts";

const root = mkdtempSync(join(tmpdir(), "cachet-staleness-"));
const home = join(root, "home");
const other = join(root, "other");
const link = join(root, "link");
mkdirSync(home);
mkdirSync(other);
symlinkSync(home, link);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("otherStateDirs", () => {
  test("the same CACHET_HOME, absolute, is the same directory whatever the working directories", () => {
    expect(otherStateDirs({ CACHET_HOME: home }, other, { CACHET_HOME: home }, "/")).toBe(false);
  });

  test("a path written otherwise, or through a symbolic link, is the same directory", () => {
    expect(otherStateDirs({ CACHET_HOME: `${home}/` }, "/", { CACHET_HOME: home }, "/")).toBe(false);
    expect(otherStateDirs({ CACHET_HOME: `${other}/../home` }, "/", { CACHET_HOME: home }, "/")).toBe(false);
    expect(otherStateDirs({ CACHET_HOME: link }, "/", { CACHET_HOME: home }, "/")).toBe(false);
  });

  test("a relative CACHET_HOME is the same directory from the same working directory, and from another that leads there", () => {
    expect(otherStateDirs({ CACHET_HOME: "home" }, root, { CACHET_HOME: "home" }, root)).toBe(false);
    expect(otherStateDirs({ CACHET_HOME: "." }, home, { CACHET_HOME: "home" }, root)).toBe(false);
  });

  test("the same relative CACHET_HOME from different working directories is another directory", () => {
    expect(otherStateDirs({ CACHET_HOME: "." }, other, { CACHET_HOME: "." }, home)).toBe(true);
  });

  test("another CACHET_HOME, or XDG directories instead of it, is another installation", () => {
    expect(otherStateDirs({ CACHET_HOME: other }, "/", { CACHET_HOME: home }, "/")).toBe(true);
    expect(otherStateDirs({ HOME: home }, "/", { CACHET_HOME: home }, "/")).toBe(true);
  });
});
