import { expect, test } from "bun:test";
import { commandOf, readCommandLine } from "./command-line.ts";

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

test("what dispatch runs: the command's words keep the global flags before it", () => {
  expect(readCommandLine(["-q", "sessions", "show", "x"], false)).toEqual({ kind: "command", name: "sessions", rest: ["-q", "show", "x"], implicit: false });
  expect(readCommandLine(["--debug", "hello"], false)).toEqual({ kind: "command", name: "run", rest: ["--debug", "hello"], implicit: true });
  expect(readCommandLine(["-q", "help", "cost"], false)).toEqual({ kind: "help", rest: ["cost"] });
  expect(readCommandLine(["-v", "x"], false)).toEqual({ kind: "version-misuse", flag: "-v" });
});

test("a letter group holding a global letter before a command word is that command's (it names the group's other letters)", () => {
  expect(readCommandLine(["-qv", "sessions"], false)).toEqual({ kind: "command", name: "sessions", rest: ["-qv"], implicit: false });
  expect(readCommandLine(["--debug", "-vq", "-q", "cost", "x"], false)).toEqual({ kind: "command", name: "cost", rest: ["--debug", "-vq", "-q", "x"], implicit: false });
  // Not before a command word: a run's flags, as before.
  expect(readCommandLine(["-qc", "more"], false)).toEqual({ kind: "command", name: "run", rest: ["-qc", "more"], implicit: true });
  expect(readCommandLine(["-cm", "sessions"], false)).toEqual({ kind: "command", name: "run", rest: ["-cm", "sessions"], implicit: true });
});
