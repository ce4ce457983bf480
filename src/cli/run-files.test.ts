import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientProcessFile, runFlagFiles } from "./run-files.ts";

const dir = mkdtempSync(join(tmpdir(), "cachet-run-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("runFlagFiles", () => {
  test("the files of -s @FILE, --overlay @FILE, --tools, a --schema that is no inline JSON, and --tool-result ID=@FILE, in that order", () => {
    const values: Record<string, string> = { system: "@sys.txt", overlay: "plain text", tools: "tools.json", schema: ' {"type":"object"}' };
    expect(runFlagFiles((flag) => values[flag], ["call_1=@out.txt", "call_2"])).toEqual([
      { flag: "--system @sys.txt", path: "sys.txt", code: "INPUT_INVALID" },
      { flag: "--tools tools.json", path: "tools.json", code: "INPUT_INVALID" },
      { flag: "--tool-result call_1=@out.txt", path: "out.txt", code: "INPUT_INVALID" },
    ]);
    expect(runFlagFiles((flag) => (flag === "schema" ? "schema.json" : undefined), [])).toEqual([{ flag: "--schema schema.json", path: "schema.json", code: "SCHEMA_INVALID" }]);
  });
});

describe("clientProcessFile", () => {
  symlinkSync("/dev/stdin", join(dir, "in"));
  writeFileSync(join(dir, "plain.txt"), "text");
  const reason = (flag: string, path: string) => `${flag} leads to ${path}, a file of the client's own process, which the daemon would open as its own`;

  test("a flag's file that leads to a file of the client's own process, from the client's directory", async () => {
    expect(await clientProcessFile(["-s", "@in", "hi"], false, dir)).toBe(reason("--system @in", "/dev/stdin"));
    expect(await clientProcessFile(["run", "--tools", "stdin", "hi"], false, "/dev")).toBe(reason("--tools stdin", "/dev/stdin"));
    expect(await clientProcessFile(["--schema", "/dev/./fd/3", "hi"], false, dir)).toBe(reason("--schema /dev/./fd/3", "/dev/fd/3"));
    expect(await clientProcessFile(["--tool-result", `call_1=@${join(dir, "in")}`], false, "/")).toBe(reason(`--tool-result call_1=@${join(dir, "in")}`, "/dev/stdin"));
  });

  test("a flag's file that is a stream (a FIFO, a character device, a socket, or a link to one), which the daemon would hold open", async () => {
    Bun.spawnSync(["mkfifo", join(dir, "fifo")]);
    symlinkSync(join(dir, "fifo"), join(dir, "to-fifo"));
    const stream = (flag: string, kind: string) => `${flag} is ${kind}, a stream that the process opening it reads, which the daemon would hold open past an interrupted turn`;
    expect(await clientProcessFile(["-s", "@fifo", "hi"], false, dir)).toBe(stream("--system @fifo", "a FIFO"));
    expect(await clientProcessFile(["--tools", "to-fifo", "hi"], false, dir)).toBe(stream("--tools to-fifo", "a FIFO"));
    expect(await clientProcessFile(["--overlay", "@/dev/null", "hi"], false, dir)).toBe(stream("--overlay @/dev/null", "a character device"));
    const listener = Bun.listen({ unix: join(dir, "sock"), socket: { data() {} } });
    try {
      expect(await clientProcessFile(["--tool-result", "call_1=@sock"], false, dir)).toBe(stream("--tool-result call_1=@sock", "a socket"));
    } finally {
      listener.stop(true);
    }
  });

  test("none for plain files, prompt words, inline schemas, another command, or a line its own parse refuses", async () => {
    expect(await clientProcessFile(["-s", "@plain.txt", "--overlay", "@plain.txt", "hi"], false, dir)).toBeUndefined();
    expect(await clientProcessFile(["-s", "@missing.txt", "--tools", dir, "hi"], false, dir)).toBeUndefined();
    expect(await clientProcessFile(["in", "stdin"], false, dir)).toBeUndefined();
    expect(await clientProcessFile(["--schema", '{"title":"/dev/./fd/3"}', "hi"], false, dir)).toBeUndefined();
    expect(await clientProcessFile(["sessions", "show", "in"], false, dir)).toBeUndefined();
    expect(await clientProcessFile(["--bogus", "-s", "@in", "hi"], false, dir)).toBeUndefined();
  });
});
