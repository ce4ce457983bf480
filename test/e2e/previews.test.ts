/**
 * Message previews through the compiled binary: `sessions show` and
 * `cost --tree` show a message on one line the same way, a line break as `\n`
 * (as every user text cachet prints, e.g. a session name), never as a space.
 */
import { afterAll, expect, test } from "bun:test";
import { cleanHomes, freshHome } from "./harness.ts";
import { ok } from "./session-kit.ts";

afterAll(cleanHomes);

test("a prompt of two lines previews as `first line\\nsecond line` in sessions show and cost --tree", async () => {
  const home = freshHome();
  await ok(["--emulate", "-q", "first line\nsecond  line\r\n\tindented"], { home });
  const shown = "first line\\nsecond line\\n\\tindented";
  const show = (await ok(["sessions", "show"], { home })).stdout.split("\n");
  const userLine = show.find((l) => /^\s+1 user /.test(l))!;
  expect(userLine.endsWith(`  ${shown}`)).toBe(true);
  const tree = (await ok(["cost", "--tree"], { home })).stdout.split("\n");
  const messageLine = tree.find((l) => l.trimStart().startsWith("message "))!;
  expect(messageLine.endsWith(`  ${shown}`)).toBe(true);
  // The same message id on both lines.
  expect(messageLine.trim().split(/\s+/)[1]).toBe(userLine.trim().split(/\s+/)[2]);
}, 30_000);
