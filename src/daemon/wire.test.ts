import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { encodeFrame, FRAME, type Frame, text } from "./protocol.ts";
import { Wire } from "./wire.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A daemon's end of a connection (a Wire whose refused write stops it sending) and its client's raw socket, both
 * open. What the server's wire received is in `seen`: each frame's type and text, then "end".
 */
async function connected() {
  const dir = mkdtempSync(join(tmpdir(), "cachet-wire-"));
  dirs.push(dir);
  const path = join(dir, "s.sock");
  const seen: string[] = [];
  let ended!: () => void;
  const end = new Promise<void>((resolve) => (ended = resolve));
  let server!: (wire: Wire) => void;
  const accepted = new Promise<Wire>((resolve) => (server = resolve));
  const listener = Bun.listen<{ wire?: Wire }>({
    unix: path,
    socket: {
      open(socket) {
        const wire = new Wire(
          socket as Socket<unknown>,
          (frame: Frame) => seen.push(`${frame.type}:${text(frame.payload)}`),
          () => {
            seen.push("end");
            ended();
          },
          true,
        );
        socket.data = { wire };
        server(wire);
      },
      data: (socket, chunk) => socket.data.wire?.onData(chunk),
      drain: (socket) => socket.data.wire?.onDrain(),
      end: (socket) => socket.data.wire?.onClose(),
      close: (socket) => socket.data.wire?.onClose(),
      error: (socket) => socket.data.wire?.onClose(),
    },
  });
  const client = await Bun.connect({ unix: path, socket: { data() {} } });
  const wire = await accepted;
  return { wire, client, seen, end, stop: () => listener.stop(true) };
}

test("a frame the client sent before it closed reaches the server before the end, even when the server's write was refused first", async () => {
  const { wire, client, seen, end, stop } = await connected();
  try {
    // A client that forwarded a signal, then exited, while the daemon was stopped: the daemon, woken, writes (an
    // answer's next piece) before its loop has read the socket, and the write is refused (EPIPE).
    client.write(encodeFrame(FRAME.SIGNAL, "SIGINT"));
    client.terminate();
    wire.send(encodeFrame(FRAME.STDERR, "after the client left"));
    expect(wire.closed).toBe(true);
    await end;
    expect(seen).toEqual([`${FRAME.SIGNAL}:SIGINT`, "end"]);
  } finally {
    stop();
  }
});

test("after a refused write nothing more is sent, and what waited for the socket is released", async () => {
  const { wire, client, seen, end, stop } = await connected();
  try {
    client.terminate();
    wire.send(encodeFrame(FRAME.STDERR, "refused"));
    wire.send(encodeFrame(FRAME.STDERR, "dropped"));
    expect(wire.backlog).toBe(0);
    await wire.flushed();
    await wire.end();
    await end;
    expect(seen).toEqual(["end"]);
  } finally {
    stop();
  }
});
