import { expect, test } from "bun:test";
import { commandOf } from "./command-line.ts";

test("a command line's command: the first word after the global flags, else run", () => {
  expect(commandOf(["hello", "there"], false)).toBe("run");
  expect(commandOf(["-q", "sessions", "list"], false)).toBe("sessions");
  expect(commandOf(["run", "sessions"], false)).toBe("run");
  expect(commandOf(["--debug", "-c", "more"], false)).toBe("run");
  expect(commandOf(["daemon", "status"], false)).toBe("daemon");
  expect(commandOf([], false)).toBe("run");
});

test("help and a misused --version run no command", () => {
  expect(commandOf([], true)).toBeUndefined();
  expect(commandOf(["-q", "--help"], false)).toBeUndefined();
  expect(commandOf(["help", "run"], false)).toBeUndefined();
  expect(commandOf(["--version", "x"], false)).toBeUndefined();
});
