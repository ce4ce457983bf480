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
  /** Nothing more is sent: the socket closed (either side), or refused a write (see the constructor's failedWriteStops). */
  closed = false;
  /** onEnd was called. */
  private ended = false;

  /**
   * @param socket the connected socket
   * @param onFrame called with each complete frame, in order
   * @param onEnd called once, when the socket closed
   * @param failedWriteStops a write the socket refuses (the other side gone) stops all sending at once; onEnd still
   *   waits for the socket's close, which comes after every frame the other side sent before it left
   */
  constructor(
    private readonly socket: Socket<unknown>,
    private readonly onFrame: (frame: Frame) => void,
    private readonly onEnd: () => void,
    private readonly failedWriteStops = false,
  ) {}

  /** Sends `frame` after every frame sent before it; dropped once the socket closed. */
  send(frame: Uint8Array): void {
    if (this.closed) return;
    if (this.queue.length > 0) {
      this.queue.push(frame);
      return;
    }
    const wrote = this.socket.write(frame);
    // -1: the other side is gone (EPIPE), and nothing more goes out. Its end is not said yet: the frames it sent
    // before it left may still wait unread (a client that forwarded a signal, then exited, while the daemon was
    // stopped: the woken daemon wrote before its loop read the signal, and ended the turn as if its client were
    // killed, leaving its ledger row in flight). The loop reads them, then the close, at its next turn (a command
    // gives it one every 10 ms, src/run/consume.ts).
    // Not for a client: it may still hold, unread in the chunk at hand, the frames the server sent before it closed.
    if (wrote < 0 && this.failedWriteStops) return this.stopSending();
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
    if (this.ended) return;
    this.ended = true;
    this.stopSending();
    this.onEnd();
  }

  /** Drops what waits to be sent and everything sent from now on; what waited for it to go out goes on. */
  private stopSending(): void {
    this.closed = true;
    this.queue = [];
    for (const done of this.drained.splice(0)) done();
  }
}
