/**
 * One end of a daemon connection: frames out in order however full the
 * socket is (Bun's sockets write what the kernel takes and buffer nothing,
 * https://bun.sh/docs/api/tcp), frames in as they complete.
 */
import type { Socket } from "bun";
import { type Frame, FrameReader } from "./protocol.ts";

/** A connection's sending and receiving state; the socket handlers call {@link Wire.onData}, {@link Wire.onDrain} and {@link Wire.onClose}. */
export class Wire {
  private queue: Uint8Array[] = [];
  private reader = new FrameReader();
  private drained: (() => void)[] = [];
  /** The socket closed (either side). */
  closed = false;

  /**
   * @param socket the connected socket
   * @param onFrame called with each complete frame, in order
   * @param onEnd called once, when the socket closed
   * @param failedWriteEnds a write the socket refuses (the other side gone) closes the wire at once (calls onEnd)
   */
  constructor(
    private readonly socket: Socket<unknown>,
    private readonly onFrame: (frame: Frame) => void,
    private readonly onEnd: () => void,
    private readonly failedWriteEnds = false,
  ) {}

  /** Sends `frame` after every frame sent before it; dropped once the socket closed. */
  send(frame: Uint8Array): void {
    if (this.closed) return;
    if (this.queue.length > 0) {
      this.queue.push(frame);
      return;
    }
    const wrote = this.socket.write(frame);
    // -1: the other side is gone (EPIPE). Said now, not when the event loop next polls: a command that keeps the loop
    // busy (an answer arriving faster than it is printed) would otherwise run on for its client's death unseen.
    // Not for a client: it may still hold, unread in the chunk at hand, the frames the server sent before it closed.
    if (wrote < 0 && this.failedWriteEnds) return this.onClose();
    if (wrote < frame.byteLength) this.queue.push(frame.subarray(Math.max(0, wrote)));
  }

  /** Bytes waiting for the socket to take them. */
  get backlog(): number {
    let n = 0;
    for (const frame of this.queue) n += frame.byteLength;
    return n;
  }

  /** Resolves once every frame sent so far is in the kernel's hands (or the socket closed). */
  flushed(): Promise<void> {
    return this.queue.length === 0 || this.closed ? Promise.resolve() : new Promise((resolve) => this.drained.push(resolve));
  }

  /** Closes the socket after what was sent went out. */
  async end(): Promise<void> {
    await this.flushed();
    if (!this.closed) this.socket.end();
  }

  /** The socket's `data` handler. */
  onData(chunk: Uint8Array): void {
    for (const frame of this.reader.push(chunk)) this.onFrame(frame);
  }

  /** The socket's `drain` handler: sends what the socket did not take. */
  onDrain(): void {
    while (this.queue.length > 0) {
      const frame = this.queue[0]!;
      const wrote = this.socket.write(frame);
      if (wrote < frame.byteLength) {
        this.queue[0] = frame.subarray(Math.max(0, wrote));
        return;
      }
      this.queue.shift();
    }
    for (const done of this.drained.splice(0)) done();
  }

  /** The socket's `close` (and `error`) handler. */
  onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    for (const done of this.drained.splice(0)) done();
    this.onEnd();
  }
}
