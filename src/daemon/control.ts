/**
 * `daemon status` and `daemon stop` as a client: one CONTROL request on the
 * socket, one CONTROL_REPLY back.
 */
import type { Socket } from "bun";
import { type Control, FRAME, json, jsonFrame, PROTOCOL_VERSION, type Status } from "./protocol.ts";
import { Wire } from "./wire.ts";

/**
 * Asks the daemon at `path` for its status, or to stop. Undefined when no
 * daemon answers there (no socket file, or a stale one).
 * @param op "stop" resolves only once the daemon's process has exited (its side of the connection closed)
 */
export async function ask(path: string, op: Control["op"]): Promise<Status | undefined> {
  let reply: Status | undefined;
  let closed!: () => void;
  const ended = new Promise<void>((resolve) => (closed = resolve));
  let wire: Wire | undefined;
  try {
    await Bun.connect({
      unix: path,
      socket: {
        open(socket) {
          wire = new Wire(
            socket as Socket<unknown>,
            (frame) => {
              if (frame.type === FRAME.CONTROL_REPLY) reply = json<Status>(frame.payload);
            },
            closed,
          );
        },
        data: (_socket, chunk) => wire?.onData(chunk),
        drain: () => wire?.onDrain(),
        close: () => wire?.onClose(),
        error: () => wire?.onClose(),
      },
    });
  } catch {
    return undefined;
  }
  wire?.send(jsonFrame(FRAME.CONTROL, { protocol: PROTOCOL_VERSION, op } satisfies Control));
  await ended;
  return reply;
}
