import { describe, expect, test } from "bun:test";
import { encodeFrame, FRAME, FrameReader, json, jsonFrame, SOCKET_PATH_MAX, socketPath, socketPathFits, splitU32, text, u32Frame } from "./protocol.ts";

describe("daemon protocol frames", () => {
  test("a frame is its type byte, a big-endian u32 length and the payload", () => {
    expect([...encodeFrame(FRAME.STDERR, "hé")]).toEqual([FRAME.STDERR, 0, 0, 0, 3, 0x68, 0xc3, 0xa9]);
    expect([...encodeFrame(FRAME.STDIN_END)]).toEqual([FRAME.STDIN_END, 0, 0, 0, 0]);
  });

  test("frames split across reads at every byte come out whole and in order", () => {
    const stream = new Uint8Array([
      ...jsonFrame(FRAME.HELLO, { argv: ["hi"], cwd: "/tmp" }),
      ...u32Frame(FRAME.STDOUT, 7, "answer\n"),
      ...encodeFrame(FRAME.STDIN_END),
      ...u32Frame(FRAME.STDIN_CREDIT, 1 << 20),
    ]);
    for (const size of [1, 2, 3, 5, 7, 64, stream.byteLength]) {
      const reader = new FrameReader();
      const frames = [];
      for (let at = 0; at < stream.byteLength; at += size) frames.push(...reader.push(stream.subarray(at, at + size)));
      expect(frames.map((f) => f.type)).toEqual([FRAME.HELLO, FRAME.STDOUT, FRAME.STDIN_END, FRAME.STDIN_CREDIT]);
      expect(json<{ argv: string[] }>(frames[0]!.payload).argv).toEqual(["hi"]);
      const out = splitU32(frames[1]!.payload);
      expect(out.n).toBe(7);
      expect(text(out.rest)).toBe("answer\n");
      expect(frames[2]!.payload.byteLength).toBe(0);
      expect(splitU32(frames[3]!.payload).n).toBe(1 << 20);
    }
  });

  test("a payload is a copy: reusing the read buffer does not change a frame already taken", () => {
    const reader = new FrameReader();
    const buffer = encodeFrame(FRAME.STDIN_DATA, new Uint8Array([1, 2, 3]));
    const [frame] = reader.push(buffer);
    buffer.fill(0);
    expect([...frame!.payload]).toEqual([1, 2, 3]);
  });

  test("a megabyte payload arriving in 64 KiB reads is one frame", () => {
    const payload = new Uint8Array(1 << 20).map((_, i) => i % 251);
    const stream = encodeFrame(FRAME.STDIN_DATA, payload);
    const reader = new FrameReader();
    const frames = [];
    for (let at = 0; at < stream.byteLength; at += 65_536) frames.push(...reader.push(stream.subarray(at, at + 65_536)));
    expect(frames).toHaveLength(1);
    expect(frames[0]!.payload).toEqual(payload);
  });

  test("a number frame too short is an error, not a zero", () => {
    expect(() => splitU32(new Uint8Array([1, 2]))).toThrow("too short");
  });
});

describe("daemon socket path", () => {
  test("the socket lives in the data directory", () => {
    expect(socketPath("/home/u/.local/share/cachet")).toBe("/home/u/.local/share/cachet/daemon.sock");
  });

  test("a path past the platform's sun_path limit does not fit", () => {
    expect(socketPathFits(`/${"a".repeat(SOCKET_PATH_MAX - 1)}`)).toBe(true);
    expect(socketPathFits(`/${"a".repeat(SOCKET_PATH_MAX)}`)).toBe(false);
  });
});
