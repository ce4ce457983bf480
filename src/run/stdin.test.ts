import { describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileReader, mergeInput, readStdin, type ChunkReader } from "./stdin.ts";

describe("stdin and PROMPT words (CASES.md case 23)", () => {
  test("stdin first, a blank line, then the prompt; either alone as it is", () => {
    expect(mergeInput("RELEASE NOTES v1\n", "how do I install it")).toBe("RELEASE NOTES v1\n\nhow do I install it");
    expect(mergeInput("no newline", "q")).toBe("no newline\n\nq");
    expect(mergeInput(undefined, "q")).toBe("q");
    expect(mergeInput("only stdin", undefined)).toBe("only stdin");
    expect(mergeInput(undefined, "")).toBeUndefined();
  });

  test("unquoted words are joined with spaces; `-` places stdin among them, in order", () => {
    expect(mergeInput(undefined, ["write", "a", "haiku", "about", "caching"])).toBe("write a haiku about caching");
    expect(mergeInput("data\n", ["-", "summarise"])).toBe("data\n\nsummarise");
    expect(mergeInput("data", ["summarise", "this:", "-", "in", "French"])).toBe("summarise this:\n\ndata\n\nin French");
    expect(mergeInput("data", ["summarise", "-"])).toBe("summarise\n\ndata");
    expect(mergeInput(undefined, ["-", "summarise"])).toBe("summarise");
  });
});

/** A stdin whose reads resolve when the test says. */
function controlledStdin() {
  const waiting: ((r: { done: true } | { done: false; value: Uint8Array }) => void)[] = [];
  let cancelled = false;
  const reader: ChunkReader = {
    read: () => new Promise((resolve) => waiting.push(resolve as never)),
    cancel: async () => {
      cancelled = true;
    },
    releaseLock: () => {},
  };
  return {
    source: () => ({ isTTY: false, open: async () => reader }),
    write: (text: string) => waiting.shift()!({ done: false, value: new TextEncoder().encode(text) }),
    close: () => waiting.shift()!({ done: true }),
    cancelled: () => cancelled,
    pending: () => waiting.length,
  };
}

describe("readStdin", () => {
  const base = { terminal: false, firstByteWaitMs: 20, encoding: "strict" as const, maxBytes: 1 << 20 };

  test("bounded: a silent pipe is left after the wait; bytes that come later are reported, and reading stops (case 48)", async () => {
    const stdin = controlledStdin();
    const result = await readStdin({ ...base, mode: "bounded" }, stdin.source);
    expect(result).toMatchObject({ text: undefined, timedOut: true });
    stdin.write("DATA\n");
    await Promise.resolve();
    expect(result.settleLate()).toBe(true);
    expect(stdin.cancelled()).toBe(true);
  });

  test("bounded: nothing late, nothing reported", async () => {
    const stdin = controlledStdin();
    const result = await readStdin({ ...base, mode: "bounded" }, stdin.source);
    expect(result.settleLate()).toBe(false);
  });

  test("wait: reads to the end however long the first byte takes; a BOM is dropped", async () => {
    const stdin = controlledStdin();
    const reading = readStdin({ ...base, firstByteWaitMs: 0, mode: "wait" }, stdin.source);
    while (stdin.pending() === 0) await Promise.resolve();
    stdin.write("\uFEFFslow ");
    await Promise.resolve();
    while (stdin.pending() === 0) await Promise.resolve();
    stdin.write("producer");
    while (stdin.pending() === 0) await Promise.resolve();
    stdin.close();
    expect(await reading).toMatchObject({ text: "slow producer", bytes: 16, timedOut: false });
  });

  test("an abort ends the wait with the signal's reason", async () => {
    const stdin = controlledStdin();
    const controller = new AbortController();
    const reading = readStdin({ ...base, mode: "wait", signal: controller.signal }, stdin.source);
    controller.abort(new Error("interrupted by SIGINT"));
    await expect(reading).rejects.toThrow("interrupted by SIGINT");
    expect(stdin.cancelled()).toBe(true);
  });

  test("the process's stdin: /dev/null is not read at all; a pipe and a file are (the null device ends at once anyway)", async () => {
    const probe = `import { processStdin } from ${JSON.stringify(join(import.meta.dir, "stdin.ts"))};
      const reader = await processStdin().open();
      process.stdout.write(reader === undefined ? "none" : (await reader.read()).done ? "empty" : "data");`;
    const dir = mkdtempSync(join(tmpdir(), "cachet-stdin-"));
    try {
      writeFileSync(join(dir, "in.txt"), "x");
      const run = async (stdin: "ignore" | "pipe" | Blob) => {
        const child = Bun.spawn([process.execPath, "-e", probe], { stdin, stdout: "pipe", stderr: "inherit" });
        if (stdin === "pipe") void (child.stdin as import("bun").FileSink).end();
        return (await new Response(child.stdout).text()).trim();
      };
      // Bun.spawn's "ignore" opens /dev/null for the child's stdin.
      expect(await run("ignore")).toBe("none");
      expect(await run("pipe")).toBe("empty");
      expect(await run(Bun.file(join(dir, "in.txt")))).toBe("data");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("skip: stdin is not touched", async () => {
    const stdin = controlledStdin();
    expect(await readStdin({ ...base, mode: "skip" }, stdin.source)).toMatchObject({ text: undefined, timedOut: false });
    expect(stdin.pending()).toBe(0);
  });

  test("a redirected file is read from the shell's offset, a chunk at a time, characters split across chunks intact", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cachet-stdin-file-"));
    try {
      const text = "héllo 缓存 😀 données\n".repeat(50);
      const path = join(dir, "in.txt");
      writeFileSync(path, `SKIP${text}`);
      const fd = openSync(path, "r");
      try {
        readSync(fd, new Uint8Array(4), 0, 4, null);
        const chunks: number[] = [];
        const reader = fileReader(fd, 7);
        const counted: ChunkReader = { ...reader, read: async () => {
          const r = await reader.read();
          if (!r.done) chunks.push(r.value.byteLength);
          return r;
        } };
        const result = await readStdin({ ...base, mode: "wait" }, () => ({ isTTY: false, open: async () => counted }));
        expect(result.text).toBe(text);
        expect(result.bytes).toBe(new TextEncoder().encode(text).byteLength);
        expect(Math.max(...chunks)).toBe(7);
      } finally {
        closeSync(fd);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
