/**
 * The resident daemon's wire format (src/daemon/server.ts ↔ src/daemon/client.ts):
 * frames of one type byte, a big-endian u32 payload length and the payload,
 * over a unix socket at `<data dir>/daemon.sock`. A command's connection
 * opens with a HELLO header (JSON); the server answers DECLINE, or ACCEPT right
 * before it starts the command, then relays the command's stdio and ends with
 * EXIT. A client may CANCEL until it has read ACCEPT: a server never starts a
 * command whose client cancelled or closed. `daemon status` / `daemon stop` open
 * with CONTROL instead.
 */
/** Bumped whenever a frame or the header changes: a client and server that differ never talk. */
export const PROTOCOL_VERSION = 6;

/**
 * Most bytes of a unix socket path the platform's `sockaddr_un.sun_path`
 * holds, its terminating NUL excluded: 107 on Linux (108-byte field), 103 on
 * macOS and the BSDs (104). See unix(7) and macOS unix(4).
 */
export const SOCKET_PATH_MAX = process.platform === "linux" ? 107 : 103;

/** Frame types. Client → server: HELLO, CONTROL, STDIN_DATA, STDIN_END, STDOUT_ACK, SIGNAL, STDIN_KIND, CANCEL. Server → client: the rest. */
export const FRAME = {
  /** Client: the command's header (JSON {@link Hello}). */
  HELLO: 1,
  /** Client: a control request (JSON {@link Control}). */
  CONTROL: 2,
  /** Client: stdin bytes, sent only under credit the server gave. */
  STDIN_DATA: 3,
  /** Client: stdin ended (empty payload), or failed (payload: the error's JSON {code, message}). */
  STDIN_END: 4,
  /** Client: a STDOUT frame was written (u32 seq), or failed (u32 seq + JSON {code, message}). */
  STDOUT_ACK: 5,
  /** Client: a signal reached the client (payload: its name, e.g. "SIGINT"). */
  SIGNAL: 6,
  /** Client: what its stdin is (payload: a {@link StdinKind}), sent once known, after HELLO. */
  STDIN_KIND: 7,
  /** Client: do not start the command (empty payload); sent only before ACCEPT was read, and then the client does not read on. */
  CANCEL: 8,
  /**
   * Client: every STDOUT frame before the STDOUT_SYNC of this id (u32) was handled: each one its writer took at once
   * is acknowledged before this frame; one still unacknowledged waits on a reader that is not taking it.
   */
  STDOUT_SYNCED: 9,
  /** Server: the command is not run here (payload: the reason); the client runs it itself. */
  DECLINE: 16,
  /** Server: stdout bytes (u32 seq + bytes); the client acknowledges each. */
  STDOUT: 17,
  /** Server: stderr bytes. */
  STDERR: 18,
  /** Server: the client may send this many more stdin bytes (u32). */
  STDIN_CREDIT: 19,
  /** Server: stop reading stdin (the command no longer wants it). */
  STDIN_CANCEL: 20,
  /** Server: the command ended (JSON {@link Exit}); the connection closes after it. */
  EXIT: 21,
  /** Server: the answer to a CONTROL request (JSON {@link Status}). */
  CONTROL_REPLY: 22,
  /** Server: the command starts now (empty payload): from here on the client never runs it itself. */
  ACCEPT: 23,
  /** Server: answer STDOUT_SYNCED (u32 id) once the STDOUT frames sent before this one are handled. */
  STDOUT_SYNC: 24,
} as const;

/** What stdin (fd 0) of the client is: decides whether and how the server may read it. */
export type StdinKind = "terminal" | "null" | "pipe" | "file" | "directory";

/** The header a client sends first. */
export interface Hello {
  protocol: number;
  /** The package version and the build's id: a server of another build is stale. */
  version: string;
  build: string;
  /** The command line, without the runtime and script (process.argv.slice(2)). */
  argv: string[];
  /** The client's whole environment. */
  env: Record<string, string>;
  cwd: string;
  /** The client's file mode creation mask: files the command creates get the client's modes. */
  umask: number;
  /** The client's user id (-1 where the platform has none): a daemon serves its own user only. */
  uid: number;
  /** The client's process id: the process running the command as the user sees it, named by a session lease the command holds. */
  pid: number;
  /** Whether fd 0, 1 and 2 are terminals. What fd 0 is follows in a STDIN_KIND frame, right after the hello. */
  terminal: [boolean, boolean, boolean];
}

/** A control request: `daemon status` asks for {@link Status}, `daemon stop` asks the server to exit. */
export interface Control {
  protocol: number;
  op: "status" | "stop";
}

/** The server's answer to a control request. */
export interface Status {
  pid: number;
  /** Since the server started, ms. */
  uptimeMs: number;
  /** Commands run to their end here. */
  served: number;
  /** A command is running now. */
  busy: boolean;
  /** `daemon stop` was asked (or the socket is no longer this server's): it ends once the running command has. */
  stopping: boolean;
  /** A fresh successor is taking over (after an abandoned command, or to restart): turns are declined meanwhile. Absent: false. */
  restarting?: boolean;
  version: string;
  build: string;
}

/** How a command ended: its exit code, or the signal that would have ended the process (the client re-raises it). */
export interface Exit {
  code: number;
  signal?: NodeJS.Signals;
  /**
   * The command ended its process at once (exit(), a watchdog's, or a signal nobody handles), not by returning: the
   * client exits now, as that process would have, and what its stdout and stderr have not taken yet is left to the
   * runtime's exit (a full pipe keeps none of it). Absent: a normal end, whose output the client writes out first.
   */
  abrupt?: boolean;
}

/** The socket's path in the data directory `dataDir` (src/paths.ts statePaths().data; CACHET_HOME relocates it). */
export function socketPath(dataDir: string): string {
  // Not node:path's join: loading it costs ~2 ms, a tenth of a turn's way to its request through the daemon. Nor a
  // regular expression: the client's first one costs ~0.25 ms (the engine's start-up), before its hello.
  let end = dataDir.length;
  while (end > 0 && (dataDir[end - 1] === "/" || dataDir[end - 1] === "\\")) end--;
  return `${dataDir.slice(0, end)}${process.platform === "win32" ? "\\" : "/"}daemon.sock`;
}

/**
 * Where a server writes its pid when it binds the socket at `socket`: read only when the socket connects but nothing
 * answers (a stopped or hung server), to name the process, and when the socket refuses connections, to tell a dead
 * server's files (src/daemon/leftovers.ts removeDeadDaemon). A server removes it when it exits of its own accord.
 */
export function pidPath(socket: string): string {
  return `${socket.slice(0, socket.length - "sock".length)}pid`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Whether `path` fits the platform's unix socket path limit ({@link SOCKET_PATH_MAX} bytes). */
export function socketPathFits(path: string): boolean {
  // Not Buffer.byteLength: the first use of Buffer costs the client ~0.4 ms before its hello.
  return encoder.encode(path).byteLength <= SOCKET_PATH_MAX;
}

/** One frame's bytes: type, u32 length, payload (a string is UTF-8 encoded). */
export function encodeFrame(type: number, payload: Uint8Array | string = new Uint8Array(0)): Uint8Array {
  const body = typeof payload === "string" ? encoder.encode(payload) : payload;
  const frame = new Uint8Array(5 + body.byteLength);
  frame[0] = type;
  new DataView(frame.buffer).setUint32(1, body.byteLength);
  frame.set(body, 5);
  return frame;
}

/** A frame whose payload is JSON. */
export function jsonFrame(type: number, value: unknown): Uint8Array {
  return encodeFrame(type, JSON.stringify(value));
}

/** A frame whose payload starts with a u32 (a sequence number or a byte count), then `rest`. */
export function u32Frame(type: number, n: number, rest: Uint8Array | string = new Uint8Array(0)): Uint8Array {
  const tail = typeof rest === "string" ? encoder.encode(rest) : rest;
  const payload = new Uint8Array(4 + tail.byteLength);
  new DataView(payload.buffer).setUint32(0, n);
  payload.set(tail, 4);
  return encodeFrame(type, payload);
}

/** A decoded frame. */
export interface Frame {
  type: number;
  payload: Uint8Array;
}

/** The u32 at the start of `payload`, and what follows it. */
export function splitU32(payload: Uint8Array): { n: number; rest: Uint8Array } {
  if (payload.byteLength < 4) throw new Error("daemon protocol: a frame too short for its number");
  return { n: new DataView(payload.buffer, payload.byteOffset, 4).getUint32(0), rest: payload.subarray(4) };
}

/** A payload's UTF-8 text. */
export function text(payload: Uint8Array): string {
  return decoder.decode(payload);
}

/** A payload's JSON value (the caller names its type). */
export function json<T>(payload: Uint8Array): T {
  return JSON.parse(decoder.decode(payload)) as T;
}

/**
 * Splits a byte stream into frames, whatever the chunking of its reads:
 * `push` each chunk as it arrives and take the frames it completed. Chunks
 * are joined once per frame, so a large frame arriving in many reads is
 * copied once, not once per read.
 */
export class FrameReader {
  private chunks: Uint8Array[] = [];
  private bytes = 0;
  /** The payload length of the frame being received, once its 5 header bytes are in. */
  private header: { type: number; length: number } | undefined;

  /** Adds `chunk` and returns every frame now complete, in order. The payloads are copies. */
  push(chunk: Uint8Array): Frame[] {
    if (chunk.byteLength > 0) {
      this.chunks.push(chunk.slice());
      this.bytes += chunk.byteLength;
    }
    const frames: Frame[] = [];
    for (;;) {
      if (this.header === undefined) {
        if (this.bytes < 5) break;
        const head = this.take(5);
        this.header = { type: head[0]!, length: new DataView(head.buffer, head.byteOffset, 5).getUint32(1) };
      }
      if (this.bytes < this.header.length) break;
      frames.push({ type: this.header.type, payload: this.take(this.header.length) });
      this.header = undefined;
    }
    return frames;
  }

  /** The first `n` buffered bytes (n ≤ this.bytes), removed from the buffer. */
  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const first = this.chunks[0]!;
      const part = Math.min(first.byteLength, n - filled);
      out.set(first.subarray(0, part), filled);
      filled += part;
      if (part === first.byteLength) this.chunks.shift();
      else this.chunks[0] = first.subarray(part);
    }
    this.bytes -= n;
    return out;
  }
}
